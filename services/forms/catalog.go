package forms

import (
	"context"
	"time"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// catalogRecheck is how often the service looks for a reloaded configuration whose declared forms it has
// not published yet (or publishes again after a failure).
const catalogRecheck = time.Second

// publishCatalog writes the declared forms of the configuration in force into the store at the start
// and after every reload (store.PublishCatalog), until ctx ends: the admin API, which the auth service
// serves on the same store without the forms' configuration, reads them there (docs/architecture.md
// D63). A store that does not answer is tried again at the next recheck, and logged once until it
// answers.
func (s *Service) publishCatalog(ctx context.Context) {
	t := time.NewTicker(catalogRecheck)
	defer t.Stop()
	var published *config.Config
	failing := false
	for {
		if cfg := s.cfg.Current(); cfg != nil && cfg != published {
			err := store.PublishCatalog(ctx, s.rdb, cfg.Forms.Declared, s.now())
			switch {
			case err == nil:
				published, failing = cfg, false
			case ctx.Err() == nil && !failing:
				failing = true
				s.log.Warn("forms: the declared forms could not be published for the admin API; trying again", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
