package auth

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
)

// The account journeys' audit events (package audit; docs/auth.md "Audit trail"): the second step's
// codes, a second factor a client required, and what people do on their account page. Each names the
// user and client by ID (the request's address and browser come from the context), never a code or a
// password.

// codeFailed records a refused code (reason: wrong_code, replayed_code, wrong_recovery_code) and, when
// it used up budgets, the lockout.
func (s *Service) codeFailed(ctx context.Context, u *users.User, cl *client, reason string, usedUp []string, wait time.Duration) {
	s.audit.Record(ctx, audit.Event{Kind: audit.SecondFactor, Outcome: audit.Failure, Reason: reason, User: u.ID, Client: cl.GetID()})
	if len(usedUp) > 0 {
		s.audit.Record(ctx, audit.Event{Kind: audit.Lockout, Outcome: audit.Failure, Reason: strings.Join(usedUp, ","), User: u.ID,
			Client: cl.GetID(), Detail: map[string]string{"step": "code", "retryAfter": strconv.Itoa(int(wait / time.Second))}})
	}
}

// codeThrottled records a code refused before it was checked.
func (s *Service) codeThrottled(ctx context.Context, u *users.User, cl *client, r *throttle.Refusal) {
	s.audit.Record(ctx, audit.Event{Kind: audit.SecondFactor, Outcome: audit.Failure, Reason: "throttled", User: u.ID, Client: cl.GetID(),
		Detail: refusalDetail(r)})
}

// codeAccepted records the second step passed: an app's code, or a recovery code spent (with how many
// are left, so that a person or an operator sees them running out). It returns how many are left after
// a recovery code, -1 after an app's code or when the count could not be read.
func (s *Service) codeAccepted(ctx context.Context, u *users.User, cl *client, recovery bool, amr []string) int {
	if !recovery {
		s.audit.Record(ctx, audit.Event{Kind: audit.SecondFactor, Outcome: audit.Success, User: u.ID, Client: cl.GetID(),
			Detail: map[string]string{"method": "totp", "amr": strings.Join(amr, " ")}})
		return -1
	}
	d, left := map[string]string{"amr": strings.Join(amr, " ")}, -1
	if st, err := s.mfa.Status(ctx, u.ID); err == nil {
		d["left"], left = count(st.RecoveryLeft), st.RecoveryLeft
	}
	s.audit.Record(ctx, audit.Event{Kind: audit.RecoveryCodeUsed, Outcome: audit.Success, User: u.ID, Client: cl.GetID(), Detail: d})
	return left
}

// mfaRequired records a sign-in that lacked the second factor its client asks for: reason not_enrolled,
// step_up or prompt_none.
func (s *Service) mfaRequired(ctx context.Context, u *users.User, cl *client, reason string) {
	s.audit.Record(ctx, audit.Event{Kind: audit.MFARequired, Outcome: audit.Failure, Reason: reason, User: u.ID, Client: cl.GetID()})
}

// accountEvent records an action on the account page, done by the signed-in person (the client is the
// account page's own).
func (s *Service) accountEvent(ctx context.Context, kind audit.Kind, u *users.User, detail map[string]string) {
	s.audit.Record(ctx, audit.Event{Kind: kind, Outcome: audit.Success, User: u.ID, Client: accountClientID, Detail: detail})
}

// accountRefused records an account-page action refused for its password: reason wrong_password or
// throttled (the budget and the wait in the detail), and a lockout when the wrong password used up
// budgets; invalid for a new password outside the policy.
func (s *Service) accountRefused(ctx context.Context, kind audit.Kind, u *users.User, check passwordCheck) {
	e := audit.Event{Kind: kind, Outcome: audit.Failure, Reason: check.reason, User: u.ID, Client: accountClientID}
	if check.refusal != nil {
		e.Detail = refusalDetail(check.refusal)
	}
	s.audit.Record(ctx, e)
	if len(check.usedUp) > 0 {
		s.audit.Record(ctx, audit.Event{Kind: audit.Lockout, Outcome: audit.Failure, Reason: strings.Join(check.usedUp, ","), User: u.ID,
			Client: accountClientID, Detail: map[string]string{"step": "account", "retryAfter": strconv.Itoa(int(check.wait / time.Second))}})
	}
}

func refusalDetail(r *throttle.Refusal) map[string]string {
	state := "slowed"
	if r.Locked {
		state = "locked"
	}
	return map[string]string{"budget": r.Budget, "state": state, "retryAfter": strconv.Itoa(int(r.Wait / time.Second))}
}
