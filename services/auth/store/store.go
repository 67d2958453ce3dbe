// Package store is the provider's fosite storage on Redis: authorization codes, PKCE and OpenID Connect
// sessions, access and refresh tokens, their revocation, and replay detection.
//
// Every token belongs to a family: the fosite request ID of the authorization that started it, shared by
// the code, the tokens it is exchanged for and every refresh after them. The token strategy puts the
// family ID in front of each signature ("family~signature"), and every key of a family carries it as a
// hash tag, so that every step that must be atomic (exchange a code: use it once and store the tokens;
// refresh: retire the token and store the new ones; revoke a family) is one Lua script on one Redis
// Cluster slot (see tx.go). The scripts only read and write keys; nothing in Go holds a lock or calls
// back into the store while a script runs.
//
// Revoking a family writes one marker that every read checks in the same script, so a token issued by a
// request racing with the revocation is dead too. A family holds one record of each kind (its code, its
// current access token, its current refresh token), so its keys do not grow with refreshes: a used code
// keeps a used marker, a rotated refresh token's signature joins a short per-family list, and presenting
// either again is recognised as a replay and revokes the family.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// ErrUnavailable wraps every failure to reach Redis; the service answers it with 503.
var ErrUnavailable = storeerr.Unavailable("token store unavailable")

// ErrReplay is returned when a used authorization code or a rotated refresh token is presented again
// (the family is revoked by then), or when the family was revoked before.
var ErrReplay = errors.New("token reused or revoked")

// Lifetimes are read from the live configuration on every write.
type Lifetimes struct {
	Code, Access, Refresh time.Duration
	// Family is the absolute lifetime of a family from its first sign-in, however often it is refreshed
	// (0: the refresh lifetime).
	Family time.Duration
	// MaxFamilies bounds a user's families (0: DefaultMaxFamilies): beyond it the oldest family ends, so
	// the user's keys (and what revoking the user costs) never depend on how often the user signs in.
	MaxFamilies int
}

// DefaultMaxFamilies is the bound on a user's families when the configuration sets none.
const DefaultMaxFamilies = 1000

// Options configure a Store.
type Options struct {
	Redis redis.UniversalClient
	// Client finds a registered client by ID; the store keeps client IDs only, so that a client removed
	// from the configuration can no longer use the tokens it was given.
	Client func(ctx context.Context, id string) (fosite.Client, error)
	// NewSession returns an empty session of the provider's type to decode stored sessions into.
	NewSession func() fosite.Session
	Lifetimes  func() Lifetimes
	// OnReplay, when set, is told each time a used code ("code") or a rotated refresh token ("refresh")
	// of family is presented again, which revokes the family; ctx is the request's.
	OnReplay func(ctx context.Context, kind, family string)
}

// Store implements the storage interfaces fosite's handlers need.
type Store struct {
	rdb        redis.UniversalClient
	client     func(ctx context.Context, id string) (fosite.Client, error)
	newSession func() fosite.Session
	lifetimes  func() Lifetimes
	onReplay   func(ctx context.Context, kind, family string)
	// Generations are the users' sign-out generations (generations.go).
	Generations Generations
}

// New returns a Store.
func New(o Options) *Store {
	s := &Store{rdb: o.Redis, client: o.Client, newSession: o.NewSession, lifetimes: o.Lifetimes, onReplay: o.OnReplay}
	if s.onReplay == nil {
		s.onReplay = func(context.Context, string, string) {}
	}
	// A generation outlives every session and grant that could have seen the one before.
	s.Generations = Generations{rdb: o.Redis, lifetime: func() time.Duration { return s.markerTTL() + 30*24*time.Hour }}
	return s
}

// Marker values: an active record starts with 'A' followed by its JSON; a used code or rotated refresh
// token is the single byte 'U'.
const (
	active = "A"
	used   = "U"
)

// Ready pings Redis.
func (s *Store) Ready(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }

// Family splits "family~signature" into its parts; ok is false for anything else, including a family ID
// that is not what fosite generates (a UUID), so that no input can name an arbitrary key.
func Family(sig string) (family, rest string, ok bool) {
	family, rest, ok = strings.Cut(sig, "~")
	if !ok || rest == "" || !validFamily(family) {
		return "", "", false
	}
	return family, rest, true
}

