package backup_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/platform/backup"
)

// failoverAfterFirstScan is a client of a primary that fails over to its replica right after the
// backup's first SCAN answered: the replica is promoted, the primary killed, and the client's address
// (a Service's, a Sentinel's answer) now leads to the replica. It returns the new primary.
func failoverAfterFirstScan(t *testing.T, primary, replica *testredis.Server) *redis.Client {
	t.Helper()
	var addr atomic.Value
	addr.Store(primary.Addr())
	c := redis.NewClient(&redis.Options{
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr.Load().(string))
		},
	})
	t.Cleanup(func() { c.Close() })
	var done atomic.Bool
	c.AddHook(scanHook(func() {
		if done.Swap(true) {
			return
		}
		if err := replica.Client().ReplicaOf(context.Background(), "NO", "ONE").Err(); err != nil {
			t.Error(err)
		}
		addr.Store(replica.Addr())
		primary.Kill()
		<-primary.Done()
	}))
	return c
}

// scanHook runs after every SCAN's answer.
type scanHook func()

func (scanHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h scanHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "scan" {
			h()
		}
		return err
	}
}
func (scanHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A failover in the middle of a backup fails it with ErrFailover — SCAN's cursor from the old primary
// means nothing on the new one, and continuing would skip keys under a trailer that calls the file
// whole — and a new backup (the Job's next try) on the new primary holds every key.
func TestWrite_FailoverMidBackupFailsIt(t *testing.T) {
	ctx := context.Background()
	primary := testredis.Start(t)
	host, port, _ := net.SplitHostPort(primary.Addr())
	replica := testredis.Start(t, testredis.Options{Args: []string{"--replicaof", host, port}})
	want := fill(t, primary.Client(), 200) // 1200 keys: several SCAN batches
	testwait.For(t, 30*time.Second, "the replica synced", func() bool {
		info := replica.Client().Info(ctx, "replication").Val()
		return strings.Contains(info, "master_link_status:up") && replica.Client().DBSize(ctx).Val() == int64(len(want))
	})

	rdb := failoverAfterFirstScan(t, primary, replica)
	var buf bytes.Buffer
	st, err := backup.Write(ctx, rdb, &buf, backup.Options{})
	if !errors.Is(err, backup.ErrFailover) {
		t.Fatalf("a backup across a failover: %v (%d of %d keys), want ErrFailover", err, st.Keys, len(want))
	}
	if !strings.Contains(err.Error(), "run_id") {
		t.Fatalf("the error does not say what changed: %v", err)
	}

	buf.Reset()
	st, err = backup.Write(ctx, rdb, &buf, backup.Options{})
	if err != nil || st.Keys != int64(len(want)) {
		t.Fatalf("the next try on the new primary: %+v %v, want %d keys", st, err, len(want))
	}
	dst := testredis.Start(t).Client()
	if _, err := backup.Restore(ctx, dst, source(buf.Bytes()), backup.RestoreOptions{Read: clearFile}); err != nil {
		t.Fatal(err)
	}
	equal(t, "restored from the next try", snapshot(t, dst), want)
}
