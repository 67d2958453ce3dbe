package store

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// A token request's prefetch (docs/architecture.md D43). Before fosite runs, the token endpoint queues a
// pure read of the records its grant will ask for in the pipeline that counts its per-address rate
// limit: one round trip for both. A refresh reads its refresh token's record; a code exchange its code,
// the family's OpenID Connect record and its PKCE challenge, in one script (all on the family's slot).
// The read writes nothing: a request the rate limit refuses, or one whose client fails to authenticate,
// has burnt no code, checked no challenge and revoked no family.
//
// Only an ordinary answer is kept in the request's memo (the record named, active, its family not
// revoked), and the store's reads answer from it when fosite asks for that signature. Anything else (not
// found, used, revoked, another signature, an error) is not kept: the read fosite asks for then runs
// as it did before the prefetch, with the replay detection (which revokes the family) where and when it
// happened before. A record that changes after the prefetch (a concurrent refresh rotated the token, a
// concurrent exchange used the code) is caught where it was caught before too: by the unit's claim,
// which reads the record again atomically with its writes (tx.go).

// Prefetch is one queued prefetch; Keep puts its answer into the request's memo.
type Prefetch struct {
	s      *Store
	cmd    *redis.Cmd
	script *redis.Script
	kind   string // "rt" or "code"
	sig    string // "family~signature"
	family string
}

// QueueRefresh queues on p the read of the refresh token record sig ("family~signature", as the token
// strategy names it) would read; nil for a signature that names no family.
func (s *Store) QueueRefresh(ctx context.Context, p redis.Pipeliner, sig string) *Prefetch {
	family, rest, ok := Family(sig)
	if !ok {
		return nil
	}
	// currentScript without its two writes (revoke on a used token, mark read): a pure read.
	cmd := currentScript.EvalSha(ctx, p, refreshKeys(family), rest, ms(s.markerTTL()), "0", "0")
	return &Prefetch{s: s, cmd: cmd, script: currentScript, kind: "rt", sig: sig, family: family}
}

// QueueRefreshAndUser is QueueRefresh that also reads, in the same script, the user the refresh
// token's record names: its hash at userKeyPrefix + id + userKeySuffix, so that a refresh needs no
// round trip of its own to re-read its user (D45). Only on a single server, where a script may name a
// key of another slot; elsewhere it is QueueRefresh. PrefetchedUser answers what it read.
func (s *Store) QueueRefreshAndUser(ctx context.Context, p redis.Pipeliner, sig, userKeyPrefix, userKeySuffix string) *Prefetch {
	if !s.CountsRatesInUnit() {
		return s.QueueRefresh(ctx, p, sig)
	}
	family, rest, ok := Family(sig)
	if !ok {
		return nil
	}
	cmd := prefetchRefreshScript.EvalSha(ctx, p, refreshKeys(family), rest, userKeyPrefix, userKeySuffix)
	return &Prefetch{s: s, cmd: cmd, script: prefetchRefreshScript, kind: "rt", sig: sig, family: family}
}

// prefetchRefreshScript is currentScript's pure read of a refresh token (KEYS as there; ARGV[1] the
// token's signature) that also answers, for an active record of a family not revoked, {subject, the
// user's hash}: the subject is the record's first field (A{"sub":"<id>",...), the hash's key ARGV[2] ..
// id .. ARGV[3]. A record that does not start so (one written before D45, a subject with an escaped
// character) answers no user, and the caller reads the user as before.
var prefetchRefreshScript = redis.NewScript(readStateLua + rotatedStateLua + `
if not state then return false end
local revoked = redis.call('EXISTS', KEYS[2])
local user = false
if revoked == 0 and string.sub(state, 1, 1) == 'A' then
  local sub = string.match(state, '^A{"sub":"([^"\\]+)"')
  if sub and #sub <= 64 then user = {sub, redis.call('HGETALL', ARGV[2] .. sub .. ARGV[3])} end
end
return {state, revoked, user}
`)

// QueueCode queues on p the read of the code sig names, with its family's OpenID Connect record and
// PKCE challenge; nil for a signature that names no family.
func (s *Store) QueueCode(ctx context.Context, p redis.Pipeliner, sig string) *Prefetch {
	family, rest, ok := Family(sig)
	if !ok {
		return nil
	}
	cmd := prefetchCodeScript.EvalSha(ctx, p, []string{currentKey(family, "code"), revokedKey(family), currentKey(family, "oidc"), currentKey(family, "pkce")}, rest)
	return &Prefetch{s: s, cmd: cmd, script: prefetchCodeScript, kind: "code", sig: sig, family: family}
}

