package passkey

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
)

const (
	issuer = "https://id.example.com"
	origin = "https://id.example.com"
	// The browser secrets ceremonies are bound to: a sign-in session, a CSRF cookie.
	session = "session-cookie-of-the-browser"
	csrf    = "csrf-cookie-of-the-browser"
)

var ctx = context.Background()

type fixture struct {
	t     testing.TB
	rdb   redis.UniversalClient
	store *Store
	rp    *RelyingParty
	now   time.Time
	accts map[string]*Account
}

func newFixture(t testing.TB, rdb redis.UniversalClient) *fixture {
	t.Helper()
	if rdb == nil {
		srv := testredis.Start(t)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { c.Close() })
		rdb = c
	}
	rp, err := NewRelyingParty(issuer, "Acme", 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, rdb: rdb, rp: rp, now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), accts: map[string]*Account{}}
	f.store = NewStore(rdb, func() time.Time { return f.now })
	return f
}

func (f *fixture) account(id string) Account {
	a := Account{ID: id, Email: id[:4] + "@example.com", Name: "Ada"}
	f.accts[id] = &a
	return a
}

func (f *fixture) lookup(_ context.Context, id string) (*Account, error) {
	if a, ok := f.accts[id]; ok {
		c := *a
		return &c, nil
	}
	return nil, nil
}

// register adds a passkey named name to acct with a new software authenticator.
func (f *fixture) register(acct Account, name string, setup func(*softKey)) (*softKey, *Passkey) {
	f.t.Helper()
	o, err := f.store.BeginRegistration(ctx, f.rp, acct, name, session)
	if err != nil {
		f.t.Fatal(err)
	}
	var setups []func(*softKey)
	if setup != nil {
		setups = append(setups, setup)
	}
	k, resp := create(f.t, o, origin, true, setups...)
	p, err := f.store.FinishRegistration(ctx, f.rp, acct, o.Ceremony, session, resp)
	if err != nil {
		f.t.Fatalf("registering %q: %v", name, err)
	}
	return k, p
}

// signIn runs a whole sign-in ceremony with k, made on origin.
func (f *fixture) signIn(k *softKey, on string, uv bool) (*SignedIn, error) {
	f.t.Helper()
	o, err := f.store.BeginSignIn(ctx, f.rp, csrf)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.store.FinishSignIn(ctx, f.rp, o.Ceremony, csrf, k.get(f.t, o, on, uv), f.lookup)
}

func wantRefused(t *testing.T, err error, reason string) {
	t.Helper()
	if !errors.Is(err, ErrRefused) || Reason(err) != reason {
		t.Fatalf("got %v, want a refusal for %s", err, reason)
	}
}

const (
	userA = "0123456789abcdef0123456789abcdef"
	userB = "fedcba9876543210fedcba9876543210"
)

func TestNewRelyingParty_IDAndOriginFromTheIssuer(t *testing.T) {
	for _, c := range []struct{ issuer, id, origin string }{
		{"https://id.example.com", "id.example.com", "https://id.example.com"},
		{"https://ID.Example.com:443/auth", "id.example.com", "https://id.example.com"},
		{"https://id.example.com:8443", "id.example.com", "https://id.example.com:8443"},
		{"http://localhost:8080", "localhost", "http://localhost:8080"},
	} {
		rp, err := NewRelyingParty(c.issuer, "", time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", c.issuer, err)
		}
		if rp.ID != c.id || rp.Origin != c.origin || rp.Name != c.id {
			t.Errorf("%s: RP ID %q origin %q name %q, want %q, %q and the host name", c.issuer, rp.ID, rp.Origin, rp.Name, c.id, c.origin)
		}
	}
	for _, bad := range []string{"http://127.0.0.1:8080", "http://[::1]:8080", "https://10.0.0.1"} {
		if _, err := NewRelyingParty(bad, "", time.Minute); !errors.Is(err, ErrNoRelyingParty) {
			t.Errorf("%s: %v, want ErrNoRelyingParty (an IP address cannot be an RP ID)", bad, err)
		}
	}
}

