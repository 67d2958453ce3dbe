// Package users keeps sign-in accounts in Redis: one hash per user keyed by a random ID (the OpenID
// subject, which never changes and is never reused), and an index from the e-mail address in lower
// case to the ID, which is what makes the address unique. Passwords are argon2id hashes.
package users

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/passwords"
	"github.com/formsservice/formsservice/services/platform/email"
	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// Errors callers tell apart.
var (
	ErrNotFound       = errors.New("no such user")
	ErrEmailTaken     = errors.New("an account with this e-mail address already exists")
	ErrInvalidEmail   = errors.New("not a valid e-mail address")
	ErrWeakPassword   = errors.New("password must be 8 to 256 characters")
	ErrBadCredentials = errors.New("wrong e-mail address or password")
	ErrUnavailable    = storeerr.Unavailable("user store unavailable")

	// The three ways credentials fail, for the audit trail only: each is ErrBadCredentials, and the
	// person is told the same thing whichever it was.
	ErrUnknownAccount = fmt.Errorf("%w: no such account", ErrBadCredentials)
	ErrWrongPassword  = fmt.Errorf("%w: wrong password", ErrBadCredentials)
	ErrDisabled       = fmt.Errorf("%w: account disabled", ErrBadCredentials)
)

// Password bounds of the store: what any password it keeps has (NIST SP 800-63B's 8, and long
// passphrases). A new password is judged by the stricter rules of package passwords (12 characters and
// more, not on the breach list, hard to guess) at each door that sets one (D54); the store still takes 8
// so that the accounts made before those rules keep signing in.
const (
	MinPasswordLen = 8
	MaxPasswordLen = passwords.MaxLen
	MaxNameLen     = 120
)

// User is an account. Hash is the argon2id PHC string.
type User struct {
	ID        string
	Email     string
	Name      string
	Hash      string
	CreatedAt time.Time
	// Disabled accounts cannot sign in, and their sessions and tokens stop working.
	Disabled bool
	// EmailVerified: the owner of the address followed a verification link (or an operator created
	// the account verified); the email_verified claim.
	EmailVerified bool
	// Groups the user belongs to, sorted (groups.go); the groups claim.
	Groups []string
	// SelfSignup: the account was made on the hosted page's sign-up form (not by an operator); only
	// such accounts are purged when never verified (purge.go).
	SelfSignup bool
	// MustChangePassword: a sign-in showed that the password fails the rules for new passwords (it was
	// set before them); the owner is asked to change it after each sign-in until a new one is set (D54).
	MustChangePassword bool
	// NeverSignedIn: no sign-in session was ever started for the account (its first sign-in is not
	// mailed as one from a new browser, D66). Accounts made before the mark existed count as signed in.
	NeverSignedIn bool
}

// Store reads and writes users.
type Store struct {
	rdb    redis.UniversalClient
	hasher *Hasher
}

// NewStore returns a Store that hashes with h.
func NewStore(rdb redis.UniversalClient, h *Hasher) *Store { return &Store{rdb: rdb, hasher: h} }

// Hasher returns the store's password hasher.
func (s *Store) Hasher() *Hasher { return s.hasher }

func userKey(id string) string     { return userKeyPrefix + id + userKeySuffix }
func emailKey(email string) string { return "auth:email:{" + email + "}" }

const userKeyPrefix, userKeySuffix = "auth:user:{", "}"

// KeyAffixes are what a user's key puts before and after the user's id: for a script that reads a
// user whose id it found in another record (the token endpoint's prefetch of a refresh, D45).
func KeyAffixes() (prefix, suffix string) { return userKeyPrefix, userKeySuffix }

func unavailable(err error) error { return fmt.Errorf("%w: %v", ErrUnavailable, err) }

