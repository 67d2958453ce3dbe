package store

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// A user's side of the grants: the index of the user's grants with their
// sessions (D35), and what ends them all or one session's (the sign-out generation is generations.go's).

// ErrSignedOut is a code refused because its user was signed out everywhere after the sign-in it
// comes from (a session older than a password change, say): the person signs in again.
var ErrSignedOut = errors.New("signed out everywhere since this sign-in")

// ErrSessionEnded is a code refused because the sign-in session that authorized it ended (logout) while
// the request ran: the person signs in again.
var ErrSessionEnded = errors.New("the sign-in session ended")

// Origin is where a code comes from: the sign-in session that authorized it (its ID, see sso.ID) and
// the user's sign-out generation that session saw (Generation).
type Origin struct {
	Session    string
	Generation int64
}

type originKey struct{}

// WithOrigin returns a context whose code writes remember o: logout of the session revokes the grant,
// and a sign-out everywhere since o's generation refuses the code (ErrSignedOut).
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// revokeSubjectScript moves the user to a new generation and reads the index, in one step on the
// user's slot: a code registered after it is refused (its sign-in saw the old generation), one
// registered before is in the list. KEYS: generation, index. ARGV: the generation's TTL.
var revokeSubjectScript = redis.NewScript(nextGenerationLua + `return redis.call('ZRANGE', KEYS[2], 0, -1)`)

// RevokeSubject revokes every family issued to subject (a deleted, disabled or signed-out user, or a
// changed password), including one being issued concurrently: the generation moves on in the same
// step that lists the families, so a code whose sign-in came before is either listed or refused.
func (s *Store) RevokeSubject(ctx context.Context, subject string) (int, error) {
	families, err := revokeSubjectScript.Run(ctx, s.rdb, []string{generationKey(subject), subjectKey(subject)}, ms(s.Generations.lifetime())).StringSlice()
	if err != nil {
		return 0, unavailable(err)
	}
	legacy, err := s.rdb.SMembers(ctx, legacySubjectKey(subject)).Result()
	if err != nil && !redis.HasErrorPrefix(err, "WRONGTYPE") {
		return 0, unavailable(err)
	}
	families = append(families, legacy...)
	if err := s.RevokeFamilies(ctx, families); err != nil {
		return 0, err
	}
	// Only the families revoked leave the index (a failure above leaves them for the retry).
	if len(families) > 0 {
		members := make([]any, len(families))
		for i, f := range families {
			members[i] = f
		}
		_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.ZRem(ctx, subjectKey(subject), members...)
			p.HDel(ctx, sessionsKey(subject), families...)
			p.Del(ctx, legacySubjectKey(subject))
			return nil
		})
		if err != nil {
			return 0, unavailable(err)
		}
	}
	return len(families), nil
}

// endSessionScript marks a sign-in session ended and lists the families of the user's index it started,
// in one step on the user's slot: a code of the session registered after it is refused (registerScript
// reads the mark), one registered before is in the list. KEYS: the family -> session hash, the ended
// sessions. ARGV: the session, when its mark may go (Unix ms), now (Unix ms), the mark's lifetime (ms).
var endSessionScript = redis.NewScript(`
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
local out = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if all[i + 1] == ARGV[1] then out[#out + 1] = all[i] end
end
return out
`)

// EndSession marks the user's sign-in session (its ID) ended and lists every live family it started,
// for the caller to revoke: logout and the account page's "end this session". A code the session's
// requests write from now on is refused (ErrSessionEnded), so an authorize that raced the logout cannot
// leave a grant the logout did not see. The mark lasts lifetime, the longest the session could have
// lived. Calling it again (a retry after a failed revocation) lists the same families.
func (s *Store) EndSession(ctx context.Context, subject, session string, lifetime time.Duration) ([]string, error) {
	if subject == "" || session == "" {
		return nil, nil
	}
	if lifetime < time.Minute {
		lifetime = time.Minute
	}
	now := time.Now()
	fams, err := endSessionScript.Run(ctx, s.rdb, []string{sessionsKey(subject), endedKey(subject)},
		session, now.Add(lifetime).UnixMilli(), now.UnixMilli(), ms(lifetime)).StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(err)
	}
	return fams, nil
}

// moveSessionScript gives the families of one session to another (KEYS: the hash; ARGV: from, to).
var moveSessionScript = redis.NewScript(`
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if all[i + 1] == ARGV[1] then redis.call('HSET', KEYS[1], all[i], ARGV[2]) end
end
return 0
`)

// MoveSession records the families the session from started as started in the session to (a session
// replaced at a second sign-in step: logging out of the new one ends the earlier one's grants too).
func (s *Store) MoveSession(ctx context.Context, subject, from, to string) error {
	if subject == "" || from == "" || to == "" {
		return nil
	}
	if err := moveSessionScript.Run(ctx, s.rdb, []string{sessionsKey(subject)}, from, to).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return unavailable(err)
	}
	return nil
}

// SubjectFamilies is how many families the user's index holds (tests and diagnostics).
func (s *Store) SubjectFamilies(ctx context.Context, subject string) (int64, error) {
	n, err := s.rdb.ZCard(ctx, subjectKey(subject)).Result()
	if err != nil {
		return 0, unavailable(err)
	}
	return n, nil
}

// FamilyRevoked reports whether the family is revoked (tests and diagnostics).
func (s *Store) FamilyRevoked(ctx context.Context, family string) (bool, error) {
	n, err := s.rdb.Exists(ctx, revokedKey(family)).Result()
	if err != nil {
		return false, unavailable(err)
	}
	return n == 1, nil
}
