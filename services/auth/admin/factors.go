package admin

import (
	"errors"
	"net/http"
	"time"

	"github.com/formsservice/formsservice/services/auth/bearer"
	"github.com/formsservice/formsservice/services/auth/passkey"
)

// An account's factors (issue 36): the second factor's state and the passkeys, read through package
// accounts (which reads them through packages mfa and passkey), and a passkey removed as the caller.
// Resetting the second factor is ResetMFA (users.go).

// SecondFactor is an account's authenticator app as the API shows it: whether there is one, since when,
// and how many unused recovery codes remain. Never the secret.
type SecondFactor struct {
	TOTP              bool       `json:"totp"`
	EnrolledAt        *time.Time `json:"enrolled_at,omitempty"`
	RecoveryCodesLeft int        `json:"recovery_codes_left"`
}

// Passkey is one of an account's passkeys: its credential ID, the name its owner gave it, when it was
// added and last used, and whether the authenticator may sync it. Never the public key.
type Passkey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	Synced     bool       `json:"synced"`
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// userFactors is GET /admin/v1/users/{id}/factors: the second factor and the passkeys, oldest first.
func (h *Handler) userFactors(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	u := h.pathUser(w, r)
	if u == nil {
		return
	}
	f, err := h.o.Accounts.Factors(r.Context(), u.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := struct {
		SecondFactor SecondFactor `json:"second_factor"`
		Passkeys     []Passkey    `json:"passkeys"`
	}{SecondFactor{TOTP: f.SecondFactor.TOTP, RecoveryCodesLeft: f.SecondFactor.RecoveryLeft}, []Passkey{}}
	if f.SecondFactor.TOTP {
		out.SecondFactor.EnrolledAt = timeOrNil(f.SecondFactor.Since)
	}
	for _, p := range f.Passkeys {
		out.Passkeys = append(out.Passkeys, Passkey{ID: p.ID, Name: p.Name, CreatedAt: p.Created.UTC(), LastUsedAt: timeOrNil(p.LastUsed), Synced: p.Synced})
	}
	writeJSON(w, http.StatusOK, out)
}

// removePasskey is DELETE /admin/v1/users/{id}/passkeys/{passkey}: 204, or 404 when the account has no
// such passkey.
func (h *Handler) removePasskey(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	u := h.pathUser(w, r)
	if u == nil {
		return
	}
	if _, err := h.operator(p).RemovePasskey(r.Context(), u, segment(r, 3)); errors.Is(err, passkey.ErrNotFound) {
		problem(w, http.StatusNotFound, "The account has no such passkey (removed already?).", nil)
		return
	} else if err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