// NormalizeEmail gives the canonical form of an address under the platform's one e-mail rule (the same
// the forms apply): trimmed, lower case, an internationalised domain in its ASCII form, so that
// a@bücher.de and a@xn--bcher-kva.de are one account.
func NormalizeEmail(s string) (string, error) {
	e, ok := email.Canonical(s)
	if !ok || utf8.RuneCountInString(e) > email.MaxLen {
		return "", ErrInvalidEmail
	}
	return e, nil
}

// CheckPassword enforces the length bounds (in characters).
func CheckPassword(p string) error {
	n := utf8.RuneCountInString(p)
	if n < MinPasswordLen || n > MaxPasswordLen {
		return ErrWeakPassword
	}
	return nil
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// claimScript replaces the index only if it still names the dead ID the caller saw.
var claimScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`)

// Create adds a user. The record is written first under a new random ID, then the e-mail index is
// claimed; so an index always points at a complete record, and of two concurrent creations of one
// address exactly one claims it (the other removes its record and gets ErrEmailTaken).
func (s *Store) Create(ctx context.Context, email, name, password string) (*User, error) {
	return s.create(ctx, email, name, password, false)
}

// CreateSignup is Create for the hosted page's sign-up form: the account is marked as self-made, so
// that `users purge-unverified` may free its address if it is never verified (purge.go).
func (s *Store) CreateSignup(ctx context.Context, email, name, password string) (*User, error) {
	return s.create(ctx, email, name, password, true)
}

func (s *Store) create(ctx context.Context, email, name, password string, signup bool) (*User, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	if err := CheckPassword(password); err != nil {
		return nil, err
	}
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > MaxNameLen {
		return nil, fmt.Errorf("name: at most %d characters", MaxNameLen)
	}
	if _, err := s.ByEmail(ctx, email); err == nil {
		return nil, ErrEmailTaken // the common case, before spending a hash
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	hash, err := s.hasher.Hash(ctx, password)
	if err != nil {
		return nil, err
	}
	u := &User{ID: newID(), Email: email, Name: name, Hash: hash, CreatedAt: time.Now().UTC().Truncate(time.Second), SelfSignup: signup}
	fields := []any{"id", u.ID, "email", u.Email, "name", u.Name, "hash", u.Hash, "created", strconv.FormatInt(u.CreatedAt.Unix(), 10)}
	if signup {
		fields = append(fields, "signup", "1")
	}
	if err := s.insert(ctx, u, fields); err != nil {
		return nil, err
	}
	return u, nil
}

// insert writes a new user's hash and then claims its address; when the address is taken (or the claim
// fails) the hash is removed again, so no account exists without its address.
func (s *Store) insert(ctx context.Context, u *User, fields []any) error {
	fields = append(fields, "fresh", "1")
	u.NeverSignedIn = true
	if err := s.rdb.HSet(ctx, userKey(u.ID), fields...).Err(); err != nil {
		return unavailable(err)
	}
	claimed, err := s.claim(ctx, u.Email, u.ID)
	if err != nil || !claimed {
		_ = s.rdb.Del(context.WithoutCancel(ctx), userKey(u.ID)).Err()
		if err != nil {
			return err
		}
		return ErrEmailTaken
	}
	return nil
}

// claim points the e-mail index at id unless it points at a live user. An index pointing at no record
// (a user being deleted) is taken over, atomically against anyone else doing the same.
func (s *Store) claim(ctx context.Context, email, id string) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, emailKey(email), id, 0).Result()
	if err != nil {
		return false, unavailable(err)
	}
	if ok {
		return true, nil
	}
	cur, err := s.rdb.Get(ctx, emailKey(email)).Result()
	if errors.Is(err, redis.Nil) {
		return s.claim(ctx, email, id) // deleted meanwhile
	}
	if err != nil {
		return false, unavailable(err)
	}
	n, err := s.rdb.Exists(ctx, userKey(cur)).Result()
	if err != nil {
		return false, unavailable(err)
	}
	if n == 1 {
		return false, nil
	}
	took, err := claimScript.Run(ctx, s.rdb, []string{emailKey(email)}, id, cur).Int()
	if err != nil {
		return false, unavailable(err)
	}
	return took == 1, nil
}

// ByID returns the user with that ID.
func (s *Store) ByID(ctx context.Context, id string) (*User, error) {
	if id == "" || len(id) > 64 {
		return nil, ErrNotFound
	}
	return userFrom(id, s.rdb.HGetAll(ctx, userKey(id)))
}

// QueueByID adds the read of ByID to the pipeline p (sent by the caller with other commands: one round
// trip for all, D38); after the pipeline is sent, the function it returns answers as ByID would.
func (s *Store) QueueByID(ctx context.Context, p redis.Pipeliner, id string) func() (*User, error) {
	if id == "" || len(id) > 64 {
		return func() (*User, error) { return nil, ErrNotFound }
	}
	cmd := p.HGetAll(ctx, userKey(id))
	return func() (*User, error) { return userFrom(id, cmd) }
}

func userFrom(id string, cmd *redis.MapStringStringCmd) (*User, error) {
	m, err := cmd.Result()
	if err != nil {
		return nil, unavailable(err)
	}
	return FromFields(id, m)
}

// FromFields is the user id whose hash (its fields, as HGETALL answers them) m is; ErrNotFound when
// m is not that user's (empty: no such user).
func FromFields(id string, m map[string]string) (*User, error) {
	if id == "" || m["id"] != id {
		return nil, ErrNotFound
	}
	created, _ := strconv.ParseInt(m["created"], 10, 64)
	return &User{ID: id, Email: m["email"], Name: m["name"], Hash: m["hash"], CreatedAt: time.Unix(created, 0).UTC(), Disabled: m["disabled"] == "1",
		EmailVerified: m["verified"] == "1", Groups: parseGroups(m["groups"]), SelfSignup: m["signup"] == "1", MustChangePassword: m["pwchange"] == "1",
		NeverSignedIn: m["fresh"] == "1"}, nil
}

// QueueSignedIn queues, in the caller's pipeline p, the end of the account's NeverSignedIn mark: a
// sign-in session starts (the session's round trip carries it, D44). HDEL creates nothing: an account
// deleted meanwhile stays deleted.
func (s *Store) QueueSignedIn(ctx context.Context, p redis.Pipeliner, id string) {
	p.HDel(ctx, userKey(id), "fresh")
}

// ByEmail returns the user with that address (any case).
func (s *Store) ByEmail(ctx context.Context, email string) (*User, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, ErrNotFound
	}
	id, err := s.rdb.Get(ctx, emailKey(email)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, unavailable(err)
	}
	u, err := s.ByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if u.Email != email {
		return nil, ErrNotFound
	}
	return u, nil
}

// Authenticate checks an e-mail and password. An unknown address costs the same hash as a wrong
// password and gives the same error (ErrBadCredentials; ErrUnknownAccount, ErrWrongPassword and
// ErrDisabled tell the audit trail which). A wrong password or a disabled account also returns the
// user, for the audit trail; a caller must not treat it as signed in. A hash with old parameters is
// upgraded on success.
func (s *Store) Authenticate(ctx context.Context, email, password string) (*User, error) {
	var l *Lookup
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // the lookup carries its own error
		l = s.QueueLookup(ctx, p, email)
		return nil
	})
	return s.AuthenticateLooked(ctx, l, password, nil)
}

// Lookup is the first read of a sign-in, the account an address names, queued in the caller's pipeline
// (QueueLookup): the sign-in page sends it with the throttle's reservation, in one round trip (D44).
type Lookup struct {
	email string
	cmd   *redis.StringCmd // nil: not an address any account can have
}

// QueueLookup queues the read of the account ID that email names.
func (s *Store) QueueLookup(ctx context.Context, p redis.Pipeliner, email string) *Lookup {
	email, err := NormalizeEmail(email)
	if err != nil {
		return &Lookup{}
	}
	return &Lookup{email: email, cmd: p.Get(ctx, emailKey(email))}
}

// AuthenticateLooked is Authenticate after its lookup was sent (l). also, when not nil, queues the
// caller's own reads of the account (its second factor, its sign-out generation) in the round trip that
// reads the account: they are sent only when the address names one, before the password is checked.
func (s *Store) AuthenticateLooked(ctx context.Context, l *Lookup, password string, also func(p redis.Pipeliner, id string)) (*User, error) {
	u, err := s.LookedUp(ctx, l, also)
	if err != nil {
		return nil, err
	}
	return s.CheckLooked(ctx, u, password)
}

// LookedUp is AuthenticateLooked's first half: the account l names (nil when there is none), read with
// the caller's reads (also) beside it, before any password is hashed, so that the caller may act on
// those reads first (a device cookie of an earlier sign-out generation, D51).
func (s *Store) LookedUp(ctx context.Context, l *Lookup, also func(p redis.Pipeliner, id string)) (*User, error) {
	u, err := s.looked(ctx, l, also)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return u, err
}

// CheckLooked is AuthenticateLooked's second half: password checked against u, a LookedUp account (nil:
// none; a hash runs all the same, so that the time tells nothing).
func (s *Store) CheckLooked(ctx context.Context, u *User, password string) (*User, error) {
	encoded := ""
	if u != nil {
		encoded = u.Hash
	}
	if len(password) > 4*MaxPasswordLen {
		password = "" // bound the work; such a password was never accepted
	}
	ok, rehash, err := s.hasher.Verify(ctx, encoded, password)
	if err != nil {
		return nil, err
	}
	switch {
	case u == nil:
		return nil, ErrUnknownAccount
	case !ok:
		return u, ErrWrongPassword
	case u.Disabled:
		return u, ErrDisabled
	}
	if rehash {
		if h, err := s.hasher.Hash(ctx, password); err == nil {
			_ = s.setHash(ctx, u.ID, h) // best effort: the old hash still works
		}
	}
	return u, nil
}

// looked reads the account l names (ByEmail's answer), with the caller's reads (also) beside it.
func (s *Store) looked(ctx context.Context, l *Lookup, also func(p redis.Pipeliner, id string)) (*User, error) {
	if l == nil || l.cmd == nil {
		return nil, ErrNotFound
	}
	id, err := l.cmd.Result()
	if errors.Is(err, redis.Nil) || err == nil && (id == "" || len(id) > 64) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, unavailable(err)
	}
	var user func() (*User, error)
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // each answer carries its own error
		user = s.QueueByID(ctx, p, id)
		if also != nil {
			also(p, id)
		}
		return nil
	})
	u, err := user()
	if err != nil {
		return nil, err
	}
	if u.Email != l.email {
		return nil, ErrNotFound
	}
	return u, nil
}

var setHashScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'hash', ARGV[1])
return 1
`)

