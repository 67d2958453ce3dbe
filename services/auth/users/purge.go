package users

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Never-verified accounts (docs/auth.md "E-mail verification", docs/architecture.md D37): someone can
// sign up with an address that is not theirs and so hold it; its owner, who cannot verify for the
// squatter, gets "taken". Unverified lists, and DeleteUnverified deletes, the accounts made on the
// sign-up form whose address was never verified, created before a cutoff the caller computes from its
// own clock, so that the address is free again. Operator-made accounts (and those from before the
// sign-up mark) are never touched.

// deleteUnverifiedScript deletes the user KEYS[1] only while it is still unverified and self-made (a
// link followed between the listing and the purge wins).
var deleteUnverifiedScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'signup') ~= '1' or redis.call('HGET', KEYS[1], 'verified') == '1' then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)

// Unverified calls fn for every self-made account whose address is not verified and that was created
// before cutoff.
func (s *Store) Unverified(ctx context.Context, cutoff time.Time, fn func(*User) error) error {
	return s.List(ctx, func(u *User) error {
		if !u.SelfSignup || u.EmailVerified || !u.CreatedAt.Before(cutoff) {
			return nil
		}
		return fn(u)
	})
}

// DeleteUnverified deletes u if it is still a self-made account with an unverified address: the record
// first, then the address index (as Delete). It reports whether it deleted; false when the address was
// verified (or the account deleted) meanwhile.
func (s *Store) DeleteUnverified(ctx context.Context, u *User) (bool, error) {
	n, err := deleteUnverifiedScript.Run(ctx, s.rdb, []string{userKey(u.ID)}).Int()
	if err != nil {
		return false, unavailable(err)
	}
	if n == 0 {
		return false, nil
	}
	if err := unindexScript.Run(ctx, s.rdb, []string{emailKey(u.Email)}, u.ID).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return true, unavailable(err)
	}
	return true, nil
}
