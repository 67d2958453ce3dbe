package store

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/ory/fosite"
	"github.com/redis/go-redis/v9"
)

// Writes go through units of work. fosite brackets the steps that must not half-happen with BeginTX and
// Commit (exchanging a code: use the code, store the access and refresh tokens; a refresh: retire the old
// token, store the new ones; a detected reuse: delete and revoke), and the service brackets issuing a code
// (the code, its PKCE and its OpenID Connect session) the same way. Every write of a unit belongs to one
// family, so the whole unit is one Lua script on one Redis Cluster slot: it checks the claim (the code or
// refresh token is unused and the family not revoked) before writing anything, then writes everything,
// atomically and in one round trip. A write outside a unit is a unit of its own.

type txKey struct{}

// op is one write: claim marks a code or refresh token used (failing the unit if it was used already),
// set writes a record, del removes one, revoke marks the family revoked.
type op struct {
	kind  string // claim, set, del, revoke
	key   string
	value string
	ttl   string // milliseconds, or "keep" (keep the key's expiry)
}

// unit is the buffered writes of one transaction.
type unit struct {
	mu       sync.Mutex
	family   string
	ops      []op
	claim    string   // "code" or "refresh" when the unit claims one
	subjects []string // users to register the family with (another slot: pipelined beside the script)
	err      error
}

// BeginTX starts a unit of work (fosite's storage.Transactional).
func (s *Store) BeginTX(ctx context.Context) (context.Context, error) {
	return context.WithValue(ctx, txKey{}, &unit{}), nil
}

// Commit applies the unit's writes atomically.
func (s *Store) Commit(ctx context.Context) error {
	u, _ := ctx.Value(txKey{}).(*unit)
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	defer u.reset()
	if u.err != nil {
		return u.err
	}
	return s.apply(ctx, u)
}

// Rollback discards the unit's writes.
func (s *Store) Rollback(ctx context.Context) error {
	if u, _ := ctx.Value(txKey{}).(*unit); u != nil {
		u.mu.Lock()
		u.reset()
		u.mu.Unlock()
	}
	return nil
}

func (u *unit) reset() { u.family, u.ops, u.claim, u.subjects, u.err = "", nil, "", nil, nil }