func (s *Store) setHash(ctx context.Context, id, hash string) error {
	n, err := setHashScript.Run(ctx, s.rdb, []string{userKey(id)}, hash).Int()
	if err != nil {
		return unavailable(err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// setPasswordScript is setHashScript for a new password: the mark that the old one must change goes.
var setPasswordScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'hash', ARGV[1])
redis.call('HDEL', KEYS[1], 'pwchange')
return 1
`)

// SetPassword replaces a user's password (the caller judged it: package passwords).
func (s *Store) SetPassword(ctx context.Context, email, password string) (*User, error) {
	if err := CheckPassword(password); err != nil {
		return nil, err
	}
	u, err := s.ByEmail(ctx, email)
	if err != nil {
		return nil, err
	}
	h, err := s.hasher.Hash(ctx, password)
	if err != nil {
		return nil, err
	}
	n, err := setPasswordScript.Run(ctx, s.rdb, []string{userKey(u.ID)}, h).Int()
	if err != nil {
		return nil, unavailable(err)
	}
	if n == 0 {
		return nil, ErrNotFound
	}
	u.MustChangePassword = false
	return u, nil
}

var markPasswordChangeScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'pwchange', '1')
return 1
`)

// MarkPasswordChange records that user id's password fails the rules for new passwords: its owner is
// asked to change it after each sign-in until SetPassword sets a new one.
func (s *Store) MarkPasswordChange(ctx context.Context, id string) error {
	n, err := markPasswordChangeScript.Run(ctx, s.rdb, []string{userKey(id)}).Int()
	if err != nil {
		return unavailable(err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

var setVerifiedScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'email') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'verified', '1')
return 1
`)

// SetVerified marks the address of user id as verified, if the user still has the address email (a
// link sent to an address verifies that address, not the account's address of the day).
func (s *Store) SetVerified(ctx context.Context, id, email string) error {
	n, err := setVerifiedScript.Run(ctx, s.rdb, []string{userKey(id)}, email).Int()
	if err != nil {
		return unavailable(err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

var setDisabledScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '1' then redis.call('HSET', KEYS[1], 'disabled', '1') else redis.call('HDEL', KEYS[1], 'disabled') end
return 1
`)

// SetDisabled disables or re-enables an account. A disabled account cannot sign in; the caller revokes
// its sessions and tokens.
func (s *Store) SetDisabled(ctx context.Context, email string, disabled bool) (*User, error) {
	u, err := s.ByEmail(ctx, email)
	if err != nil {
		return nil, err
	}
	flag := "0"
	if disabled {
		flag = "1"
	}
	n, err := setDisabledScript.Run(ctx, s.rdb, []string{userKey(u.ID)}, flag).Int()
	if err != nil {
		return nil, unavailable(err)
	}
	if n == 0 {
		return nil, ErrNotFound
	}
	u.Disabled = disabled
	return u, nil
}

var unindexScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`)

// Delete removes a user: the record first (from then on the ID resolves to nobody, so the user's
// sessions and tokens stop working), then the e-mail index. It returns the deleted user.
func (s *Store) Delete(ctx context.Context, email string) (*User, error) {
	u, err := s.ByEmail(ctx, email)
	if err != nil {
		return nil, err
	}
	if err := s.rdb.Del(ctx, userKey(u.ID)).Err(); err != nil {
		return nil, unavailable(err)
	}
	if err := unindexScript.Run(ctx, s.rdb, []string{emailKey(u.Email)}, u.ID).Err(); err != nil {
		return nil, unavailable(err)
	}
	if err := s.deleteIdentities(ctx, u.ID); err != nil {
		return nil, err
	}
	return u, nil
}

// List calls fn for every user, in no particular order (a SCAN of every master), one call at a time.
func (s *Store) List(ctx context.Context, fn func(*User) error) error {
	var mu sync.Mutex
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, "auth:user:{*}", 200).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			id := strings.TrimSuffix(strings.TrimPrefix(k, "auth:user:{"), "}")
			u, err := s.ByID(ctx, id)
			if errors.Is(err, ErrNotFound) {
				continue // deleted meanwhile
			}
			if err == nil {
				// A record whose address does not name it back is half-created or half-deleted.
				if owner, gerr := s.rdb.Get(ctx, emailKey(u.Email)).Result(); gerr != nil || owner != u.ID {
					continue
				}
			}
			if err != nil {
				return err
			}
			mu.Lock()
			err = fn(u)
			mu.Unlock()
			if err != nil {
				return err
			}
		}
		if err := iter.Err(); err != nil {
			return unavailable(err)
		}
		return nil
	}
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, scan)
	case *redis.Client:
		return scan(ctx, c)
	default:
		return errors.New("users: listing needs a single-server or cluster client")
	}
}