func TestRegisterAndSignIn_TwoNamedPasskeys_ListedAndOneRemoved(t *testing.T) {
	f := newFixture(t, nil)
	acct := f.account(userA)
	laptop, _ := f.register(acct, "  Work laptop ", nil)
	f.now = f.now.Add(time.Minute)
	phone, _ := f.register(acct, "Phone", func(k *softKey) { k.synced, k.counterless = true, true })

	list, err := f.store.List(ctx, userA)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "Work laptop" || list[1].Name != "Phone" {
		t.Fatalf("listed %+v, want Work laptop then Phone", list)
	}
	if !list[0].Created.Equal(f.now.Add(-time.Minute)) || !list[0].LastUsed.IsZero() || list[0].Synced || !list[1].Synced {
		t.Errorf("first passkey %+v: want created at the first registration, never used, not synced; second synced", list[0])
	}

	f.now = f.now.Add(time.Hour)
	in, err := f.signIn(laptop, origin, true)
	if err != nil {
		t.Fatal(err)
	}
	if in.Account.ID != userA || in.Passkey.Name != "Work laptop" || strings.Join(in.Passkey.AMR(), " ") != "pop mfa" {
		t.Errorf("signed in as %+v with %+v (amr %v), want %s with the laptop's passkey, amr pop mfa", in.Account, in.Passkey, in.Passkey.AMR(), userA)
	}
	in, err = f.signIn(phone, origin, true)
	if err != nil {
		t.Fatal(err)
	}
	// The backup flags are the authenticator's own word (no attestation is asked): they are shown to the
	// person (Synced), and no amr claims a hardware- or software-bound key on them (D69).
	if strings.Join(in.Passkey.AMR(), " ") != "pop mfa" || !in.Passkey.Synced {
		t.Errorf("a synced passkey's amr is %v (synced %v), want pop mfa", in.Passkey.AMR(), in.Passkey.Synced)
	}
	list, _ = f.store.List(ctx, userA)
	if !list[0].LastUsed.Equal(f.now) || list[0].SignCount != laptop.count {
		t.Errorf("after a sign-in: last used %v, count %d; want %v, %d", list[0].LastUsed, list[0].SignCount, f.now, laptop.count)
	}

	removed, err := f.store.Remove(ctx, userA, list[0].ID)
	if err != nil || removed.Name != "Work laptop" {
		t.Fatalf("remove: %+v, %v", removed, err)
	}
	if _, err := f.store.Remove(ctx, userA, list[0].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second removal: %v, want ErrNotFound", err)
	}
	if _, err := f.store.Remove(ctx, userB, list[1].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("removing another user's passkey: %v, want ErrNotFound", err)
	}
	list, _ = f.store.List(ctx, userA)
	if len(list) != 1 || list[0].Name != "Phone" {
		t.Fatalf("after removal: %+v, want only Phone", list)
	}
	_, err = f.signIn(laptop, origin, true)
	wantRefused(t, err, ReasonUnknownPasskey)
	if _, err := f.signIn(phone, origin, true); err != nil {
		t.Errorf("the remaining passkey: %v", err)
	}
}

func TestSignIn_CounterThatDoesNotGoUp_RefusedAsCloneAndRecorded(t *testing.T) {
	f := newFixture(t, nil)
	acct := f.account(userA)
	k, _ := f.register(acct, "Key", nil)
	for range 3 {
		if _, err := f.signIn(k, origin, true); err != nil {
			t.Fatal(err)
		}
	}
	// A copy of the authenticator made before the last two sign-ins: its counter is behind.
	clone := *k
	clone.count = 1
	_, err := f.signIn(&clone, origin, true)
	wantRefused(t, err, ReasonCloned)
	var r *Refusal
	if errors.As(err, &r); r.UserID != userA || r.Passkey == nil || r.Passkey.Name != "Key" {
		t.Errorf("refusal names user %q passkey %+v, want %s and Key", r.UserID, r.Passkey, userA)
	}
	// The same counter value again (a replayed or duplicated authenticator) is refused too.
	same := *k
	same.count--
	_, err = f.signIn(&same, origin, true)
	wantRefused(t, err, ReasonCloned)

	list, _ := f.store.List(ctx, userA)
	if list[0].ClonedAt.IsZero() || list[0].SignCount != 3 {
		t.Errorf("after the clone: cloned at %v, count %d; want the refusal recorded and the count kept at 3", list[0].ClonedAt, list[0].SignCount)
	}
	if _, err := f.signIn(k, origin, true); err != nil {
		t.Errorf("the genuine authenticator after a refused clone: %v", err)
	}
}

