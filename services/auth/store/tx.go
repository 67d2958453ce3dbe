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

	"github.com/formsservice/formsservice/services/auth/throttle"
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
	now := time.Now()
	maxFamilies := s.lifetimes().MaxFamilies
	if maxFamilies <= 0 {
		maxFamilies = DefaultMaxFamilies
	}
	origin, _ := ctx.Value(originKey{}).(Origin)
	var regArgs [][]any
	var regKeys [][]string
	if !u.end.IsZero() {
		for _, sub := range u.subjects {
			mode, sid, gen := "move", "", ""
			if u.started {
				mode, sid, gen = "start", origin.Session, strconv.FormatInt(origin.Generation, 10)
			}
			regKeys = append(regKeys, []string{subjectKey(sub), sessionsKey(sub), generationKey(sub), endedKey(sub)})
			regArgs = append(regArgs, []any{u.family, u.end.UnixMilli(), now.UnixMilli(), maxFamilies, ms(marker), mode, sid, gen})
		}
	}
	// A single server runs the unit and its registrations as one script; anything else (a Cluster) the
	// family's script and each user's in one pipeline (D38). On a single server the unit of a code
	// exchange (D43) or a refresh (D45) counts its user's rate limit first.
	_, single := s.rdb.(*redis.Client)
	var rate *UnitRate
	if single && (u.claim == "code" || u.claim == "refresh") {
		rate = takeUnitRate(ctx)
	}
	var regOut [][]any
	var rateRefused *RateRefusal
	run := func() error {
		regOut = regOut[:0]
		rateRefused = nil
		if single && (len(regKeys) > 0 || rate != nil) {
			allKeys := slices.Clone(keys)
			allArgs := append([]any{len(keys), len(args), 0}, args...)
			if rate != nil {
				allKeys = append(allKeys, rate.Key())
				allArgs = append(allArgs, rate.RateArgs()...)
				allArgs[2] = 1
			}
			for i := range regKeys {
				allKeys = append(allKeys, regKeys[i]...)
				allArgs = append(allArgs, regArgs[i]...)
			}
			out, err := unitScript.EvalSha(ctx, s.rdb, allKeys, allArgs...).Slice()
			if err != nil {
				return err
			}
			if len(out) == 2 && out[0] == "rate" {
				pttl, _ := out[1].(int64)
				rateRefused = &RateRefusal{Wait: throttle.RefusedWait(pttl)}
				return nil
			}
			res = redis.NewCmd(ctx)
			if len(out) > 0 {
				res.SetVal(out[0])
			}
			for _, o := range out[1:] {
				v, _ := o.([]any)
				regOut = append(regOut, v)
			}
			return nil
		}
		var regs []*redis.Cmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			res = commitScript.EvalSha(ctx, p, keys, args...)
			for i := range regKeys {
				regs = append(regs, registerScript.EvalSha(ctx, p, regKeys[i], regArgs[i]...))
			}
			return nil
		})
		for _, reg := range regs {
			v, _ := reg.Slice()
			regOut = append(regOut, v)
		}
		return err
	}
	err := run()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		err = commitScript.Load(ctx, s.rdb).Err()
		if err == nil {
			err = registerScript.Load(ctx, s.rdb).Err()
		}
		if err == nil {
			err = unitScript.Load(ctx, s.rdb).Err()
		}
		if err == nil {
			err = run()
		}
	}
	if err != nil {
		return unavailable(err)
	}
	if rateRefused != nil {
		return rateRefused // nothing written
	}
	var refused error
	for _, out := range regOut {
		if len(out) == 0 {
			continue
		}
		switch n, _ := out[0].(int64); n {
		case -1:
			refused = ErrSignedOut
		case -2:
			refused = ErrSessionEnded
		}
		var evicted []string
		for _, f := range out[1:] {
			if f, ok := f.(string); ok && validFamily(f) {
				evicted = append(evicted, f)
			}
		}
		s.deleteFamilies(ctx, evicted)
	}
	if refused != nil {
		// The user was signed out everywhere after this sign-in, or the session ended meanwhile: the code
		// was written beside the refusal, and is revoked before anyone is given it.
		if err := s.RevokeFamily(context.WithoutCancel(ctx), u.family); err != nil {
			return err
		}
		return refused
	}
	switch v, _ := res.Text(); v {
	case "ok":
		u.checkedPKCE(ctx)
		return nil
	case "missing":
		return fosite.ErrNotFound
	case "reused":
		s.onReplay(ctx, u.claim, u.family)
	}
	return ErrReplay // reused, or the family was revoked before
}

