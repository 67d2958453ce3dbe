package accounts

import (
	"context"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/users"
)

// Factors are what an account signs in with besides its password, as an operator sees them: the
// second factor's state (never its secret) and the passkeys (names and times, never their keys).
type Factors struct {
	SecondFactor mfa.Status
	Passkeys     []passkey.Passkey
}

// Factors reads the second factor and the passkeys of userID through the packages that keep them.
func (o *Ops) Factors(ctx context.Context, userID string) (Factors, error) {
	st, err := mfa.NewStore(o.rdb, mfa.Sealer{}, o.now).Status(ctx, userID) // reading the state opens nothing
	if err != nil {
		return Factors{}, err
	}
	keys, err := passkey.NewStore(o.rdb, o.now).List(ctx, userID)
	if err != nil {
		return Factors{}, err
	}
	return Factors{SecondFactor: st, Passkeys: keys}, nil
}

// RemovePasskey removes the passkey id of u, for a person who lost the device or whose key must no
// longer sign in (passkey.removed, detail passkey, with the actor); passkey.ErrNotFound when u has no
// such passkey (nothing is recorded). The account's other passkeys and its sessions stay: a session
// signed in with the removed key ends at its own time, as when the owner removes it.
func (op Operator) RemovePasskey(ctx context.Context, u *users.User, id string) (*passkey.Passkey, error) {
	p, err := passkey.NewStore(op.o.rdb, op.o.now).Remove(ctx, u.ID, id)
	if err != nil {
		return nil, err
	}
	op.record(ctx, audit.PasskeyRemoved, u.ID, map[string]string{"passkey": p.ID})
	return p, nil
}
