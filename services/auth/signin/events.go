package signin

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
)

// The sign-in's audit events that need nothing of the handler but the recorder (and the second factor's
// store, for the recovery codes left): the second step's codes, a second factor a client required, a
// refused password (package audit; docs/auth.md "Audit trail"). Each names the user and client by ID
// (the request's address and browser come from the context), never a code or a password.
type trail struct {
	audit *audit.Recorder
	mfa   *mfa.Store
}

// codeFailed records a refused code (reason: wrong_code, replayed_code, wrong_recovery_code) and, when
// it used up budgets, the lockout.
func (t trail) codeFailed(ctx context.Context, u *users.User, cl *realm.Client, reason string, usedUp []string, wait time.Duration) {
	t.audit.Record(ctx, audit.Event{Kind: audit.SecondFactor, Outcome: audit.Failure, Reason: reason, User: u.ID, Client: cl.GetID()})
	if len(usedUp) > 0 {
		t.audit.Record(ctx, audit.Event{Kind: audit.Lockout, Outcome: audit.Failure, Reason: strings.Join(usedUp, ","), User: u.ID,
			Client: cl.GetID(), Detail: map[string]string{"step": "code", "retryAfter": strconv.Itoa(int(wait / time.Second))}})
	}
}

// codeThrottled records a code refused before it was checked.
func (t trail) codeThrottled(ctx context.Context, u *users.User, cl *realm.Client, r *throttle.Refusal) {
	t.audit.Record(ctx, audit.Event{Kind: audit.SecondFactor, Outcome: audit.Failure, Reason: "throttled", User: u.ID, Client: cl.GetID(),
		Detail: signon.RefusalDetail(r)})
}

// codeAccepted records the second step passed: an app's code, or a recovery code spent (with how many
// are left, so that a person or an operator sees them running out). It returns how many are left after
// a recovery code, -1 after an app's code or when the count could not be read.
func (t trail) codeAccepted(ctx context.Context, u *users.User, cl *realm.Client, recovery bool, amr []string) int {
	if !recovery {
		t.audit.Record(ctx, audit.Event{Kind: audit.SecondFactor, Outcome: audit.Success, User: u.ID, Client: cl.GetID(),
			Detail: map[string]string{"method": "totp", "amr": strings.Join(amr, " ")}})
		return -1
	}
	d, left := map[string]string{"amr": strings.Join(amr, " ")}, -1
	if st, err := t.mfa.Status(ctx, u.ID); err == nil {
		d["left"], left = strconv.Itoa(st.RecoveryLeft), st.RecoveryLeft
	}
	t.audit.Record(ctx, audit.Event{Kind: audit.RecoveryCodeUsed, Outcome: audit.Success, User: u.ID, Client: cl.GetID(), Detail: d})
	return left
}

// mfaRequired records a sign-in that lacked the second factor its client asks for: reason not_enrolled,
// step_up or prompt_none.
func (t trail) mfaRequired(ctx context.Context, u *users.User, cl *realm.Client, reason string) {
	t.audit.Record(ctx, audit.Event{Kind: audit.MFARequired, Outcome: audit.Failure, Reason: reason, User: u.ID, Client: cl.GetID()})
}

// signinFailure records a refused sign-in with the reason the person is not told.
func (t trail) signinFailure(ctx context.Context, clientID string, u *users.User, err error) {
	reason := "bad_password"
	switch {
	case errors.Is(err, users.ErrUnknownAccount):
		reason = "unknown_account"
	case errors.Is(err, users.ErrDisabled):
		reason = "disabled"
	}
	e := audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, Reason: reason, Client: clientID}
	if u != nil {
		e.User = u.ID
	}
	t.audit.Record(ctx, e)
}
