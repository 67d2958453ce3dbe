package signin

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
)

// The second step's audit events (package audit; docs/auth.md "Audit trail"): its codes, and a second
// factor a client required. Each names the user and client by ID (the request's address and browser
// come from the context), never a code.

// codeFailed records a refused code (reason: wrong_code, replayed_code, wrong_recovery_code) and, when
// it used up budgets, the lockout.
func (h *Handler) codeFailed(ctx context.Context, u *users.User, cl *realm.Client, reason string, usedUp []string, wait time.Duration) {
	h.audit.Record(ctx, audit.Event{Kind: audit.SecondFactor, Outcome: audit.Failure, Reason: reason, User: u.ID, Client: cl.GetID()})
	if len(usedUp) > 0 {
		h.audit.Record(ctx, audit.Event{Kind: audit.Lockout, Outcome: audit.Failure, Reason: strings.Join(usedUp, ","), User: u.ID,
			Client: cl.GetID(), Detail: map[string]string{"step": "code", "retryAfter": strconv.Itoa(int(wait / time.Second))}})
	}
}

// codeThrottled records a code refused before it was checked.
func (h *Handler) codeThrottled(ctx context.Context, u *users.User, cl *realm.Client, r *throttle.Refusal) {
	h.audit.Record(ctx, audit.Event{Kind: audit.SecondFactor, Outcome: audit.Failure, Reason: "throttled", User: u.ID, Client: cl.GetID(),
		Detail: signon.RefusalDetail(r)})
}

// codeAccepted records the second step passed: an app's code, or a recovery code spent (with how many
// are left, so that a person or an operator sees them running out). It returns how many are left after
// a recovery code, -1 after an app's code or when the count could not be read.
func (h *Handler) codeAccepted(ctx context.Context, u *users.User, cl *realm.Client, recovery bool, amr []string) int {
	if !recovery {
		h.audit.Record(ctx, audit.Event{Kind: audit.SecondFactor, Outcome: audit.Success, User: u.ID, Client: cl.GetID(),
			Detail: map[string]string{"method": "totp", "amr": strings.Join(amr, " ")}})
		return -1
	}
	d, left := map[string]string{"amr": strings.Join(amr, " ")}, -1
	if st, err := h.mfa.Status(ctx, u.ID); err == nil {
		d["left"], left = strconv.Itoa(st.RecoveryLeft), st.RecoveryLeft
	}
	h.audit.Record(ctx, audit.Event{Kind: audit.RecoveryCodeUsed, Outcome: audit.Success, User: u.ID, Client: cl.GetID(), Detail: d})
	return left
}

// mfaRequired records a sign-in that lacked the second factor its client asks for: reason not_enrolled,
// step_up or prompt_none.
func (h *Handler) mfaRequired(ctx context.Context, u *users.User, cl *realm.Client, reason string) {
	h.audit.Record(ctx, audit.Event{Kind: audit.MFARequired, Outcome: audit.Failure, Reason: reason, User: u.ID, Client: cl.GetID()})
}
