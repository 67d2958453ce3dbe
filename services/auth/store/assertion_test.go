package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ory/fosite"
)

// A client assertion's jti is accepted once, however many replicas race with it: the mark is set only
// if absent, in one step, and lasts until the assertion expires.
func TestClientAssertionJTI_OnceUnderConcurrency(t *testing.T) {
	s, rdb := newStoreOn(t, nil)
	ctx := context.Background()
	exp := time.Now().Add(time.Minute)
	var accepted, refused atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch err := s.SetClientAssertionJWT(ctx, "jti-1", exp); {
			case err == nil:
				accepted.Add(1)
			case errors.Is(err, fosite.ErrJTIKnown):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if accepted.Load() != 1 || refused.Load() != 15 {
		t.Fatalf("accepted %d, refused %d; want 1 and 15", accepted.Load(), refused.Load())
	}
	if err := s.ClientAssertionJWTValid(ctx, "jti-1"); !errors.Is(err, fosite.ErrJTIKnown) {
		t.Fatalf("a used jti reads as %v", err)
	}
	if err := s.ClientAssertionJWTValid(ctx, "jti-2"); err != nil {
		t.Fatalf("an unused jti reads as %v", err)
	}
	keys, err := rdb.Keys(ctx, "auth:jti:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v %v", keys, err)
	}
	if ttl := rdb.PTTL(ctx, keys[0]).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("the mark lasts %v, want until the assertion's exp", ttl)
	}
}
