package store

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Generations are the users' sign-out generations: a number per user that a sign-out everywhere (a
// password change, a disabled account, the account page's "every other browser") moves on. A sign-in
// session keeps the one it saw when it started; a code or device cookie of an earlier one is refused.
// It is its own type, not more methods of Store, because the sign-in pages read it with the account
// and the account page moves it without touching any grant.
type Generations struct {
	rdb redis.UniversalClient
	// lifetime is how long a generation is kept after it last moved: longer than every session, grant
	// and device cookie that could have seen the one before.
	lifetime func() time.Duration
}

// nextGenerationLua moves KEYS[1], the user's generation, on and keeps it ARGV[1] ms into local gen:
// the start of every script that moves it (nextGenerationScript, and revokeSubjectScript, which lists
// the user's grants in the same step).
const nextGenerationLua = `
local gen = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
`

var nextGenerationScript = redis.NewScript(nextGenerationLua + `return gen`)

// Of is the user's sign-out generation (0 until the first sign-out everywhere).
func (g Generations) Of(ctx context.Context, subject string) (int64, error) {
	return generationOf(g.rdb.Get(ctx, generationKey(subject)))
}

// Queue queues Of's read in the caller's pipeline p; after p is sent, the function it returns answers
// as Of would (a sign-in reads it with the account, D44).
func (g Generations) Queue(ctx context.Context, p redis.Pipeliner, subject string) func() (int64, error) {
	cmd := p.Get(ctx, generationKey(subject))
	return func() (int64, error) { return generationOf(cmd) }
}

// Next moves subject to a new sign-out generation and returns it, revoking no grant: every sign-in
// session, second step under way and device cookie of an earlier generation is over, and a code of a
// sign-in that saw one is refused. The account page's "sign out of every other browser" ends the other
// sessions' grants itself and gives its own browser a session of the new generation; Store.RevokeSubject
// moves it and revokes every grant.
func (g Generations) Next(ctx context.Context, subject string) (int64, error) {
	gen, err := nextGenerationScript.Run(ctx, g.rdb, []string{generationKey(subject)}, ms(g.lifetime())).Int64()
	if err != nil {
		return 0, unavailable(err)
	}
	return gen, nil
}

func generationOf(cmd *redis.StringCmd) (int64, error) {
	n, err := cmd.Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, unavailable(err)
	}
	return n, nil
}
