package link_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/link"
)

var (
	keyA = []byte("0123456789abcdef0123456789abcdef")
	keyB = []byte("fedcba9876543210fedcba9876543210")
)

type clock struct{ t atomic.Pointer[time.Time] }

func (c *clock) now() time.Time      { return *c.t.Load() }
func (c *clock) add(d time.Duration) { t := c.now().Add(d); c.t.Store(&t) }
func newClock() *clock {
	c := &clock{}
	t := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c.t.Store(&t)
	return c
}
func rdbOf(t *testing.T) *redis.Client {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// A link works once, for its own purpose, until it expires; a tampered, foreign or made-up one is
// invalid; a link signed under the previous key still works; Redis holds no usable link.
func TestLink_SingleUseSignedExpiring(t *testing.T) {
	ctx := context.Background()
	rdb := rdbOf(t)
	c := newClock()
	s := link.New(rdb, link.Keys{Current: keyA}, c.now)
	tok, err := s.Issue(ctx, link.Link{Purpose: "verify", User: "u1", Client: "app", Bind: "b"}, 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) > link.MaxLen {
		t.Fatalf("token of %d characters, over MaxLen", len(tok))
	}
	// Redis holds the record under a hash: neither the token nor its id appears in any key or value.
	id := strings.Split(tok, ".")[2]
	keys, _ := rdb.Keys(ctx, "*").Result()
	for _, k := range keys {
		v, _ := rdb.Get(ctx, k).Result()
		if strings.Contains(k, id) || strings.Contains(v, id) {
			t.Fatalf("Redis holds the link's secret: %s = %s", k, v)
		}
	}
	if _, err := s.Peek(ctx, tok, "reset"); !errors.Is(err, link.ErrInvalid) {
		t.Fatalf("a verification link used as a reset link: %v", err)
	}
	if l, err := s.Peek(ctx, tok, "verify"); err != nil || l.User != "u1" {
		t.Fatalf("peek: %+v %v", l, err)
	}
	l, err := s.Use(ctx, tok, "verify")
	if err != nil || l.User != "u1" || l.Client != "app" || l.Bind != "b" {
		t.Fatalf("use: %+v %v", l, err)
	}
	if _, err := s.Use(ctx, tok, "verify"); !errors.Is(err, link.ErrUsed) {
		t.Fatalf("second use: %v, want ErrUsed", err)
	}

	for name, bad := range map[string]string{
		"empty":         "",
		"garbage":       "hello",
		"id changed":    strings.Replace(tok, id, strings.Repeat("A", len(id)), 1),
		"mac dropped":   tok[:strings.LastIndex(tok, ".")],
		"expiry moved":  strings.Join(append(strings.Split(tok, ".")[:3], "9999999999", strings.Split(tok, ".")[4]), "."),
		"purpose moved": strings.Replace(tok, ".verify.", ".reset.", 1),
		"too long":      tok + strings.Repeat("A", link.MaxLen),
		// a decoder skips CR and LF: without the check of the spelling these decode to tok's id and MAC
		"CR in the mac": tok[:len(tok)-4] + "\r" + tok[len(tok)-4:],
		"LF in the id":  strings.Replace(tok, id, id[:4]+"\n"+id[4:], 1),
	} {
		if _, err := s.Use(ctx, bad, "verify"); !errors.Is(err, link.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	other := link.New(rdb, link.Keys{Current: keyB}, c.now)
	forged, _ := other.Issue(ctx, link.Link{Purpose: "verify", User: "u1"}, time.Minute)
	if _, err := s.Use(ctx, forged, "verify"); !errors.Is(err, link.ErrInvalid) {
		t.Fatalf("a link of another key: %v, want ErrInvalid", err)
	}
	rotated := link.New(rdb, link.Keys{Current: keyA, Others: [][]byte{keyB}}, c.now)
	if _, err := rotated.Use(ctx, forged, "verify"); err != nil {
		t.Fatalf("a link signed before a rotation: %v", err)
	}

	late, _ := s.Issue(ctx, link.Link{Purpose: "reset", User: "u1"}, 15*time.Minute)
	c.add(15*time.Minute + 2*time.Second)
	if _, err := s.Use(ctx, late, "reset"); !errors.Is(err, link.ErrExpired) {
		t.Fatalf("after its lifetime: %v, want ErrExpired", err)
	}
}

// Of 50 parallel uses of one link exactly one redeems it.
func TestLink_ParallelUsesRedeemOnce(t *testing.T) {
	ctx := context.Background()
	s := link.New(rdbOf(t), link.Keys{Current: keyA}, nil)
	tok, err := s.Issue(ctx, link.Link{Purpose: "reset", User: "u1"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var ok, used atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_, err := s.Use(ctx, tok, "reset")
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, link.ErrUsed):
				used.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || used.Load() != 49 {
		t.Fatalf("%d redeemed, %d used: want 1 and 49", ok.Load(), used.Load())
	}
}

// Whatever the input, Use answers one of its errors or a link, never a panic.
func FuzzUse(f *testing.F) {
	f.Add("v1.verify.AAAAAAAAAAAAAAAAAAAAAA.1893553445.AAAA")
	f.Add("v1.reset..1.")
	f.Add("....")
	s := link.New(nil, link.Keys{Current: keyA}, nil)
	f.Fuzz(func(t *testing.T, tok string) {
		_, err := s.Use(context.Background(), tok, "verify") // nil Redis: only a signed link would reach it
		if !errors.Is(err, link.ErrInvalid) && !errors.Is(err, link.ErrExpired) {
			t.Fatalf("%q: %v", tok, err)
		}
	})
}
