package store

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/ory/fosite"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/throttle"
)

// Applying a unit (tx.go): one script call, or one pipeline on a Cluster, that writes the unit's
// records, registers its family in its users' indexes (D35) and, on a single server, counts its user's
// rate limit first (D43, D45).

func (s *Store) apply(ctx context.Context, u *unit) error {
	if len(u.ops) == 0 {
		return nil
	}
	c := s.prepareUnit(ctx, u)
	err := c.run(ctx)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		err = commitScript.Load(ctx, s.rdb).Err()
		if err == nil {
			err = registerScript.Load(ctx, s.rdb).Err()
		}
		if err == nil {
			err = unitScript.Load(ctx, s.rdb).Err()
		}
		if err == nil {
			err = c.run(ctx)
		}
	}
	if err != nil {
		return unavailable(err)
	}
	if c.rateRefused != nil {
		return c.rateRefused // nothing written
	}
	if refused := s.settleRegistrations(ctx, c.regOut); refused != nil {
		// The user was signed out everywhere after this sign-in, or the session ended meanwhile: the code
		// was written beside the refusal, and is revoked before anyone is given it.
		if err := s.RevokeFamily(context.WithoutCancel(ctx), u.family); err != nil {
			return err
		}
		return refused
	}
	switch v, _ := c.res.Text(); v {
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

// unitCall is a unit's script call, prepared once (its keys and arguments, the registrations of its
// family in its users' indexes, the rate limit it counts) and run again after a NOSCRIPT; it keeps the
// answers of its last run.
type unitCall struct {
	s       *Store
	keys    []string
	args    []any
	regKeys [][]string
	regArgs [][]any
	single  bool
	rate    *UnitRate
	// the answers
	res         *redis.Cmd
	regOut      [][]any
	rateRefused *RateRefusal
}

// prepareUnit builds u's call.
func (s *Store) prepareUnit(ctx context.Context, u *unit) *unitCall {
	marker := s.markerTTL()
	c := &unitCall{s: s, keys: make([]string, 0, len(u.ops)+1), args: make([]any, 0, 1+3*len(u.ops))}
	c.keys = append(c.keys, revokedKey(u.family))
	c.args = append(c.args, ms(marker))
	for _, w := range u.ops {
		k := w.key
		if w.kind == "revoke" {
			k = revokedKey(u.family)
		}
		c.keys = append(c.keys, k)
		c.args = append(c.args, w.kind, w.value, w.ttl)
	}
	now := time.Now()
	maxFamilies := s.lifetimes().MaxFamilies
	if maxFamilies <= 0 {
		maxFamilies = DefaultMaxFamilies
	}
	origin, _ := ctx.Value(originKey{}).(Origin)
	if !u.end.IsZero() {
		for _, sub := range u.subjects {
			mode, sid, gen := "move", "", ""
			if u.started {
				mode, sid, gen = "start", origin.Session, strconv.FormatInt(origin.Generation, 10)
			}
			c.regKeys = append(c.regKeys, []string{subjectKey(sub), sessionsKey(sub), generationKey(sub), endedKey(sub)})
			c.regArgs = append(c.regArgs, []any{u.family, u.end.UnixMilli(), now.UnixMilli(), maxFamilies, ms(marker), mode, sid, gen})
		}
	}
	// A single server runs the unit and its registrations as one script; anything else (a Cluster) the
	// family's script and each user's in one pipeline (D38). On a single server the unit of a code
	// exchange (D43) or a refresh (D45) counts its user's rate limit first.
	_, c.single = s.rdb.(*redis.Client)
	if c.single && (u.claim == "code" || u.claim == "refresh") {
		c.rate = takeUnitRate(ctx)
	}
	return c
}

// run sends the call: one script on a single server when there are registrations or a rate limit,
// else the family's script and each registration in one pipeline.
func (c *unitCall) run(ctx context.Context) error {
	c.regOut = c.regOut[:0]
	c.rateRefused = nil
	if c.single && (len(c.regKeys) > 0 || c.rate != nil) {
		return c.runOneScript(ctx)
	}
	var regs []*redis.Cmd
	_, err := c.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		c.res = commitScript.EvalSha(ctx, p, c.keys, c.args...)
		for i := range c.regKeys {
			regs = append(regs, registerScript.EvalSha(ctx, p, c.regKeys[i], c.regArgs[i]...))
		}
		return nil
	})
	for _, reg := range regs {
		v, _ := reg.Slice()
		c.regOut = append(c.regOut, v)
	}
	return err
}

// runOneScript runs the unit, its rate limit and its registrations as unitScript.
func (c *unitCall) runOneScript(ctx context.Context) error {
	allKeys := slices.Clone(c.keys)
	allArgs := append([]any{len(c.keys), len(c.args), 0}, c.args...)
	if c.rate != nil {
		allKeys = append(allKeys, c.rate.Key())
		allArgs = append(allArgs, c.rate.RateArgs()...)
		allArgs[2] = 1
	}
	for i := range c.regKeys {
		allKeys = append(allKeys, c.regKeys[i]...)
		allArgs = append(allArgs, c.regArgs[i]...)
	}
	out, err := unitScript.EvalSha(ctx, c.s.rdb, allKeys, allArgs...).Slice()
	if err != nil {
		return err
	}
	if len(out) == 2 && out[0] == "rate" {
		pttl, _ := out[1].(int64)
		c.rateRefused = &RateRefusal{Wait: throttle.RefusedWait(pttl)}
		return nil
	}
	c.res = redis.NewCmd(ctx)
	if len(out) > 0 {
		c.res.SetVal(out[0])
	}
	for _, o := range out[1:] {
		v, _ := o.([]any)
		c.regOut = append(c.regOut, v)
	}
	return nil
}

// settleRegistrations deletes the families the users' indexes evicted to stay within their bound, and
// returns the refusal a registration answered: ErrSignedOut (a sign-out everywhere since the sign-in) or
// ErrSessionEnded (the session ended meanwhile).
func (s *Store) settleRegistrations(ctx context.Context, regOut [][]any) error {
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
	return refused
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
