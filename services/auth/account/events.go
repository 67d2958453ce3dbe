package account

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/users"
)

// The account pages' audit events (package audit; docs/auth.md "Audit trail"): what people do on their
// account page and their passkeys page. Each names the user and client by ID (the request's address and
// browser come from the context), never a code or a password.

// accountEvent records an action on the account page, done by the signed-in person (the client is the
// account page's own).
func (h *Handler) accountEvent(ctx context.Context, kind audit.Kind, u *users.User, detail map[string]string) {
	h.audit.Record(ctx, audit.Event{Kind: kind, Outcome: audit.Success, User: u.ID, Client: realm.AccountClientID, Detail: detail})
}

// accountRefused records an account-page action refused for its password: reason wrong_password or
// throttled (the budget and the wait in the detail), and a lockout when the wrong password used up
// budgets; invalid for a new password outside the policy.
func (h *Handler) accountRefused(ctx context.Context, kind audit.Kind, u *users.User, check passwordCheck) {
	e := audit.Event{Kind: kind, Outcome: audit.Failure, Reason: check.reason, User: u.ID, Client: realm.AccountClientID}
	if check.refusal != nil {
		e.Detail = signon.RefusalDetail(check.refusal)
	}
	h.audit.Record(ctx, e)
	if len(check.usedUp) > 0 {
		h.audit.Record(ctx, audit.Event{Kind: audit.Lockout, Outcome: audit.Failure, Reason: strings.Join(check.usedUp, ","), User: u.ID,
			Client: realm.AccountClientID, Detail: map[string]string{"step": "account", "retryAfter": strconv.Itoa(int(check.wait / time.Second))}})
	}
}

// passkeyEvent records an audit event of the passkeys page: a passkey added (or refused, with the
// reason), renamed, removed. Identifiers and a closed vocabulary of reasons only, never a secret.
func (h *Handler) passkeyEvent(ctx context.Context, kind audit.Kind, outcome audit.Outcome, reason, userID string, detail map[string]string) {
	h.audit.Record(ctx, audit.Event{Kind: kind, Outcome: outcome, Reason: reason, User: userID, Detail: detail})
}