// writeAll adds several writes of one family to the unit in ctx (or applies them at once, as one unit).
func (s *Store) writeAll(ctx context.Context, family, claim string, ws ...op) error {
	u, _ := ctx.Value(txKey{}).(*unit)
	if u == nil {
		u = &unit{}
		for i, w := range ws {
			c := ""
			if i == 0 {
				c = claim
			}
			u.add(family, w, c, "")
		}
		return s.apply(ctx, u)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for i, w := range ws {
		c := ""
		if i == 0 {
			c = claim
		}
		u.add(family, w, c, "")
	}
	return nil
}

// write adds w to the unit in ctx, or applies it at once when there is none.
func (s *Store) write(ctx context.Context, family string, w op, claim, subject string) error {
	u, _ := ctx.Value(txKey{}).(*unit)
	if u == nil {
		u = &unit{}
		u.add(family, w, claim, subject)
		return s.apply(ctx, u)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.add(family, w, claim, subject)
	return nil
}

func (u *unit) add(family string, w op, claim, subject string) {
	if u.family == "" {
		u.family = family
	} else if u.family != family && u.err == nil {
		u.err = errors.New("store: one unit of work touched two token families")
	}
	if claim != "" {
		if u.claim != "" && u.err == nil {
			u.err = errors.New("store: one unit of work claimed two tokens")
		}
		u.claim = claim
	}
	if subject != "" {
		u.subjects = append(u.subjects, subject)
	}
	u.ops = append(u.ops, w)
}

func ms(d time.Duration) string {
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// maxRotatedLua is the last index LTRIM keeps of the rotated list.
const maxRotatedLua = "31" // MaxRotated - 1

// commitScript applies a unit. KEYS[1] is the family's revocation marker, KEYS[i+1] the key of op i;
// ARGV[1] is the marker's TTL, then three arguments per op: kind, value, ttl. Claims are checked before
// anything is written, so a failed unit writes nothing (except revoking the family on a reuse).
var commitScript = redis.NewScript(`
local n = #KEYS - 1
local function split(v)
  if not v then return nil, nil end
  local nl = string.find(v, '\n', 1, true)
  if not nl then return nil, nil end
  return string.sub(v, 1, nl - 1), string.sub(v, nl + 1)
end
for i = 1, n do
  local b = 2 + (i-1)*3
  if ARGV[b] == 'claim' then
    local sig, state = split(redis.call('GET', KEYS[i+1]))
    local revoked = redis.call('EXISTS', KEYS[1]) == 1
    if sig ~= ARGV[b+1] then
      -- not the current one: a rotated refresh token (the next op names the family's rotated list) is reuse
      if ARGV[b+3] == 'rotated' and redis.call('LPOS', KEYS[i+2], ARGV[b+1]) then state = 'U' else return 'missing' end
    end
    if revoked then return 'revoked' end
    if state == 'U' then
      redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
      return 'reused'
    end
  end
end
for i = 1, n do
  local b = 2 + (i-1)*3
  local kind, value, ttl, k = ARGV[b], ARGV[b+1], ARGV[b+2], KEYS[i+1]
  if kind == 'claim' then
    if ttl == 'del' then redis.call('DEL', k) else redis.call('SET', k, value .. '\nU', 'PX', ttl) end
  elseif kind == 'rotated' then
    redis.call('LPUSH', k, value)
    redis.call('LTRIM', k, 0, ` + maxRotatedLua + `)
    redis.call('PEXPIRE', k, ARGV[1])
  elseif kind == 'set' then
    redis.call('SET', k, value, 'PX', ttl)
  elseif kind == 'del' then
    if value == '' or split(redis.call('GET', k)) == value then redis.call('DEL', k) end
  elseif kind == 'revoke' then
    redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
  end
end
return 'ok'
`)

func (s *Store) apply(ctx context.Context, u *unit) error {
	if len(u.ops) == 0 {
		return nil
	}
	marker := s.markerTTL()
	keys := make([]string, 0, len(u.ops)+1)
	args := make([]any, 0, 1+3*len(u.ops))
	keys = append(keys, revokedKey(u.family))
	args = append(args, ms(marker))
	for _, w := range u.ops {
		k := w.key
		if w.kind == "revoke" {
			k = revokedKey(u.family)
		}
		keys = append(keys, k)
		args = append(args, w.kind, w.value, w.ttl)
	}
	var res *redis.Cmd
	var sizes []*redis.IntCmd
	now := time.Now()
	end := now.Add(s.familyTTL())
	run := func() error {
		sizes = sizes[:0]
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			res = commitScript.EvalSha(ctx, p, keys, args...)
			for _, sub := range u.subjects {
				// The user's index: scored by the family's end, pruned of ended families on every write.
				k := subjectKey(sub)
				p.ZAdd(ctx, k, redis.Z{Score: float64(end.UnixMilli()), Member: u.family})
				p.ZRemRangeByScore(ctx, k, "-inf", strconv.FormatInt(now.UnixMilli(), 10))
				sizes = append(sizes, p.ZCard(ctx, k))
				p.PExpire(ctx, k, marker)
			}
			return nil
		})
		return err
	}
	err := run()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err = commitScript.Load(ctx, s.rdb).Err(); err == nil {
			err = run()
		}
	}
	if err != nil {
		return unavailable(err)
	}
	maxFamilies := int64(s.lifetimes().MaxFamilies)
	if maxFamilies <= 0 {
		maxFamilies = DefaultMaxFamilies
	}
	for i, n := range sizes {
		if n.Val() > maxFamilies {
			s.trimSubject(ctx, u.subjects[i], n.Val()-maxFamilies)
		}
	}
	switch v, _ := res.Text(); v {
	case "ok":
		return nil
	case "missing":
		return fosite.ErrNotFound
	case "reused":
		s.onReplay(ctx, u.claim, u.family)
	}
	return ErrReplay // reused, or the family was revoked before
}

// trimSubject ends the user's oldest families beyond the bound (Lifetimes.MaxFamilies), so that the index stays
// bounded and no family escapes it (a family not in the index could not be revoked with its user). Its
// records are deleted, not marked: every token of the family is then unknown, and the family leaves
// nothing behind (a request in flight finds its code or refresh token missing).
func (s *Store) trimSubject(ctx context.Context, subject string, n int64) {
	popped, err := s.rdb.ZPopMin(ctx, subjectKey(subject), n).Result()
	if err != nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, z := range popped {
			if f, ok := z.Member.(string); ok && validFamily(f) {
				p.Del(ctx, currentKey(f, "code"), currentKey(f, "at"), currentKey(f, "rt"), rotatedKey(f))
			}
		}
		return nil
	})
}
