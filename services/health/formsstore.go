package health

import (
	"context"
	"errors"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// FormsStore is the forms' store state for forms:readiness (Options.FormsStore): the forms service's
// /readyz reports its process only, so that its pods stay in the Service and answer the documented 502
// with CORS while the store is down or cannot keep forms.durability (D55); /health is where that shows.
// It asks the store as the forms service's own guard does, with a guard of its own: nil when the
// forms take submissions, a short fixed reason (no address) when not.
func FormsStore(g *store.Guard, level func() config.Durability) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := g.Check(ctx); err != nil {
			return err // no answer: the output says how (refused, timed out), the log has the rest
		}
		var u *store.Unmet
		if err := g.Allow(ctx, level()); errors.As(err, &u) {
			return safeError("the store cannot keep forms " + u.Reason())
		} else if err != nil {
			return err
		}
		return nil
	}
}
