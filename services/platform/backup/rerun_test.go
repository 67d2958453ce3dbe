package backup_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/backup"
)

// A restore interrupted halfway (here its second reading of the file breaks off after some batches
// are written) can be run again into the store it half filled, without --replace, and ends with the
// same store a whole restore gives; the marker it kept meanwhile is gone at the end. Another backup
// is refused in that store: it would mix two.
func TestRestore_AnInterruptedRestoreRunsAgainToTheSameEnd(t *testing.T) {
	ctx := context.Background()
	src, dst := testredis.Start(t).Client(), testredis.Start(t).Client()
	want := fill(t, src, 200) // 1200 keys: several batches
	var buf bytes.Buffer
	if _, err := backup.Write(ctx, src, &buf, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	file := buf.Bytes()
	opened := 0
	breaksOff := func() (io.ReadCloser, error) {
		if opened++; opened == 2 { // the check reads it whole; the writing breaks off at 70%
			return io.NopCloser(io.MultiReader(bytes.NewReader(file[:len(file)*7/10]), failingReader{})), nil
		}
		return io.NopCloser(bytes.NewReader(file)), nil
	}
	if _, err := backup.Restore(ctx, dst, breaksOff, backup.RestoreOptions{Read: clearFile}); err == nil {
		t.Fatal("a restore whose reading broke off succeeded")
	}
	if n := dst.DBSize(ctx).Val(); n <= 1 || n > int64(len(want)) {
		t.Fatalf("the interrupted restore wrote %d keys; the test wants part of them", n)
	}

	other := testredis.Start(t).Client()
	other.Set(ctx, "auth:u:{other}", "x", 0)
	var otherBuf bytes.Buffer
	if _, err := backup.Write(ctx, other, &otherBuf, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(ctx, dst, source(otherBuf.Bytes()), backup.RestoreOptions{Read: clearFile}); !errors.Is(err, backup.ErrNotEmpty) || !strings.Contains(err.Error(), "another backup") {
		t.Fatalf("another backup into the half-filled store: %v, want ErrNotEmpty", err)
	}

	// Replace says the store's keys may go: the other backup is written over the interrupted one.
	replaced := testredis.Start(t).Client()
	for _, k := range []string{backup.MarkerKey, "auth:u:{stale}"} {
		replaced.Set(ctx, k, "from an interrupted restore", 0)
	}
	if _, err := backup.Restore(ctx, replaced, source(otherBuf.Bytes()), backup.RestoreOptions{Read: clearFile, Replace: true}); err != nil ||
		replaced.Exists(ctx, backup.MarkerKey).Val() != 0 || replaced.Get(ctx, "auth:u:{other}").Val() != "x" {
		t.Fatalf("another backup with Replace over an interrupted restore: %v", err)
	}

	afterRuns := 0
	st, err := backup.Restore(ctx, dst, source(file), backup.RestoreOptions{Read: clearFile,
		After: func(context.Context) error { afterRuns++; return nil }})
	if err != nil || st.Restored != int64(len(want)) || afterRuns != 1 {
		t.Fatalf("the restore run again: %+v %v (After ran %d times)", st, err, afterRuns)
	}
	equal(t, "after the second run", snapshot(t, dst), want) // the marker is gone too: no extra key
	if _, err := backup.Restore(ctx, dst, source(file), backup.RestoreOptions{Read: clearFile}); !errors.Is(err, backup.ErrNotEmpty) {
		t.Fatalf("a finished restore run a third time: %v, want ErrNotEmpty", err)
	}
}

// When After fails (the CLI's sign-out), the restore is not finished: running it again writes the keys
// again and runs After again.
func TestRestore_AFailedAfterLeavesItToRunAgain(t *testing.T) {
	ctx := context.Background()
	src, dst := testredis.Start(t).Client(), testredis.Start(t).Client()
	want := fill(t, src, 3)
	var buf bytes.Buffer
	if _, err := backup.Write(ctx, src, &buf, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("signing out failed")
	if _, err := backup.Restore(ctx, dst, source(buf.Bytes()), backup.RestoreOptions{Read: clearFile,
		After: func(context.Context) error { return boom }}); !errors.Is(err, boom) {
		t.Fatalf("restore: %v, want After's error", err)
	}
	if dst.Exists(ctx, backup.MarkerKey).Val() != 1 {
		t.Fatal("the marker is gone though After failed")
	}
	if _, err := backup.Restore(ctx, dst, source(buf.Bytes()), backup.RestoreOptions{Read: clearFile}); err != nil {
		t.Fatal(err)
	}
	equal(t, "after the second run", snapshot(t, dst), want)
}

// A target whose maxmemory leaves too little room for the backup is refused before anything is
// written, with the sizes, rather than filled until Redis answers OOM halfway.
func TestRestore_TooLittleMemoryRefusedBeforeWriting(t *testing.T) {
	ctx := context.Background()
	src := testredis.Start(t).Client()
	for i := range 8 {
		v := make([]byte, 1<<20) // random: DUMP cannot compress it
		if _, err := rand.Read(v); err != nil {
			t.Fatal(err)
		}
		src.Set(ctx, fmt.Sprintf("forms:r:upload:{%d}", i), v, 0)
	}
	var buf bytes.Buffer
	if _, err := backup.Write(ctx, src, &buf, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	small := testredis.Start(t, testredis.Options{Args: []string{"--maxmemory", "6mb", "--maxmemory-policy", "noeviction"}}).Client()
	_, err := backup.Restore(ctx, small, source(buf.Bytes()), backup.RestoreOptions{Read: clearFile})
	if !errors.Is(err, backup.ErrNoRoom) || !strings.Contains(err.Error(), "maxmemory 6.0 MiB") || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("restore into a small store: %v, want ErrNoRoom with the sizes", err)
	}
	if n := small.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("the refused restore wrote %d keys", n)
	}
	big := testredis.Start(t, testredis.Options{Args: []string{"--maxmemory", "64mb"}}).Client()
	if st, err := backup.Restore(ctx, big, source(buf.Bytes()), backup.RestoreOptions{Read: clearFile}); err != nil || st.Restored != 8 {
		t.Fatalf("restore into a store with room: %+v %v", st, err)
	}
}

// failingReader is a connection that broke.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
