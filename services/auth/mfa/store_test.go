package mfa

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
)

// clock is the test's: the store checks codes against it, and the test computes codes at it.
type clock struct{ t atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.t.Store(t.Unix()); return c }
func (c *clock) now() time.Time   { return time.Unix(c.t.Load(), 0) }
func (c *clock) next()            { c.t.Add(Period) } // the next time step

func startStore(t *testing.T, sealer Sealer) (*Store, redis.UniversalClient, *clock) {
	t.Helper()
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	c := newClock(t0)
	return NewStore(rdb, sealer, c.now), rdb, c
}

// enrol sets up user's app and returns its secret and recovery codes.
func enrol(t *testing.T, s *Store, c *clock, user string) (string, []string) {
	t.Helper()
	ctx := context.Background()
	k, err := s.Pending(ctx, user, "id.example", user+"@example.com", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := Code(k.Secret, c.now())
	codes, res, err := s.Confirm(ctx, user, code)
	if err != nil || res != Accepted || len(codes) != RecoveryCodes {
		t.Fatalf("Confirm: %v %v %d codes", res, err, len(codes))
	}
	return k.Secret, codes
}

// The set-up: the secret shown stays the same across reloads until it is confirmed; a wrong code does
// not turn anything on; the right one does, with ten recovery codes.
func TestEnrolment_PendingUntilConfirmedWithACode(t *testing.T) {
	s, _, c := startStore(t, Sealer{})
	ctx := context.Background()
	k1, err := s.Pending(ctx, "u1", "id.example", "ada@example.com", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := s.Pending(ctx, "u1", "id.example", "ada@example.com", time.Hour)
	if k1.Secret != k2.Secret || k1.URI != k2.URI {
		t.Fatalf("a reload drew a new secret: %s, %s", k1.Secret, k2.Secret)
	}
	if st, _ := s.Status(ctx, "u1"); st.TOTP {
		t.Fatal("on before confirmation")
	}
	if _, res, err := s.Confirm(ctx, "u1", "000000"); err != nil || res == Accepted {
		t.Fatalf("a wrong code confirmed: %v %v", res, err)
	}
	if on, _ := s.Enrolled(ctx, "u1"); on {
		t.Fatal("on after a wrong code")
	}
	code, _ := Code(k1.Secret, c.now())
	codes, res, err := s.Confirm(ctx, "u1", " "+code[:3]+" "+code[3:])
	if err != nil || res != Accepted || len(codes) != 10 {
		t.Fatalf("Confirm: %v %v %v", codes, res, err)
	}
	st, _ := s.Status(ctx, "u1")
	if !st.TOTP || st.RecoveryLeft != 10 || !st.Since.Equal(c.now().UTC()) {
		t.Fatalf("status %+v", st)
	}
	// The code that confirmed is spent: signing in with it is a replay.
	if res, err := s.Verify(ctx, "u1", code); err != nil || res != Replayed {
		t.Fatalf("the confirming code at sign-in: %v %v, want Replayed", res, err)
	}
	if _, _, err := s.Confirm(ctx, "u1", code); err != ErrNotEnrolled {
		t.Fatalf("a second Confirm without a pending secret: %v", err)
	}
}

// A factor is never replaced by a set-up: a pending secret drawn while one is on (two tabs, or a page
// drawn before it was set up) is refused with ErrEnrolled, and the factor stays the first one (D51).
func TestEnrolment_NeverReplacesAFactor(t *testing.T) {
	s, _, c := startStore(t, Sealer{})
	ctx := context.Background()
	k, err := s.Pending(ctx, "u1", "id.example", "ada@example.com", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := enrol(t, s, c, "u1") // confirms k: the same pending secret
	if secret != k.Secret {
		t.Fatal("the enrolment did not confirm the pending secret")
	}
	other, err := s.Pending(ctx, "u1", "id.example", "ada@example.com", time.Hour) // a second tab's page
	if err != nil {
		t.Fatal(err)
	}
	c.next()
	code, _ := Code(other.Secret, c.now())
	if _, _, err := s.Confirm(ctx, "u1", code); err != ErrEnrolled {
		t.Fatalf("Confirm over a factor: %v, want ErrEnrolled", err)
	}
	c.next()
	code, _ = Code(secret, c.now())
	if res, err := s.Verify(ctx, "u1", code); err != nil || res != Accepted {
		t.Fatalf("the first factor after the refused set-up: %v %v", res, err)
	}
}

func TestEnrolment_PendingSecretEndsWithItsLifetime(t *testing.T) {
	s, rdb, c := startStore(t, Sealer{})
	ctx := context.Background()
	k, _ := s.Pending(ctx, "u1", "id.example", "ada@example.com", 15*time.Minute)
	testredis.EndLifetimes(t, rdb, "auth:mfa:{u1}:pending", 15*time.Minute)
	code, _ := Code(k.Secret, c.now())
	if _, _, err := s.Confirm(ctx, "u1", code); err != ErrNotEnrolled {
		t.Fatalf("Confirm after the lifetime: %v, want ErrNotEnrolled", err)
	}
}

// A TOTP code is accepted once: again in its window it is Replayed; the next step's code is accepted.
func TestVerify_EachCodeOnce(t *testing.T) {
	s, _, c := startStore(t, Sealer{})
	ctx := context.Background()
	secret, _ := enrol(t, s, c, "u1")
	c.next()
	code, _ := Code(secret, c.now())
	if res, err := s.Verify(ctx, "u1", code); err != nil || res != Accepted {
		t.Fatalf("first use: %v %v", res, err)
	}
	if res, _ := s.Verify(ctx, "u1", code); res != Replayed {
		t.Fatalf("second use: %v, want Replayed", res)
	}
	c.t.Add(10) // still within the code's window
	if res, _ := s.Verify(ctx, "u1", code); res != Replayed {
		t.Fatalf("second use 10 s later: %v, want Replayed", res)
	}
	c.next()
	next, _ := Code(secret, c.now())
	if res, _ := s.Verify(ctx, "u1", next); res != Accepted {
		t.Fatalf("the next step's code: %v", res)
	}
	if res, _ := s.Verify(ctx, "u1", "12345"); res != Wrong {
		t.Fatalf("five digits: %v", res)
	}
	if res, err := s.Verify(ctx, "nobody", next); err != ErrNotEnrolled || res == Accepted {
		t.Fatalf("a user without a factor: %v %v", res, err)
	}
}

// Two sign-ins racing with one code (say, a code seen over someone's shoulder): exactly one is accepted.
func TestVerify_OneCodeRacedByManyRequests_AcceptedOnce(t *testing.T) {
	s, _, c := startStore(t, Sealer{})
	secret, _ := enrol(t, s, c, "u1")
	c.next()
	code, _ := Code(secret, c.now())
	var accepted atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, err := s.Verify(context.Background(), "u1", code); err == nil && res == Accepted {
				accepted.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := accepted.Load(); n != 1 {
		t.Fatalf("%d of 32 racing uses accepted, want 1", n)
	}
}

// A recovery code works once; new codes replace the old ones; turning the factor off ends all of it.
func TestRecoveryCodes_EachOnce_ReplacedCodesStop(t *testing.T) {
	s, rdb, c := startStore(t, Sealer{})
	ctx := context.Background()
	_, codes := enrol(t, s, c, "u1")
	if ok, err := s.UseRecoveryCode(ctx, "u1", strings.ToUpper(codes[3])); err != nil || !ok {
		t.Fatalf("first use: %v %v", ok, err)
	}
	if ok, _ := s.UseRecoveryCode(ctx, "u1", codes[3]); ok {
		t.Fatal("a recovery code worked twice")
	}
	if ok, _ := s.UseRecoveryCode(ctx, "u2", codes[4]); ok {
		t.Fatal("another user's recovery code worked")
	}
	if st, _ := s.Status(ctx, "u1"); st.RecoveryLeft != 9 {
		t.Fatalf("%d left, want 9", st.RecoveryLeft)
	}
	// Stored as hashes: no code is in Redis.
	stored, _ := rdb.SMembers(ctx, "auth:mfa:{u1}:recovery").Result()
	for _, h := range stored {
		for _, code := range codes {
			if strings.Contains(h, strings.ReplaceAll(code, "-", "")) {
				t.Fatalf("Redis holds a recovery code: %s", h)
			}
		}
	}
	fresh, err := s.NewRecoveryCodes(ctx, "u1")
	if err != nil || len(fresh) != 10 {
		t.Fatal(fresh, err)
	}
	if ok, _ := s.UseRecoveryCode(ctx, "u1", codes[5]); ok {
		t.Fatal("a replaced recovery code still worked")
	}
	if ok, _ := s.UseRecoveryCode(ctx, "u1", fresh[0]); !ok {
		t.Fatal("a new recovery code did not work")
	}
	if err := s.Remove(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.UseRecoveryCode(ctx, "u1", fresh[1]); ok {
		t.Fatal("a recovery code worked after the factor was turned off")
	}
	if _, err := s.NewRecoveryCodes(ctx, "u1"); err != ErrNotEnrolled {
		t.Fatalf("new codes without a factor: %v", err)
	}
}

// With a key the secret is sealed at rest: Redis does not hold it, it opens only for its user, and a
// server without the key cannot use it (it says so instead of accepting anything).
func TestSealer_SecretSealedAtRest(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sealer, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	s, rdb, c := startStore(t, sealer)
	ctx := context.Background()
	secret, _ := enrol(t, s, c, "u1")
	stored, _ := rdb.HGet(ctx, "auth:mfa:{u1}", "totp").Result()
	if !strings.HasPrefix(stored, "s1.") || strings.Contains(stored, secret) {
		t.Fatalf("stored %q: want sealed", stored)
	}
	c.next()
	code, _ := Code(secret, c.now())
	// Another user's record holding u1's sealed secret does not open (the user's ID is sealed with it).
	rdb.HSet(ctx, "auth:mfa:{u2}", "totp", stored)
	if _, err := s.Verify(ctx, "u2", code); err != ErrSealed {
		t.Fatalf("a sealed secret copied to another user: %v, want ErrSealed", err)
	}
	keyless := NewStore(rdb, Sealer{}, c.now)
	if res, err := keyless.Verify(ctx, "u1", code); err != ErrSealed || res == Accepted {
		t.Fatalf("without the key: %v %v", res, err)
	}
	if res, err := s.Verify(ctx, "u1", code); err != nil || res != Accepted {
		t.Fatalf("with the key: %v %v", res, err)
	}
}

// A secret stored in the clear before a key was configured keeps working once there is one, and is
// sealed at its next good code (never by a wrong or replayed one); the codes go on as before.
func TestSealer_ClearSecretSealedAtItsNextGoodCode(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sealer, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	clear, rdb, c := startStore(t, Sealer{})
	ctx := context.Background()
	secret, _ := enrol(t, clear, c, "u1")
	if stored := rdb.HGet(ctx, "auth:mfa:{u1}", "totp").Val(); stored != "p."+secret {
		t.Fatalf("without a key: stored %q", stored)
	}
	sealed := NewStore(rdb, sealer, c.now)
	c.next()
	if res, err := sealed.Verify(ctx, "u1", "000000"); err != nil || res != Wrong {
		t.Fatalf("a wrong code: %v %v", res, err)
	}
	if stored := rdb.HGet(ctx, "auth:mfa:{u1}", "totp").Val(); stored != "p."+secret {
		t.Fatalf("a wrong code changed the stored secret: %q", stored)
	}
	code, _ := Code(secret, c.now())
	if res, err := sealed.Verify(ctx, "u1", code); err != nil || res != Accepted {
		t.Fatalf("the clear secret with a key configured: %v %v", res, err)
	}
	stored := rdb.HGet(ctx, "auth:mfa:{u1}", "totp").Val()
	if !strings.HasPrefix(stored, "s1.") || strings.Contains(stored, secret) {
		t.Fatalf("after a good code: stored %q, want it sealed", stored)
	}
	if res, err := sealed.Verify(ctx, "u1", code); err != nil || res != Replayed {
		t.Fatalf("the same code again: %v %v, want Replayed", res, err)
	}
	c.next()
	code, _ = Code(secret, c.now())
	if res, err := sealed.Verify(ctx, "u1", code); err != nil || res != Accepted {
		t.Fatalf("the next code against the sealed secret: %v %v", res, err)
	}
}

// A challenge carries the sign-in's state to its second step: the new-browser mark and what the grant
// needs (a connector's sealed re-check state, D78), and reads a record written before Carry existed.
func TestChallenge_CarriesTheSignInsState(t *testing.T) {
	s, rdb, _ := startStore(t, Sealer{})
	ctx := context.Background()
	for _, want := range []Pending{
		{User: "u1", First: []string{"fed"}, Generation: 3, Carry: `{"c":"upstream","s":"AbC-_","t":1}`},
		{User: "u2", First: []string{"fed"}, Generation: 0, NewBrowser: true, Carry: `{"c":"x"}`},
		{User: "u3", First: []string{"pwd"}, Generation: 1, NewBrowser: true},
		{User: "u4", First: []string{"pwd"}, Generation: 1},
	} {
		if err := s.StartChallenge(ctx, want.User, want, time.Minute); err != nil {
			t.Fatal(err)
		}
		got, err := s.Challenge(ctx, want.User)
		if err != nil || got.User != want.User || got.Generation != want.Generation || got.NewBrowser != want.NewBrowser ||
			got.Carry != want.Carry || strings.Join(got.First, ",") != strings.Join(want.First, ",") {
			t.Errorf("challenge %+v read back as %+v (%v)", want, got, err)
		}
	}
	if err := rdb.Set(ctx, challengeKey("old"), "u5|pwd|2|new", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Challenge(ctx, "old"); got.User != "u5" || !got.NewBrowser || got.Carry != "" || got.Generation != 2 {
		t.Errorf("a record of the previous form: %+v", got)
	}
}