// registerScript keeps a family in its user's index (KEYS: the index, a sorted set scored by each
// family's end; the family -> sign-in session hash; the user's sign-out generation; the user's ended
// sessions). ARGV: family, end (Unix ms), now, the bound, the keys' TTL, mode, session, generation.
//
// mode "start" (the code was written): refused with -1 when the user's generation is no longer the one
// the sign-in saw (the user was signed out everywhere since), with -2 when its session ended (logout,
// EndSession); else the family joins the index and is remembered with its session. mode "move" (a token was issued): the family's end moves later, if it is
// still in the index (an evicted or revoked one does not come back).
//
// Ended families are pruned; beyond the bound the families that end first go, never the one being
// written: an unused code or an access token about to expire long before a refresh token in use. Their
// IDs follow the status in the reply, for their records to be deleted.
var registerScript = redis.NewScript(registerLua)

const registerLua = `
local fam, score, now, bound = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if ARGV[6] == 'start' then
  if (redis.call('GET', KEYS[3]) or '0') ~= ARGV[8] then return {-1} end
  if ARGV[7] ~= '' and redis.call('ZSCORE', KEYS[4], ARGV[7]) then return {-2} end
  redis.call('ZADD', KEYS[1], score, fam)
  if ARGV[7] ~= '' then redis.call('HSET', KEYS[2], fam, ARGV[7]) end
elseif not redis.call('ZSCORE', KEYS[1], fam) then
  return {0}
else
  redis.call('ZADD', KEYS[1], 'GT', score, fam)
end
local out = {1}
local ended = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for _, f in ipairs(ended) do
  redis.call('ZREM', KEYS[1], f)
  redis.call('HDEL', KEYS[2], f)
end
local over = redis.call('ZCARD', KEYS[1]) - bound
if over > 0 then
  for _, f in ipairs(redis.call('ZRANGE', KEYS[1], 0, over)) do
    if over > 0 and f ~= fam then
      redis.call('ZREM', KEYS[1], f)
      redis.call('HDEL', KEYS[2], f)
      out[#out + 1] = f
      over = over - 1
    end
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[5]) end
return out
`

// unitScript is commitScript and one registerScript per user in one call, for a single Redis server,
// where a script may name keys of any slot (on a Cluster the family's slot and the user's differ: two
// scripts in one pipeline, as before; D38), after the rate limits the unit counts (a code exchange's
// per-user one, D43). KEYS: the commit's, the rate limits' counters, then four per user. ARGV[1]: how
// many of KEYS and ARGV[2]: how many of ARGV (after the first three) are the commit's, ARGV[3]: how many
// rate limits; then the commit's ARGV, two per rate limit (throttle.RateLua), eight per user. A rate
// limit at its limit stops the unit before anything is counted or written: the reply is {'rate', pttl}.
// Otherwise each part runs as it would alone (the registration whatever the commit answered), and the
// reply is the commit's answer followed by each registration's.
var unitScript = redis.NewScript(throttle.RateLua + `
local function commit(KEYS, ARGV)
` + commitLua + `
end
local function register(KEYS, ARGV)
` + registerLua + `
end
local nk, na, nr = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local ck, ca = {}, {}
for i = 1, nk do ck[i] = KEYS[i] end
for i = 1, na do ca[i] = ARGV[3 + i] end
if nr > 0 then
  local rk, ra = {}, {}
  for i = 1, nr do
    rk[i] = KEYS[nk + i]
    ra[2*i - 1], ra[2*i] = ARGV[3 + na + 2*i - 1], ARGV[3 + na + 2*i]
  end
  local refused = count_rates(rk, ra)
  if refused then return {'rate', refused[2]} end
end
local out = {commit(ck, ca)}
local k, a = nk + nr, 3 + na + 2*nr
while k < #KEYS do
  out[#out + 1] = register({KEYS[k+1], KEYS[k+2], KEYS[k+3], KEYS[k+4]}, {ARGV[a+1], ARGV[a+2], ARGV[a+3], ARGV[a+4], ARGV[a+5], ARGV[a+6], ARGV[a+7], ARGV[a+8]})
  k, a = k + 4, a + 8
end
return out
`)