func TestSignIn_TwoAssertionsWithOneCounterValueAtOnce_OneAccepted(t *testing.T) {
	f := newFixture(t, nil)
	acct := f.account(userA)
	k, _ := f.register(acct, "Key", nil)
	const n = 8
	var answers [n][]byte
	var ceremonies [n]string
	k.count++ // every copy signs with the same next counter value
	for i := range n {
		o, err := f.store.BeginSignIn(ctx, f.rp, csrf)
		if err != nil {
			t.Fatal(err)
		}
		ceremonies[i], answers[i] = o.Ceremony, k.assert(t, f.rp.ID, challengeOf(t, o), origin, true, k.count)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted, cloned := 0, 0
	for i := range n {
		wg.Go(func() {
			_, err := f.store.FinishSignIn(ctx, f.rp, ceremonies[i], csrf, answers[i], f.lookup)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				accepted++
			case Reason(err) == ReasonCloned:
				cloned++
			default:
				t.Errorf("unexpected: %v", err)
			}
		})
	}
	wg.Wait()
	if accepted != 1 || cloned != n-1 {
		t.Errorf("%d accepted, %d refused as clones; want exactly 1 accepted", accepted, cloned)
	}
}

func TestSignIn_OnAnotherOrigin_Refused(t *testing.T) {
	f := newFixture(t, nil)
	acct := f.account(userA)
	k, _ := f.register(acct, "Key", nil)
	for _, on := range []string{"https://evil.example.com", "https://id.example.com:8443", "http://id.example.com", "https://id.example.com.evil.test", "null", ""} {
		_, err := f.signIn(k, on, true)
		wantRefused(t, err, ReasonWrongOrigin)
	}
	// Registration too.
	o, err := f.store.BeginRegistration(ctx, f.rp, acct, "Other", session)
	if err != nil {
		t.Fatal(err)
	}
	_, resp := create(t, o, "https://evil.example.com", true)
	_, err = f.store.FinishRegistration(ctx, f.rp, acct, o.Ceremony, session, resp)
	wantRefused(t, err, ReasonWrongOrigin)
	if list, _ := f.store.List(ctx, userA); len(list) != 1 {
		t.Errorf("%d passkeys after a refused registration, want 1", len(list))
	}
}

func TestUserVerificationRequired_ForRegistrationAndSignIn(t *testing.T) {
	f := newFixture(t, nil)
	acct := f.account(userA)
	o, err := f.store.BeginRegistration(ctx, f.rp, acct, "Key", session)
	if err != nil {
		t.Fatal(err)
	}
	_, resp := create(t, o, origin, false)
	_, err = f.store.FinishRegistration(ctx, f.rp, acct, o.Ceremony, session, resp)
	wantRefused(t, err, ReasonUserVerification)

	k, _ := f.register(acct, "Key", nil)
	_, err = f.signIn(k, origin, false)
	wantRefused(t, err, ReasonUserVerification)
}

func TestCeremony_SingleUse_BoundToItsBrowser_Expiring(t *testing.T) {
	f := newFixture(t, nil)
	acct := f.account(userA)
	k, _ := f.register(acct, "Key", nil)

	o, err := f.store.BeginSignIn(ctx, f.rp, csrf)
	if err != nil {
		t.Fatal(err)
	}
	answer := k.get(t, o, origin, true)
	if _, err := f.store.FinishSignIn(ctx, f.rp, o.Ceremony, csrf, answer, f.lookup); err != nil {
		t.Fatal(err)
	}
	_, err = f.store.FinishSignIn(ctx, f.rp, o.Ceremony, csrf, answer, f.lookup)
	wantRefused(t, err, ReasonExpired) // replayed

	o, _ = f.store.BeginSignIn(ctx, f.rp, csrf)
	_, err = f.store.FinishSignIn(ctx, f.rp, o.Ceremony, "another browser's cookie", k.get(t, o, origin, true), f.lookup)
	wantRefused(t, err, ReasonExpired)
	_, err = f.store.FinishSignIn(ctx, f.rp, o.Ceremony, csrf, k.get(t, o, origin, true), f.lookup)
	wantRefused(t, err, ReasonExpired) // a refused attempt used it up too

	// A sign-in ceremony cannot finish a registration, and the other way round.
	o, _ = f.store.BeginSignIn(ctx, f.rp, csrf)
	_, err = f.store.FinishRegistration(ctx, f.rp, acct, o.Ceremony, csrf, []byte(`{}`))
	wantRefused(t, err, ReasonExpired)
	o, _ = f.store.BeginRegistration(ctx, f.rp, acct, "Other", session)
	_, err = f.store.FinishSignIn(ctx, f.rp, o.Ceremony, session, []byte(`{}`), f.lookup)
	wantRefused(t, err, ReasonExpired)
	// Another account's registration.
	o, _ = f.store.BeginRegistration(ctx, f.rp, acct, "Other", session)
	_, resp := create(t, o, origin, true)
	_, err = f.store.FinishRegistration(ctx, f.rp, f.account(userB), o.Ceremony, session, resp)
	wantRefused(t, err, ReasonExpired)

	// Expiring: the challenge lives the ceremony's timeout in Redis, not longer.
	o, _ = f.store.BeginSignIn(ctx, f.rp, csrf)
	testredis.EndLifetimes(t, f.rdb, "auth:passkey-ceremony:*", f.rp.Timeout)
	_, err = f.store.FinishSignIn(ctx, f.rp, o.Ceremony, csrf, k.get(t, o, origin, true), f.lookup)
	wantRefused(t, err, ReasonExpired)

	for _, id := range []string{"", "short", strings.Repeat("x", 43) + "*", strings.Repeat("é", 40)} {
		_, err = f.store.FinishSignIn(ctx, f.rp, id, csrf, answer, f.lookup)
		wantRefused(t, err, ReasonExpired)
	}
}

