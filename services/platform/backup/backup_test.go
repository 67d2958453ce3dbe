package backup_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/backup"
)

// fill writes one key of every type the services use, some with a lifetime, and returns what a
// restored store must hold: each key's DUMP and its absolute expiry (0: none).
func fill(t *testing.T, rdb redis.UniversalClient, n int) map[string]entry {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		tag := fmt.Sprintf("{u%d}", i) // spread over the Cluster's slots
		p := rdb.Pipeline()
		p.Set(ctx, "forms:r:waitlist:"+tag, fmt.Sprintf(`{"email":"person%d@example.com"}`, i), 0)
		p.HSet(ctx, "auth:u:"+tag, "email", fmt.Sprintf("person%d@example.com", i), "hash", "$argon2id$…")
		p.ZAdd(ctx, "auth:subject:"+tag+":grants", redis.Z{Score: float64(i), Member: "family-a"}, redis.Z{Score: 2, Member: "family-b"})
		p.Set(ctx, "auth:sso:"+tag, "session", time.Hour)
		p.RPush(ctx, "fs:"+tag+":outbox", "one", "two")
		p.XAdd(ctx, &redis.XAddArgs{Stream: "auth:audit:" + tag, Values: map[string]any{"kind": "signin.password"}})
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return snapshot(t, rdb)
}

// entry is a key as a store holds it: its DUMP and its absolute end in ms (-1: none).
type entry struct {
	dump string
	end  int64
}

// snapshot is every key of a store.
func snapshot(t *testing.T, rdb redis.UniversalClient) map[string]entry {
	t.Helper()
	ctx := context.Background()
	out := map[string]entry{}
	err := each(ctx, rdb, func(node redis.UniversalClient) error {
		iter := node.Scan(ctx, 0, "*", 100).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			dump, err := node.Dump(ctx, k).Result()
			if err != nil {
				return err
			}
			at, err := node.Do(ctx, "PEXPIRETIME", k).Int64()
			if err != nil {
				return err
			}
			out[k] = entry{dump, at}
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// each runs fn on every master of a Cluster, one at a time (ForEachMaster calls its function from
// goroutines of its own, all at once), or once on any other client.
func each(ctx context.Context, rdb redis.UniversalClient, fn func(redis.UniversalClient) error) error {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		return cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return fn(c)
		})
	}
	return fn(rdb)
}

// clearFile reads the backups these tests write without encryption (encryption_test.go has the rest).
var clearFile = backup.ReadOptions{AllowClear: true}

func source(b []byte) backup.Source {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

// equal compares two stores: the same keys, values and types, and the same ends to within a second
// (a backup reads each key's remaining lifetime, in ms, and adds it to its own clock).
func equal(t *testing.T, what string, got, want map[string]entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d keys, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || g.dump != w.dump {
			t.Fatalf("%s: %q is %x, want %x", what, k, g.dump, w.dump)
		}
		if (g.end < 0) != (w.end < 0) || g.end-w.end > 1000 || w.end-g.end > 1000 {
			t.Fatalf("%s: %q ends at %d, want %d", what, k, g.end, w.end)
		}
	}
}