func validFamily(f string) bool {
	if len(f) == 0 || len(f) > 64 {
		return false
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}

// Key layout. {family} is the hash tag: a family's keys share one Redis Cluster slot.
func revokedKey(family string) string { return "auth:{" + family + "}:revoked" }

// currentKey is a family's one record of a kind: its code ("code") with the code's PKCE challenge
// ("pkce") and OpenID Connect request ("oidc"), its current access token ("at") and its current refresh
// token ("rt"). A family has one code, and a refresh replaces both tokens, so a
// family holds a fixed number of keys however often it is refreshed. The value is "signature\n"
// followed by the record ('A' + JSON) or the used marker 'U'.
func currentKey(family, kind string) string { return "auth:{" + family + "}:" + kind }

// rotatedKey lists the family's last MaxRotated rotated refresh-token signatures (newest first): a
// reused one revokes the family. An older one is no longer recognised as reuse; it is refused as unknown.
func rotatedKey(family string) string { return "auth:{" + family + "}:rotated" }

// refreshKeys are the keys a read of a family's refresh token names, in the order currentScript and
// prefetchRefreshScript take them: the token's record, the revocation marker, the rotated list.
func refreshKeys(family string) []string {
	return []string{currentKey(family, "rt"), revokedKey(family), rotatedKey(family)}
}

// MaxRotated is how many rotated refresh tokens per family are remembered for reuse detection.
const MaxRotated = 32

func current(sig, record string) string { return sig + "\n" + record }

// subjectKey is the user's families, a sorted set scored by each family's end (Unix ms): pruned by expiry.
func subjectKey(subject string) string { return "auth:subject:{" + subject + "}:grants" }

// sessionsKey maps each family of the user's index to the sign-in session that started it (its ID, the
// SHA-256 of the cookie): what logout revokes, however many grants the session started. Same slot as the
// index, kept with it by one script.
func sessionsKey(subject string) string { return "auth:subject:{" + subject + "}:sessions" }

// endedKey holds the user's sign-in sessions that ended (logout, or ended on the account page), each
// scored by the time (Unix ms) it would have ended anyway: a code a request of one of them registers
// after that is refused, as a code of a signed-out generation is (registerScript).
func endedKey(subject string) string { return "auth:subject:{" + subject + "}:ended" }

// generationKey is the user's sign-out generation: "sign out everywhere" (a password change, a disabled
// account) increments it, and a code is written only for a sign-in that saw the current one.
func generationKey(subject string) string { return "auth:subject:{" + subject + "}:gen" }

// legacySubjectKey is the unbounded set earlier versions kept; still read when revoking a user.
func legacySubjectKey(subject string) string { return "auth:subject:{" + subject + "}:families" }

// hashed is used where fosite hands the store a raw secret (the OIDC session is keyed by the code
// itself): the key holds its SHA-256, never the code.
func hashed(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func unavailable(err error) error { return fmt.Errorf("%w: %v", ErrUnavailable, err) }

// markerTTL is how long revocation markers and used-token markers live: never shorter than the longest
// lifetime configured (so lowering one lifetime cannot let a marker expire before the tokens it
// revokes), plus a margin for requests in flight.
func (s *Store) markerTTL() time.Duration {
	l := s.lifetimes()
	return max(l.Refresh, l.Family, l.Access, l.Code) + time.Hour
}

// storedRequest is what a record holds: the request without its client (looked up by ID on read).
type storedRequest struct {
	// Subject comes first, where a script finds it without decoding the record (the token endpoint's
	// prefetch of a refresh reads the user with the token: D45); decoding takes it from the session.
	Subject           string     `json:"sub,omitempty"`
	ID                string     `json:"id"`
	RequestedAt       time.Time  `json:"at"`
	ClientID          string     `json:"client"`
	RequestedScope    []string   `json:"scope,omitempty"`
	GrantedScope      []string   `json:"granted,omitempty"`
	RequestedAudience []string   `json:"aud,omitempty"`
	GrantedAudience   []string   `json:"grantedAud,omitempty"`
	Form              url.Values `json:"form,omitempty"`
	// Session is the provider's session type; decode sets it to an empty one first, so that one pass
	// of the decoder fills it (no RawMessage round trip).
	Session fosite.Session `json:"session"`
}

func encode(r fosite.Requester) (string, error) {
	b, err := json.Marshal(storedRequest{
		Subject:           r.GetSession().GetSubject(),
		ID:                r.GetID(),
		RequestedAt:       r.GetRequestedAt(),
		ClientID:          r.GetClient().GetID(),
		RequestedScope:    r.GetRequestedScopes(),
		GrantedScope:      r.GetGrantedScopes(),
		RequestedAudience: r.GetRequestedAudience(),
		GrantedAudience:   r.GetGrantedAudience(),
		Form:              r.GetRequestForm(),
		Session:           r.GetSession(),
	})
	if err != nil {
		return "", err
	}
	return active + string(b), nil
}

func (s *Store) decode(ctx context.Context, v string) (fosite.Requester, error) {
	return s.decodeInto(ctx, v, nil)
}

// decodeInto is decode with the stored session read into sess (a fresh one when nil): the session
// fosite passed to a Get…Session call, which it expects filled.
func (s *Store) decodeInto(ctx context.Context, v string, sess fosite.Session) (fosite.Requester, error) {
	if sess == nil {
		sess = s.newSession()
	}
	sr := storedRequest{Session: sess}
	if err := json.Unmarshal([]byte(v[len(active):]), &sr); err != nil {
		return nil, fmt.Errorf("stored request: %w", err)
	}
	cl, err := s.client(ctx, sr.ClientID)
	if err != nil {
		return nil, fosite.ErrNotFound
	}
	form := sr.Form
	if form == nil {
		form = url.Values{}
	}
	return &fosite.Request{
		ID:                sr.ID,
		RequestedAt:       sr.RequestedAt,
		Client:            cl,
		RequestedScope:    sr.RequestedScope,
		GrantedScope:      sr.GrantedScope,
		RequestedAudience: sr.RequestedAudience,
		GrantedAudience:   sr.GrantedAudience,
		Form:              form,
		Session:           sess,
	}, nil
}

// ttl is the time left until the session says the token expires, or def when it does not say.
func ttl(r fosite.Requester, tt fosite.TokenType, def time.Duration) time.Duration {
	if r.GetSession() != nil {
		if exp := r.GetSession().GetExpiresAt(tt); !exp.IsZero() {
			def = time.Until(exp)
		}
	}
	if def < time.Second {
		def = time.Second
	}
	return def
}

// runGet runs a script that answers a record and its family's revocation flag, or nil when missing.
func (s *Store) runGet(ctx context.Context, script *redis.Script, keys []string, args ...any) (string, bool, error) {
	res, err := script.Run(ctx, s.rdb, keys, args...).Slice()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, unavailable(err)
	}
	if len(res) != 2 {
		return "", false, unavailable(errors.New("unexpected script reply"))
	}
	v, _ := res[0].(string)
	revoked, _ := res[1].(int64)
	return v, revoked == 1, nil
}

// readStateLua is the start of the scripts that read a family's current record of a kind: state is
// what follows the signature line when KEYS[1] holds the one named by ARGV[1], else false.
const readStateLua = `
local v = redis.call('GET', KEYS[1])
local state = false
if v then
  local nl = string.find(v, '\n', 1, true)
  if nl and string.sub(v, 1, nl - 1) == ARGV[1] then state = string.sub(v, nl + 1) end
end
`

// rotatedStateLua follows readStateLua in the scripts that read a refresh token: a signature found in
// the family's rotated list (KEYS[3], when given) reads as the used marker 'U'.
const rotatedStateLua = `
if not state and KEYS[3] and redis.call('LPOS', KEYS[3], ARGV[1]) then state = 'U' end
`

// currentScript reads a family's current record of a kind if it is the one named by ARGV[1], with the
// family's revocation flag. KEYS: the record, the revocation marker, and for refresh tokens the rotated
// list, where a match reads as the used marker 'U'. With ARGV[3] = '1', finding 'U' on a family not yet
// revoked revokes it (ARGV[2] is the marker's TTL): a replayed code or a reused refresh token. With
// ARGV[4] = '1', a record found active on a family not revoked is marked used in the same step (a PKCE
// challenge, checked once: read and marked in one call).
var currentScript = redis.NewScript(readStateLua + rotatedStateLua + `
if not state then return false end
local revoked = redis.call('EXISTS', KEYS[2])
if state == 'U' and revoked == 0 and ARGV[3] == '1' then redis.call('SET', KEYS[2], '1', 'PX', ARGV[2]) end
if ARGV[4] == '1' and revoked == 0 and string.sub(state, 1, 1) == 'A' then redis.call('SET', KEYS[1], ARGV[1] .. '\nU', 'KEEPTTL') end
return {state, revoked}
`)

// codeScript is currentScript for a code (KEYS: the code, the revocation marker; ARGV as there) that
// also answers the family's OpenID Connect record as it is (KEYS[3]; ” when there is none).
var codeScript = redis.NewScript(readStateLua + `
if not state then return false end
local revoked = redis.call('EXISTS', KEYS[2])
if state == 'U' and revoked == 0 and ARGV[3] == '1' then redis.call('SET', KEYS[2], '1', 'PX', ARGV[2]) end
return {state, revoked, redis.call('GET', KEYS[3]) or ''}
`)

// getCurrent reads the family's record of kind named by sig (see currentScript).
func (s *Store) getCurrent(ctx context.Context, family, kind, sig string, revokeOnUsed bool) (string, bool, error) {
	var keys []string
	if kind == "rt" {
		keys = refreshKeys(family)
	} else { // only a refresh token has a rotated list
		keys = []string{currentKey(family, kind), revokedKey(family)}
	}
	flag := "0"
	if revokeOnUsed {
		flag = "1"
	}
	return s.runGet(ctx, currentScript, keys, sig, ms(s.markerTTL()), flag)
}

// ownerScript reads the first of a family's current records that is still a record (a used code is
// only a marker). KEYS: the records to try, in order.
var ownerScript = redis.NewScript(`
for _, k in ipairs(KEYS) do
  local v = redis.call('GET', k)
  if v then
    local nl = string.find(v, '\n', 1, true)
    if nl and string.sub(v, nl + 1, nl + 1) == 'A' then return string.sub(v, nl + 1) end
  end
end
return false
`)

// FamilyOwner names the user (subject) and client of a family from its current tokens or code, for
// the audit trail of a replay or a revocation; empty strings when none of its records is left. One
// script on the family's slot.
func (s *Store) FamilyOwner(ctx context.Context, family string) (subject, clientID string, err error) {
	if !validFamily(family) {
		return "", "", nil
	}
	keys := []string{currentKey(family, "rt"), currentKey(family, "at"), currentKey(family, "code")}
	v, err := ownerScript.Run(ctx, s.rdb, keys).Text()
	if errors.Is(err, redis.Nil) {
		return "", "", nil
	}
	if err != nil {
		return "", "", unavailable(err)
	}
	sr := storedRequest{Session: s.newSession()}
	if json.Unmarshal([]byte(v[len(active):]), &sr) != nil {
		return "", "", nil
	}
	return sr.Session.GetSubject(), sr.ClientID, nil
}

// familyOnly is what fosite receives with ErrInvalidatedAuthorizeCode or ErrInactiveToken: it only reads
// the ID (to revoke the family).
func familyOnly(family string) fosite.Requester {
	return &fosite.Request{ID: family, Client: &fosite.DefaultClient{}, Form: url.Values{}}
}

// RevokeFamily marks every token of a family dead, including tokens written after this by requests
// already in flight.
func (s *Store) RevokeFamily(ctx context.Context, family string) error {
	if !validFamily(family) {
		return nil
	}
	if err := s.rdb.Set(ctx, revokedKey(family), "1", s.markerTTL()).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// RevokeFamilies revokes several families at once (a sign-in session's, at logout).
func (s *Store) RevokeFamilies(ctx context.Context, families []string) error {
	if len(families) == 0 {
		return nil
	}
	marker := s.markerTTL()
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, f := range families {
			if validFamily(f) {
				p.Set(ctx, revokedKey(f), "1", marker)
			}
		}
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	return nil
}