// prefetchCodeScript reads a code (KEYS[1], if it is the one named by ARGV[1]) with its family's
// revocation flag (KEYS[2]), OpenID Connect record as it is (KEYS[3], "signature\n" + record) and PKCE
// challenge (KEYS[4], if it is the code's). It writes nothing.
var prefetchCodeScript = redis.NewScript(readStateLua + `
if not state then return false end
local pkce = false
local p = redis.call('GET', KEYS[4])
if p then
  local nl = string.find(p, '\n', 1, true)
  if nl and string.sub(p, 1, nl - 1) == ARGV[1] then pkce = string.sub(p, nl + 1) end
end
return {state, redis.call('EXISTS', KEYS[2]), redis.call('GET', KEYS[3]) or '', pkce}
`)

// Keep puts the prefetch's answer into ctx's memo (WithRequestMemo) when it is an ordinary one. p may
// be nil (nothing was queued). A script Redis did not know (NOSCRIPT: a restart, a failover, a new
// Cluster node) is loaded for the next request; this one reads as it would without a prefetch.
func (p *Prefetch) Keep(ctx context.Context) {
	m := memoOf(ctx)
	if p == nil || m == nil {
		return
	}
	res, err := p.cmd.Slice()
	if err != nil {
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			_ = p.script.Load(ctx, p.s.rdb).Err()
		}
		return
	}
	if len(res) < 2 {
		return
	}
	v, _ := res[0].(string)
	revoked, _ := res[1].(int64)
	if revoked != 0 || len(v) < 2 || v[:1] != active {
		return // not ordinary: fosite's read goes to Redis, as before
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fetched[p.kind+":"+p.sig] = v
	if p.kind == "rt" && len(res) == 3 {
		m.keepUser(res[2])
	}
	if p.kind == "code" && len(res) == 4 {
		m.oidc[p.family], _ = res[2].(string)
		if pk, _ := res[3].(string); len(pk) > 1 && pk[:1] == active {
			m.fetched["pkce:"+p.sig] = pk
		}
	}
}

// keepUser keeps the {subject, HGETALL's fields} a refresh's prefetch answered (m.mu held).
func (m *memo) keepUser(v any) {
	u, _ := v.([]any)
	if len(u) != 2 {
		return
	}
	sub, _ := u[0].(string)
	flat, _ := u[1].([]any)
	fields := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		fields[k], _ = flat[i+1].(string)
	}
	m.user, m.userFields = sub, fields
}

// PrefetchedUser takes (once) the fields of user subject's hash that the token request's prefetch read
// (QueueRefreshAndUser): empty when there is no such user; ok is false when the prefetch read none for
// that subject, and the caller reads the user itself.
func (s *Store) PrefetchedUser(ctx context.Context, subject string) (fields map[string]string, ok bool) {
	m := memoOf(ctx)
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fields, ok = m.userFields, m.userFields != nil && m.user == subject && subject != ""
	m.user, m.userFields = "", nil
	return fields, ok
}

// fromPrefetch takes (once) the record a prefetch kept for kind and sig.
func (m *memo) fromPrefetch(kind, sig string) (string, bool) {
	if m == nil {
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.fetched[kind+":"+sig]
	if ok {
		delete(m.fetched, kind+":"+sig)
	}
	return v, ok
}

// SettleChecks writes what a token request that failed still owes: a PKCE challenge it checked from the
// prefetch is marked checked, as the read that checked it would have (right or wrong, a challenge is
// checked once), unless the exchange's unit did. A request refused by its user's rate limit does not
// call it: that request checked a right verifier and stops before its unit, so its code stays usable
// after the wait.
func (s *Store) SettleChecks(ctx context.Context) error {
	m := memoOf(ctx)
	if m == nil {
		return nil
	}
	m.mu.Lock()
	pending := m.pkcePending
	m.pkcePending = map[string]string{}
	m.mu.Unlock()
	var errs []error
	for family, rest := range pending {
		if err := s.markChecked(context.WithoutCancel(ctx), family, rest); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// markChecked marks a family's PKCE challenge (named by rest) checked, keeping its expiry.
func (s *Store) markChecked(ctx context.Context, family, rest string) error {
	if err := s.rdb.SetArgs(ctx, currentKey(family, "pkce"), current(rest, used), redis.SetArgs{Mode: "XX", KeepTTL: true}).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return unavailable(err)
	}
	return nil
}
