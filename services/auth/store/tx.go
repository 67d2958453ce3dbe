package store

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
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
// check marks a code's PKCE challenge checked (failing the unit as a replay if it was checked already:
// D43), set writes a record, del removes one, revoke marks the family revoked.
type op struct {
	kind  string // claim, check, rotated, set, del, revoke
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
	// end is when the latest record the unit writes expires: the family's score in its user's index.
	end time.Time
	// started is true when the unit writes the family's code: the family joins its user's index (with the
	// sign-in session and generation of the context, see WithOrigin); otherwise the index entry is only
	// moved later (a token was issued), never made.
	started bool
	err     error
	// encoded is the last token record the unit encoded and the request it encoded (encode).
	encoded    string
	encodedFor *fosite.Request
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

func (u *unit) reset() {
	u.family, u.ops, u.claim, u.subjects, u.end, u.started, u.err = "", nil, "", nil, time.Time{}, false, nil
	u.encoded, u.encodedFor = "", nil
}

// encode is store.encode for a token record of the unit (u may be nil: no unit). fosite stores the
// access and the refresh token of one response as two sanitized copies of one request (a refresh: the
// same copy twice), back to back: when r holds exactly what the request encoded last holds (the same
// session, by pointer, and equal fields), that encoding is r's too and is not made again (D43).
func (u *unit) encode(r fosite.Requester) (string, error) {
	fr, _ := r.(*fosite.Request)
	if u != nil && fr != nil {
		u.mu.Lock()
		last, v := u.encodedFor, u.encoded
		u.mu.Unlock()
		if last != nil && sameRecord(last, fr) {
			return v, nil
		}
	}
	v, err := encode(r)
	if err == nil && u != nil && fr != nil {
		u.mu.Lock()
		u.encoded, u.encodedFor = v, fr
		u.mu.Unlock()
	}
	return v, err
}

// sameRecord is whether a and b encode alike: every field encode reads is equal, the session the same
// one (a pointer; a session that is not one never counts as the same).
func sameRecord(a, b *fosite.Request) bool {
	sa, sb := reflect.ValueOf(a.Session), reflect.ValueOf(b.Session)
	if sa.Kind() != reflect.Pointer || sb.Kind() != reflect.Pointer || sa.Type() != sb.Type() || sa.Pointer() != sb.Pointer() {
		return false
	}
	return a.ID == b.ID && a.RequestedAt.Equal(b.RequestedAt) && a.RequestedAt.Location() == b.RequestedAt.Location() &&
		a.Client != nil && b.Client != nil && a.Client.GetID() == b.Client.GetID() &&
		slices.Equal(a.RequestedScope, b.RequestedScope) && slices.Equal(a.GrantedScope, b.GrantedScope) &&
		slices.Equal(a.RequestedAudience, b.RequestedAudience) && slices.Equal(a.GrantedAudience, b.GrantedAudience) &&
		maps.EqualFunc(a.Form, b.Form, slices.Equal)
}

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
	return s.writeIndexed(ctx, family, w, claim, subject, time.Time{}, false)
}

// writeIndexed is write for a record that keeps its family in subject's index until end: the code
// (started: the family joins the index) or a token (the family's entry moves to end, if later).
func (s *Store) writeIndexed(ctx context.Context, family string, w op, claim, subject string, end time.Time, started bool) error {
	u, _ := ctx.Value(txKey{}).(*unit)
	if u == nil {
		u = &unit{}
		u.add(family, w, claim, subject)
		u.index(end, started)
		return s.apply(ctx, u)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.add(family, w, claim, subject)
	u.index(end, started)
	return nil
}

func (u *unit) index(end time.Time, started bool) {
	if end.After(u.end) {
		u.end = end
	}
	u.started = u.started || started
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
	if subject != "" && !slices.Contains(u.subjects, subject) {
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
var commitScript = redis.NewScript(commitLua)

const commitLua = `
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
  elseif ARGV[b] == 'check' then
    local sig, state = split(redis.call('GET', KEYS[i+1]))
    if sig ~= ARGV[b+1] then return 'missing' end
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
  elseif kind == 'check' then
    redis.call('SET', k, value .. '\nU', 'KEEPTTL')
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
`
