package users_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/users"
)

// cheap is a deliberately weak argon2id setting FOR TESTS ONLY.
var cheap = users.Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1}

func newStore(t *testing.T) (*users.Store, *redis.Client) {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return users.NewStore(rdb, users.NewHasher(cheap, 2)), rdb
}

func TestCreate_ConcurrentSameEmailInAnyCase_OneUser(t *testing.T) {
	s, _ := newStore(t)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			email := "Ada@Example.com"
			if i%2 == 0 {
				email = strings.ToUpper(email)
			}
			_, errs[i] = s.Create(context.Background(), email, "Ada", "a long password")
		}()
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, users.ErrEmailTaken):
			t.Fatalf("create: %v", err)
		}
	}
	if created != 1 {
		t.Fatalf("%d users created for one address, want 1", created)
	}
	u, err := s.ByEmail(context.Background(), "ada@EXAMPLE.com")
	if err != nil || u.Email != "ada@example.com" {
		t.Fatalf("by e-mail: %+v %v", u, err)
	}
}

func TestAuthenticate_RightWrongUnknown(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, "ada@example.com", "Ada", "a long password"); err != nil {
		t.Fatal(err)
	}
	if u, err := s.Authenticate(ctx, "ADA@example.com ", "a long password"); err != nil || u.Email != "ada@example.com" {
		t.Fatalf("right password: %v", err)
	}
	for _, c := range []struct {
		email, password string
		want            error // which failure, for the audit trail; all are ErrBadCredentials
	}{
		{"ada@example.com", "wrong password", users.ErrWrongPassword},
		{"nobody@example.com", "a long password", users.ErrUnknownAccount},
		{"not an address", "x", users.ErrUnknownAccount},
	} {
		u, err := s.Authenticate(ctx, c.email, c.password)
		if !errors.Is(err, users.ErrBadCredentials) || !errors.Is(err, c.want) {
			t.Fatalf("%v: %v, want ErrBadCredentials and %v", c, err, c.want)
		}
		if (c.want == users.ErrWrongPassword) != (u != nil) {
			t.Fatalf("%v: user %v: only a wrong password names the account (for the audit trail)", c, u)
		}
	}
	if _, err := s.SetDisabled(ctx, "ada@example.com", true); err != nil {
		t.Fatal(err)
	}
	if u, err := s.Authenticate(ctx, "ada@example.com", "a long password"); !errors.Is(err, users.ErrDisabled) || !errors.Is(err, users.ErrBadCredentials) || u == nil {
		t.Fatalf("disabled account, right password: %v %v, want ErrDisabled (a bad credential) naming the user", u, err)
	}
}

func TestAuthenticate_OldParameters_RehashedOnSuccess(t *testing.T) {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	old := users.NewStore(rdb, users.NewHasher(cheap, 1))
	u, err := old.Create(ctx, "ada@example.com", "", "a long password")
	if err != nil {
		t.Fatal(err)
	}
	stronger := users.Params{MemoryKiB: 128, Iterations: 2, Parallelism: 1}
	s := users.NewStore(rdb, users.NewHasher(stronger, 1))
	if _, err := s.Authenticate(ctx, "ada@example.com", "a long password"); err != nil {
		t.Fatal(err)
	}
	got, _ := s.ByID(ctx, u.ID)
	if !strings.Contains(got.Hash, "m=128,t=2,p=1") {
		t.Fatalf("hash not upgraded: %s", got.Hash)
	}
	if _, err := s.Authenticate(ctx, "ada@example.com", "a long password"); err != nil {
		t.Fatalf("after the upgrade: %v", err)
	}
}

func TestDelete_ThenCreateAgain_NewSubject(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	a, _ := s.Create(ctx, "ada@example.com", "", "a long password")
	if _, err := s.Delete(ctx, "ADA@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ByID(ctx, a.ID); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("deleted user still found: %v", err)
	}
	b, err := s.Create(ctx, "ada@example.com", "", "a long password")
	if err != nil || b.ID == a.ID {
		t.Fatalf("re-created user: %v, same subject %v", err, b != nil && b.ID == a.ID)
	}
}

func TestCreate_OrphanedEmailIndex_TakenOver(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	// A crash between the two writes of Create leaves an index pointing at no user.
	if err := rdb.Set(ctx, "auth:email:{ada@example.com}", "0123456789abcdef0123456789abcdef", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ByEmail(ctx, "ada@example.com"); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("orphan resolves: %v", err)
	}
	if _, err := s.Create(ctx, "ada@example.com", "", "a long password"); err != nil {
		t.Fatalf("create over an orphaned index: %v", err)
	}
}

