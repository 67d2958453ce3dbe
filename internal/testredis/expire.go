package testredis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// EndLifetimes stands in for the passing of time on the records that match pattern: it checks that
// each has a lifetime (a TTL) of at most atMost, then ends it at once (PEXPIREAT in the past deletes
// the key). A test of "after the window" thus asserts the bound on the record itself and waits for no
// clock; Redis's own clock cannot be injected. It fails the test when no key matches, or one has no TTL
// or a longer one, and returns how many it ended.
func EndLifetimes(tb testing.TB, rdb redis.Cmdable, pattern string, atMost time.Duration) int {
	tb.Helper()
	ctx := context.Background()
	keys, err := scanAll(ctx, rdb, pattern)
	if err != nil {
		tb.Fatalf("EndLifetimes %s: %v", pattern, err)
	}
	if len(keys) == 0 {
		tb.Fatalf("EndLifetimes: no key matches %s", pattern)
	}
	for _, k := range keys {
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil {
			tb.Fatalf("PTTL %s: %v", k, err)
		}
		if ttl < 0 || ttl > atMost {
			tb.Fatalf("%s lives %v, want a lifetime of at most %v (-1: none)", k, ttl, atMost)
		}
		if err := rdb.PExpireAt(ctx, k, time.UnixMilli(1)).Err(); err != nil {
			tb.Fatalf("PEXPIREAT %s: %v", k, err)
		}
	}
	return len(keys)
}

func scanAll(ctx context.Context, rdb redis.Cmdable, pattern string) ([]string, error) {
	var keys []string
	var cursor uint64
	for {
		batch, next, err := rdb.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return nil, err
		}
		keys = append(keys, batch...)
		if cursor = next; cursor == 0 {
			return keys, nil
		}
	}
}
