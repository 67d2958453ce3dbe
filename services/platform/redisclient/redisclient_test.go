package redisclient

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A store that accepts connections but never answers must not hang a request: the command fails within
// the configured timeout, and the client works again once the store is back.
func TestNew_PausedStoreFailsWithinTimeoutAndRecovers(t *testing.T) {
	srv := testredis.Start(t)
	rdb, err := New(config.Redis{URL: srv.URL(), Timeout: config.Duration(300 * time.Millisecond)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	start := time.Now()
	err = rdb.Get(ctx, "k").Err()
	elapsed := time.Since(start)
	srv.Resume()
	if err == nil {
		t.Fatal("GET against a paused store succeeded")
	}
	if elapsed > 2*time.Second {
		t.Fatalf("GET against a paused store took %v, want well under 2s", elapsed)
	}
	testwait.Until(t, 3*time.Second, "recovery after resume", func() error {
		if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
			return fmt.Errorf("GET k: %q %v", v, err)
		}
		return nil
	})
}

func TestNew_StoppedStoreFailsFastAndRecoversAfterRestart(t *testing.T) {
	srv := testredis.Start(t)
	rdb, err := New(config.Redis{URL: srv.URL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	srv.Kill()
	start := time.Now()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("PING to a dead store succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("PING to a dead store took %v", d)
	}
	srv.Restart()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("no recovery after restart: %v", err)
	}
}

func TestNew_ClusterMode(t *testing.T) {
	cl := testredis.StartCluster(t, 3, 0)
	rdb, err := New(config.Redis{Addrs: cl.Addrs(), Cluster: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if err := rdb.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("SET %s on cluster: %v", k, err)
		}
	}
	if n, err := cl.Client().DBSize(ctx).Result(); err != nil || n == 0 {
		t.Fatalf("cluster DBSIZE = %d, %v", n, err)
	}
}

func TestDescribe_NamesTheStoreWithoutItsPassword(t *testing.T) {
	for c, want := range map[*config.Redis]string{
		{URL: "redis://:s3cret@127.0.0.1:6379/2"}:                    "redis://:xxxxx@127.0.0.1:6379/2",
		{URL: "rediss://app:s3cret@r.example:6380"}:                  "rediss://app:xxxxx@r.example:6380",
		{Addrs: []string{"s-0:26379", "s-1:26379"}, MasterName: "m"}: `Sentinel master "m" via s-0:26379, s-1:26379`,
		{Addrs: []string{"c-0:6379", "c-1:6379"}, Cluster: true}:     "Cluster c-0:6379, c-1:6379",
	} {
		if got := Describe(*c); got != want {
			t.Errorf("Describe(%+v) = %q, want %q", *c, got, want)
		}
	}
}