// deleteFamilies deletes every record of families evicted from their user's index by the bound
// (Lifetimes.MaxFamilies), so that no family escapes the index (one not in it could not be revoked with
// its user): every token of them is then unknown, and they leave nothing behind (a request in flight
// finds its code or refresh token missing). The code's PKCE and OpenID Connect records go with it.
func (s *Store) deleteFamilies(ctx context.Context, families []string) {
	if len(families) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, f := range families {
			p.Del(ctx, familyKeys(f)...)
		}
		return nil
	})
}

// familyKeys are every key a family holds but its revocation marker.
func familyKeys(f string) []string {
	return []string{currentKey(f, "code"), currentKey(f, "pkce"), currentKey(f, "oidc"), currentKey(f, "at"), currentKey(f, "rt"), rotatedKey(f)}
}

// UnitRate is a rate limit that the unit of a code exchange (D43) or a refresh (D45) counts before it
// writes anything, on a single server (CountsRatesInUnit): its user's per-user limit, one round trip
// fewer than a call of its own. On a Cluster the counter's slot is not the family's, and the caller
// counts it as before.
type UnitRate = throttle.Rate

// RateRefusal is the unit's answer when its rate limit is at its limit: nothing was counted or
// written (the code or refresh token is not used), and Wait is what throttle.Limiter.Allow would have
// answered.
type RateRefusal struct{ Wait time.Duration }

func (e *RateRefusal) Error() string { return "rate limited for " + e.Wait.String() }

// CountsRatesInUnit is whether the unit of a code exchange or a refresh can count a rate limit
// (WithUnitRate): on a single server (standalone, or Sentinel's master), where a script may name keys
// of any slot.
func (s *Store) CountsRatesInUnit() bool {
	_, single := s.rdb.(*redis.Client)
	return single
}

// WithUnitRate has the unit of the code exchange or refresh in ctx (a token request's: WithRequestMemo)
// count r first, once. It does nothing for a rate limit that counts nothing or outside a token request.
func WithUnitRate(ctx context.Context, r UnitRate) {
	if m := memoOf(ctx); m != nil && r.Counts() {
		m.mu.Lock()
		m.rate = &r
		m.mu.Unlock()
	}
}

// takeUnitRate is the rate limit WithUnitRate left in ctx's memo (nil: none), taken once.
func takeUnitRate(ctx context.Context) *UnitRate {
	m := memoOf(ctx)
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rate
	m.rate = nil
	return r
}

// checkedPKCE notes, after u committed, that the PKCE challenge u marked checked owes nothing more.
func (u *unit) checkedPKCE(ctx context.Context) {
	m := memoOf(ctx)
	if m == nil {
		return
	}
	for _, w := range u.ops {
		if w.kind == "check" {
			m.mu.Lock()
			if m.pkcePending[u.family] == w.value {
				delete(m.pkcePending, u.family)
			}
			m.mu.Unlock()
		}
	}
}