func TestRegistration_NamesBoundsAndDuplicates(t *testing.T) {
	f := newFixture(t, nil)
	acct := f.account(userA)
	for _, bad := range []string{"", "   ", strings.Repeat("a", MaxNameLen+1), "tab\there", "line\nbreak", "\u2028"} {
		if _, err := f.store.BeginRegistration(ctx, f.rp, acct, bad, session); !errors.Is(err, ErrName) {
			t.Errorf("name %q: %v, want ErrName", bad, err)
		}
	}
	if _, err := f.store.BeginRegistration(ctx, f.rp, acct, strings.Repeat("ü", MaxNameLen), session); err != nil {
		t.Errorf("a name of %d characters: %v", MaxNameLen, err)
	}

	// The same authenticator registered twice (a browser ignoring excludeCredentials) is refused.
	k, _ := f.register(acct, "Key", nil)
	o, _ := f.store.BeginRegistration(ctx, f.rp, acct, "Again", session)
	_, err := f.store.FinishRegistration(ctx, f.rp, acct, o.Ceremony, session, k.attest(t, f.rp.ID, challengeOf(t, o), origin, true))
	wantRefused(t, err, ReasonExists)

	for i := 1; i < MaxPerUser; i++ {
		f.register(acct, "Key", nil)
	}
	if _, err := f.store.BeginRegistration(ctx, f.rp, acct, "One too many", session); !errors.Is(err, ErrTooMany) {
		t.Errorf("passkey %d: %v, want ErrTooMany", MaxPerUser+1, err)
	}
}

func TestSignIn_MalformedAnswersAndUnknownAccounts_Refused(t *testing.T) {
	f := newFixture(t, nil)
	acct := f.account(userA)
	k, _ := f.register(acct, "Key", nil)
	for _, body := range []string{"", "null", "{}", `{"id":"x","rawId":"y","type":"public-key"}`, strings.Repeat("[", 20000)} {
		o, _ := f.store.BeginSignIn(ctx, f.rp, csrf)
		_, err := f.store.FinishSignIn(ctx, f.rp, o.Ceremony, csrf, []byte(body), f.lookup)
		wantRefused(t, err, ReasonMalformed)
	}
	// A deleted account's passkey, and a user handle that is not an account ID.
	delete(f.accts, userA)
	_, err := f.signIn(k, origin, true)
	wantRefused(t, err, ReasonUnknownPasskey)
	k.handle = []byte("../../auth:user:{x}")
	_, err = f.signIn(k, origin, true)
	wantRefused(t, err, ReasonUnknownPasskey)
	// A disabled account's passkey verifies but does not sign in.
	f.account(userA)
	f.accts[userA].Disabled = true
	k.handle = []byte(userA)
	_, err = f.signIn(k, origin, true)
	wantRefused(t, err, ReasonDisabled)
}

