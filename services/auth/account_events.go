package auth

import (
	"context"

	"github.com/formsservice/formsservice/services/auth/users"
)

// The account journeys' security events: a refused second-factor code, a recovery code spent, and what
// people do on their account page. Each names the user and client by ID, never a code or password.

// mfaFailed records a refused second step: reason is wrong_code, replayed_code, wrong_recovery_code or
// throttled.
func (s *Service) mfaFailed(ctx context.Context, u *users.User, cl *client, reason string) {
	s.log.Warn("second factor refused", "user", u.ID, "client", cl.GetID(), "reason", reason)
}

// recoveryCodeUsed records a sign-in with a recovery code (one fewer left).
func (s *Service) recoveryCodeUsed(ctx context.Context, u *users.User, cl *client) {
	s.log.Info("recovery code used", "user", u.ID, "client", cl.GetID())
}

// accountEvent records an action on the account page: password_changed, totp_enrolled, totp_removed,
// recovery_codes_replaced, session_ended, grant_ended.
func (s *Service) accountEvent(ctx context.Context, what string, u *users.User, detail ...any) {
	s.log.Info("account: "+what, append([]any{"user", u.ID}, detail...)...)
}