func TestCreate_Validation(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, email := range []string{"", "plain", "a@b", "a b@example.com", "<a@example.com>", "a@@example.com", strings.Repeat("a", 65) + "@example.com", "a@example..com", "a..b@example.com", ".a@example.com"} {
		if _, err := s.Create(ctx, email, "", "a long password"); !errors.Is(err, users.ErrInvalidEmail) {
			t.Errorf("%q: %v, want ErrInvalidEmail", email, err)
		}
	}
	for _, pw := range []string{"", "short", strings.Repeat("x", 257)} {
		if _, err := s.Create(ctx, "ada@example.com", "", pw); !errors.Is(err, users.ErrWeakPassword) {
			t.Errorf("password of %d: %v, want ErrWeakPassword", len(pw), err)
		}
	}
}

// The account store and the waitlist share one address rule: an internationalised domain and its ASCII
// spelling are the same account.
func TestCreate_IDNAndASCIISpellingsAreOneAccount(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, "Zoe@Bücher.de", "", "a long password"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "zoe@xn--bcher-kva.de", "", "a long password"); !errors.Is(err, users.ErrEmailTaken) {
		t.Fatalf("second spelling of one address: %v, want ErrEmailTaken", err)
	}
	if _, err := s.ByEmail(ctx, "ZOE@xn--bcher-kva.de"); err != nil {
		t.Fatalf("sign-in spelling: %v", err)
	}
}

func TestList_EveryUser(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for i := range 250 {
		if _, err := s.Create(ctx, fmt.Sprintf("u%d@example.com", i), "", "a long password"); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := s.List(ctx, func(*users.User) error { n++; return nil }); err != nil || n != 250 {
		t.Fatalf("listed %d users (%v), want 250", n, err)
	}
}

// TestHasher_BoundedPool: with a pool of one, a second hash waits for the first, and a caller whose
// context ends while waiting gets ErrBusy instead of allocating another hash's memory.
func TestHasher_BoundedPool(t *testing.T) {
	slow := users.Params{MemoryKiB: 4 << 10, Iterations: 8, Parallelism: 1}
	h := users.NewHasher(slow, 1)
	release := h.HoldSlot() // the only slot is taken, as by a hash in progress
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := h.Hash(ctx, "another password"); !errors.Is(err, users.ErrBusy) {
		t.Fatalf("hash while the pool is full: %v, want ErrBusy", err)
	}
	h.MaxWait = 20 * time.Millisecond // a request context without a deadline is bounded too
	if _, _, err := h.Verify(context.Background(), "$argon2id$v=19$m=64,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "x"); !errors.Is(err, users.ErrBusy) {
		t.Fatalf("verify while the pool is full: %v, want ErrBusy", err)
	}

	// A caller that can wait gets the slot once it is freed.
	h.MaxWait = 10 * time.Second
	type hashed struct {
		enc string
		err error
	}
	waiting := make(chan hashed, 1)
	go func() {
		enc, err := h.Hash(context.Background(), "a long password")
		waiting <- hashed{enc, err}
	}()
	select {
	case r := <-waiting:
		t.Fatalf("a hash ran while the pool was full: %v", r.err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	r := <-waiting
	enc, err := r.enc, r.err
	if err != nil {
		t.Fatal(err)
	}
	if h.InUse() != 0 {
		t.Fatalf("%d slots still in use after every hash returned", h.InUse())
	}
	if ok, rehash, err := h.Verify(context.Background(), enc, "a long password"); !ok || rehash || err != nil {
		t.Fatalf("verify: %v %v %v", ok, rehash, err)
	}
	if ok, _, _ := h.Verify(context.Background(), enc, "A long password"); ok {
		t.Fatal("a different password verified")
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=64,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=99999999,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		if ok, _, _ := h.Verify(context.Background(), bad, "x"); ok {
			t.Fatalf("%q verified", bad)
		}
	}
}

// A new account's address is unverified; SetVerified verifies it only while the account has the address
// the link was sent to, and an unknown account is ErrNotFound.
func TestSetVerified_OnlyTheAddressItWasSentTo(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	u, err := s.Create(ctx, "ada@example.com", "Ada", "a long password")
	if err != nil {
		t.Fatal(err)
	}
	if u.EmailVerified {
		t.Fatal("a new account is verified")
	}
	if err := s.SetVerified(ctx, u.ID, "other@example.com"); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("another address: %v, want ErrNotFound", err)
	}
	if err := s.SetVerified(ctx, "nobody", "ada@example.com"); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("an unknown account: %v, want ErrNotFound", err)
	}
	if got, _ := s.ByID(ctx, u.ID); got.EmailVerified {
		t.Fatal("verified by a refused call")
	}
	if err := s.SetVerified(ctx, u.ID, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ByEmail(ctx, "ada@example.com"); !got.EmailVerified {
		t.Fatal("not verified")
	}
}