// On a Redis Cluster every script touches only one user's slot: a passkey's keys share the user's hash
// tag (a script over two slots would fail with CROSSSLOT).
func TestCluster_RegisterSignInRemove(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	c := testredis.StartCluster(t, 3, 0)
	f := newFixture(t, c.Client())
	for _, id := range []string{userA, userB} {
		acct := f.account(id)
		k, p := f.register(acct, "Key", nil)
		if _, err := f.signIn(k, origin, true); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if _, err := f.store.Remove(ctx, id, p.ID); err != nil {
			t.Fatal(err)
		}
		if err := f.store.RemoveAll(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	slot := func(key string) int64 {
		n, err := c.Client().ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if slot(keysKey(userA)) != slot(useKey(userA)) || slot(keysKey(userA)) != slot("auth:user:{"+userA+"}") {
		t.Errorf("a user's passkey keys and record are in different slots")
	}
}

func TestRename_OnlyTheOwnersPasskey_NameChecked_SignInUnchanged(t *testing.T) {
	f := newFixture(t, nil)
	acct := f.account(userA)
	k, p := f.register(acct, "Work laptop", nil)
	f.account(userB)

	got, err := f.store.Rename(ctx, userA, p.ID, "  Old laptop ")
	if err != nil || got.Name != "Old laptop" || got.ID != p.ID {
		t.Fatalf("rename: %+v, %v; want Old laptop", got, err)
	}
	if _, err := f.store.Rename(ctx, userB, p.ID, "Mine now"); !errors.Is(err, ErrNotFound) {
		t.Errorf("renaming another user's passkey: %v, want ErrNotFound", err)
	}
	if _, err := f.store.Rename(ctx, userA, "bm8tc3VjaA", "Ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("renaming no passkey: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"", "   ", strings.Repeat("x", MaxNameLen+1), "tab\tname"} {
		if _, err := f.store.Rename(ctx, userA, p.ID, bad); !errors.Is(err, ErrName) {
			t.Errorf("rename to %q: %v, want ErrName", bad, err)
		}
	}
	list, _ := f.store.List(ctx, userA)
	if len(list) != 1 || list[0].Name != "Old laptop" || !list[0].Created.Equal(p.Created) {
		t.Fatalf("listed %+v, want the one passkey renamed Old laptop, created as before", list)
	}
	// The record keeps its key and counter: the passkey still signs in, and under its new name.
	in, err := f.signIn(k, origin, true)
	if err != nil || in.Passkey.Name != "Old laptop" {
		t.Fatalf("sign-in after the rename: %+v, %v", in, err)
	}
	if _, err := f.store.Remove(ctx, userA, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Rename(ctx, userA, p.ID, "Back"); !errors.Is(err, ErrNotFound) {
		t.Errorf("renaming a removed passkey: %v, want ErrNotFound", err)
	}
}

// A user handle is the sender's to choose: a refusal names the account (UserID) only once the account's
// own passkey signed the answer — a counter that did not go up, a disabled account. An unknown passkey,
// a missing user verification or a signature by another key name none, so that nobody can have
// failures recorded against an account by naming it (the third review's low findings).
func TestSignIn_ARefusalNamesTheAccountOnlyOnceItsPasskeySigned(t *testing.T) {
	f := newFixture(t, nil)
	acct := f.account(userA)
	k, _ := f.register(acct, "Key", nil)
	other, _ := f.register(f.account(userB), "Other", nil)
	forged := *k
	forged.key = other.key // the account's credential ID and handle, another key's signature
	named := func(err error, reason, want string) {
		t.Helper()
		wantRefused(t, err, reason)
		var r *Refusal
		if errors.As(err, &r); r.UserID != want {
			t.Errorf("%s: the refusal names account %q, want %q", reason, r.UserID, want)
		}
	}
	other.handle = []byte(userA) // userB's passkey, sent under userA's handle
	_, err := f.signIn(other, origin, true)
	named(err, ReasonUnknownPasskey, "")
	_, err = f.signIn(k, origin, false)
	named(err, ReasonUserVerification, "")
	_, err = f.signIn(&forged, origin, true)
	named(err, ReasonInvalid, "")

	if _, err := f.signIn(k, origin, true); err != nil {
		t.Fatal(err)
	}
	clone := *k
	clone.count = 0 // behind the counter the sign-in above stored
	_, err = f.signIn(&clone, origin, true)
	named(err, ReasonCloned, userA)
	f.accts[userA].Disabled = true
	_, err = f.signIn(k, origin, true)
	named(err, ReasonDisabled, userA)
}
