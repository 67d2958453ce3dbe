package accounts

import (
	"context"
	"fmt"

	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/users"
)

// Account recovery and unclaimed accounts (docs/security.md "Account pre-hijacking", D51). Someone may
// sign up with an address that is not theirs and add a way in before its owner ever hears of the
// account. An unverified account therefore gets no credential but its password (the account pages refuse
// passkeys and second factors until the address is verified), and the two doors of the address's owner
// close whatever the squatter could have left behind: a password reset of an unverified account removes
// every other credential (RemoveFactors), and the verification link's page deletes an account its reader
// did not make (DeleteUnclaimed).

// Removed says what RemoveFactors removed, for the owner's page and mail.
type Removed struct {
	Passkeys     int  // passkeys deleted
	SecondFactor bool // an authenticator app (with its recovery codes) was set up and is gone
}

// Any reports whether anything was removed.
func (r Removed) Any() bool { return r.Passkeys > 0 || r.SecondFactor }

// RemoveFactors removes every credential of the user but the password: its passkeys, its second factor
// with the recovery codes, and a set-up of one that was under way.
func (o *Ops) RemoveFactors(ctx context.Context, userID string) (Removed, error) {
	var r Removed
	keys := passkey.NewStore(o.rdb, o.now)
	list, err := keys.List(ctx, userID)
	if err != nil {
		return r, err
	}
	if len(list) > 0 {
		if err := keys.RemoveAll(ctx, userID); err != nil {
			return r, err
		}
		r.Passkeys = len(list)
	}
	factors := mfa.NewStore(o.rdb, mfa.Sealer{}, o.now) // no secret is read: no sealing key needed
	on, err := factors.Enrolled(ctx, userID)
	if err != nil {
		return r, err
	}
	if err := factors.Forget(ctx, userID); err != nil {
		return r, err
	}
	r.SecondFactor = on
	return r, nil
}

// DeleteUnclaimed deletes u when it is still an account made on the sign-up form whose address was never
// verified — what the address's owner asks for from the verification link's page ("I did not make this
// account") — and everything it holds: grants, sessions, passkeys, the second factor. It reports false
// when the account was verified (or deleted) meanwhile and so is not the squatter's any more.
func (o *Ops) DeleteUnclaimed(ctx context.Context, u *users.User) (bool, error) {
	deleted, err := o.users.DeleteUnverified(ctx, u)
	if err != nil || !deleted {
		return deleted, err
	}
	if _, _, err := o.SignOutEverywhere(ctx, u.ID); err != nil {
		return true, fmt.Errorf("accounts: %s deleted, its grants not revoked (they stop working with the account): %w", u.ID, err)
	}
	if _, err := o.RemoveFactors(ctx, u.ID); err != nil {
		return true, fmt.Errorf("accounts: %s deleted, its passkeys and second factor not removed (they sign nobody in): %w", u.ID, err)
	}
	return true, nil
}