// A backup restored into an empty store gives back every key with its value, type and end; the
// counts say what was in it.
func TestWriteRestore_EveryKeyBackWithItsEnd(t *testing.T) {
	ctx := context.Background()
	src, dst := testredis.Start(t).Client(), testredis.Start(t).Client()
	want := fill(t, src, 50)
	var buf bytes.Buffer
	st, err := backup.Write(ctx, src, &buf, backup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Keys != 300 || st.ByPrefix["forms"] != 50 || st.ByPrefix["auth"] != 200 || st.ByPrefix["fs"] != 50 || st.Header.RedisVersion == "" {
		t.Fatalf("backup stats %+v", st)
	}
	checked, err := backup.Check(bytes.NewReader(buf.Bytes()), clearFile)
	if err != nil || checked.Keys != 300 {
		t.Fatalf("check: %+v %v", checked, err)
	}
	rs, err := backup.Restore(ctx, dst, source(buf.Bytes()), backup.RestoreOptions{Read: clearFile})
	if err != nil || rs.Restored != 300 || rs.Expired != 0 {
		t.Fatalf("restore: %+v %v", rs, err)
	}
	equal(t, "restored", snapshot(t, dst), want)
}

// A key whose end passed between the backup and the restore is not brought back; one still alive
// keeps its original end (the restore does not give it a new lifetime).
func TestRestore_KeysThatEndedMeanwhileStayGone(t *testing.T) {
	ctx := context.Background()
	src, dst := testredis.Start(t).Client(), testredis.Start(t).Client()
	src.Set(ctx, "auth:code:{a}", "short", time.Minute)
	src.Set(ctx, "auth:grant:{a}", "long", 2*time.Hour)
	src.Set(ctx, "forms:r:contact:{a}", "forever", 0)
	var buf bytes.Buffer
	if _, err := backup.Write(ctx, src, &buf, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return time.Now().Add(10 * time.Minute) }
	rs, err := backup.Restore(ctx, dst, source(buf.Bytes()), backup.RestoreOptions{Read: clearFile, Now: later})
	if err != nil || rs.Restored != 2 || rs.Expired != 1 {
		t.Fatalf("restore: %+v %v", rs, err)
	}
	if dst.Exists(ctx, "auth:code:{a}").Val() != 0 {
		t.Fatal("a key that had ended was restored")
	}
	srcEnd := src.Do(ctx, "PEXPIRETIME", "auth:grant:{a}").Val().(int64)
	dstEnd := dst.Do(ctx, "PEXPIRETIME", "auth:grant:{a}").Val().(int64)
	if d := dstEnd - srcEnd; d < -1000 || d > 1000 {
		t.Fatalf("the grant ends at %d after the restore, %d before", dstEnd, srcEnd)
	}
	if dst.TTL(ctx, "forms:r:contact:{a}").Val() != -1 {
		t.Fatal("a key without an end got one")
	}
}

// A target that holds keys is refused before anything is written; Replace overwrites.
func TestRestore_NotEmptyRefusedWholeUnlessReplace(t *testing.T) {
	ctx := context.Background()
	src, dst := testredis.Start(t).Client(), testredis.Start(t).Client()
	want := fill(t, src, 5)
	var buf bytes.Buffer
	if _, err := backup.Write(ctx, src, &buf, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	dst.Set(ctx, "forms:r:waitlist:{u0}", "newer", 0)
	if _, err := backup.Restore(ctx, dst, source(buf.Bytes()), backup.RestoreOptions{Read: clearFile}); !errors.Is(err, backup.ErrNotEmpty) {
		t.Fatalf("into a store with a key: %v, want ErrNotEmpty", err)
	}
	if n := dst.DBSize(ctx).Val(); n != 1 {
		t.Fatalf("the refused restore wrote: %d keys", n)
	}
	if _, err := backup.Restore(ctx, dst, source(buf.Bytes()), backup.RestoreOptions{Read: clearFile, Replace: true}); err != nil {
		t.Fatal(err)
	}
	equal(t, "replaced", snapshot(t, dst), want)
}

// A damaged file — cut short anywhere, a byte changed, another file — is refused whole: nothing is
// written, and the error says why.
func TestRestore_DamagedFileWritesNothing(t *testing.T) {
	ctx := context.Background()
	src, dst := testredis.Start(t).Client(), testredis.Start(t).Client()
	fill(t, src, 20)
	var buf bytes.Buffer
	if _, err := backup.Write(ctx, src, &buf, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	var bad [][]byte
	for _, n := range []int{0, 1, 10, len(good) / 3, len(good) / 2, len(good) - 30, len(good) - 1} {
		bad = append(bad, good[:n])
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	bad = append(bad, flipped, []byte("REDIS0011 an RDB file, not ours"))
	for i, b := range bad {
		_, err := backup.Restore(ctx, dst, source(b), backup.RestoreOptions{Read: clearFile})
		if !errors.Is(err, backup.ErrDamaged) {
			t.Errorf("damaged file %d (%d of %d bytes): %v, want ErrDamaged", i, len(b), len(good), err)
		}
		if n := dst.DBSize(ctx).Val(); n != 0 {
			t.Fatalf("damaged file %d wrote %d keys", i, n)
		}
	}
}

// The managed single Redis to a Cluster and back: the same keys, each on its slot's master.
func TestWriteRestore_StandaloneToClusterAndBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	ctx := context.Background()
	single, cluster, back := testredis.Start(t).Client(), testredis.StartCluster(t, 3, 0).Client(), testredis.Start(t).Client()
	want := fill(t, single, 40)
	var one, two bytes.Buffer
	if _, err := backup.Write(ctx, single, &one, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(ctx, cluster, source(one.Bytes()), backup.RestoreOptions{Read: clearFile}); err != nil {
		t.Fatal(err)
	}
	equal(t, "in the cluster", snapshot(t, cluster), want)
	st, err := backup.Write(ctx, cluster, &two, backup.Options{})
	if err != nil || st.Keys != int64(len(want)) {
		t.Fatalf("backup of the cluster: %+v %v", st, err)
	}
	if _, err := backup.Restore(ctx, back, source(two.Bytes()), backup.RestoreOptions{Read: clearFile}); err != nil {
		t.Fatal(err)
	}
	equal(t, "back on one node", snapshot(t, back), want)
}

// Match limits a backup to some keys (a shared Redis: only formsservice's).
func TestWrite_Match(t *testing.T) {
	ctx := context.Background()
	src := testredis.Start(t).Client()
	fill(t, src, 3)
	src.Set(ctx, "someone-else:key", "x", 0)
	var buf bytes.Buffer
	st, err := backup.Write(ctx, src, &buf, backup.Options{Match: []string{"forms:*", "fs:*"}})
	if err != nil || st.Keys != 6 || st.ByPrefix["forms"] != 3 || st.ByPrefix["fs"] != 3 || len(st.Header.Match) != 2 {
		t.Fatalf("%+v %v", st, err)
	}
}

// FuzzCheck: no input makes the reader panic or allocate past its bounds; only a whole backup passes.
func FuzzCheck(f *testing.F) {
	ctx := context.Background()
	src := testredis.Start(f).Client()
	src.Set(ctx, "forms:r:waitlist:{a}", "x", time.Hour)
	src.HSet(ctx, "auth:u:{a}", "email", "a@example.com")
	var buf bytes.Buffer
	if _, err := backup.Write(ctx, src, &buf, backup.Options{}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := backup.Check(bytes.NewReader(b), clearFile)
		if err == nil && st.Header.Format != backup.Format {
			t.Fatalf("accepted without a header: %+v", st)
		}
	})
}

// A key written into the target by someone else after the emptiness check stops the restore with its
// name (BUSYKEY), rather than being overwritten. The second opening of the file, which the restore does
// after its checks, is where the test writes it.
func TestRestore_AKeyWrittenMeanwhileStopsIt(t *testing.T) {
	ctx := context.Background()
	src, dst := testredis.Start(t).Client(), testredis.Start(t).Client()
	src.Set(ctx, "fs:{waitlist}:entries", "from the backup", 0)
	var buf bytes.Buffer
	if _, err := backup.Write(ctx, src, &buf, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	opened := 0
	open := func() (io.ReadCloser, error) {
		if opened++; opened == 2 {
			dst.Set(ctx, "fs:{waitlist}:entries", "written meanwhile", 0)
		}
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}
	_, err := backup.Restore(ctx, dst, open, backup.RestoreOptions{Read: clearFile})
	if !errors.Is(err, backup.ErrNotEmpty) || !strings.Contains(err.Error(), `"fs:{waitlist}:entries" was written during the restore`) {
		t.Fatalf("restore: %v", err)
	}
	if v := dst.Get(ctx, "fs:{waitlist}:entries").Val(); v != "written meanwhile" {
		t.Fatalf("the newer value was overwritten: %q", v)
	}
}

// A backup of a Redis shared with another program holds its keys too: a restore writes only the
// product's (fs:, forms:, auth:) and counts the others, unless asked for every key.
func TestRestore_OnlyOurKeysUnlessAllKeys(t *testing.T) {
	ctx := context.Background()
	src := testredis.Start(t).Client()
	for _, k := range []string{"fs:{w}:entries", "forms:r:contact", "auth:u:{a}", "sessions:other-app", "auth", "queue:jobs"} {
		src.Set(ctx, k, "v", 0)
	}
	var buf bytes.Buffer
	if _, err := backup.Write(ctx, src, &buf, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	ourDst := testredis.Start(t).Client()
	st, err := backup.Restore(ctx, ourDst, source(buf.Bytes()), backup.RestoreOptions{Read: clearFile})
	if err != nil || st.Restored != 3 || st.Foreign != 3 {
		t.Fatalf("restore: %+v %v, want 3 restored and 3 foreign", st, err)
	}
	if got := ourDst.Keys(ctx, "*").Val(); len(got) != 3 || ourDst.Exists(ctx, "sessions:other-app", "auth", "queue:jobs").Val() != 0 {
		t.Fatalf("restored keys %v", got)
	}
	allDst := testredis.Start(t).Client()
	st, err = backup.Restore(ctx, allDst, source(buf.Bytes()), backup.RestoreOptions{Read: clearFile, AllKeys: true})
	if err != nil || st.Restored != 6 || st.Foreign != 0 || allDst.DBSize(ctx).Val() != 6 {
		t.Fatalf("restore with AllKeys: %+v %v", st, err)
	}
}
