//go:build !formsonly

package main

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/tests3"
	"github.com/formsservice/formsservice/services/platform/backup"
	"github.com/formsservice/formsservice/services/platform/objectstore"
)

// An upload is read back before the backup counts: when the bucket holds something else than what was
// sent (here cut short on the gateway's disk between the upload and the check), the backup fails,
// says so, and the object is removed, so that no restore picks it.
func TestBackup_S3UploadVerifiedAfterWriting(t *testing.T) {
	if testing.Short() {
		t.Skip("runs versitygw")
	}
	ctx := context.Background()
	bucket := tests3.Start(t, "backups")
	src := testredis.Start(t)
	for i := range 200 {
		src.Client().Set(ctx, "fs:{waitlist}:entry:"+string(rune('a'+i%26))+strings.Repeat("x", i), i, 0)
	}
	env := bucket.Env()
	env["REDIS_URL"] = src.URL()
	defer func(f func(objectstore.Location)) { afterUpload = f }(afterUpload)
	afterUpload = func(l objectstore.Location) {
		path := filepath.Join(bucket.Dir, l.Bucket, l.Key)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatalf("the uploaded object on the gateway's disk: %v", err)
		}
		if err := os.Truncate(path, fi.Size()-7); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runCmd(t, env, "backup", "--to", "s3://backups/site/one.backup.gz")
	if err == nil || !strings.Contains(err.Error(), "does not hold what was sent") || !strings.Contains(err.Error(), "the object was removed") {
		t.Fatalf("a backup whose object changed after the upload: %v %s", err, out)
	}
	if keys := listKeys(t, env, "backups"); len(keys) != 0 {
		t.Fatalf("objects left: %v", keys)
	}

	afterUpload = func(objectstore.Location) {}
	if out, err := runCmd(t, env, "backup", "--to", "s3://backups/site/two.backup.gz"); err != nil || !strings.Contains(out, "wrote 200 keys") {
		t.Fatalf("a backup whose object stayed as sent: %v %s", err, out)
	}
	if keys := listKeys(t, env, "backups"); len(keys) != 1 || keys[0] != "site/two.backup.gz" {
		t.Fatalf("objects: %v", keys)
	}
}

// A backup that fails after part of it was streamed (a failover, ErrFailover) leaves no object: the
// upload's parts are aborted, and nothing claims to be a whole backup.
func TestBackup_S3FailedBackupLeavesNoObject(t *testing.T) {
	if testing.Short() {
		t.Skip("runs versitygw")
	}
	ctx := context.Background()
	bucket := tests3.Start(t, "backups")
	env := bucket.Env()
	e := &environment{getenv: func(k string) string { return env[k] }}
	write := func(w io.Writer) (backup.Stats, error) {
		// More than one part of the stream (5 MiB): a multipart upload has begun when it fails.
		if _, err := io.CopyN(w, rand.Reader, objectstore.StreamPartSize+(1<<20)); err != nil {
			return backup.Stats{}, err
		}
		return backup.Stats{}, backup.ErrFailover
	}
	_, err := backupTo(ctx, e, "s3://backups/site/cut.backup.gz", write)
	if !errors.Is(err, backup.ErrFailover) {
		t.Fatalf("backupTo: %v, want ErrFailover", err)
	}
	if keys := listKeys(t, env, "backups"); len(keys) != 0 {
		t.Fatalf("objects left: %v", keys)
	}
}

func listKeys(t *testing.T, env map[string]string, bucket string) []string {
	t.Helper()
	c, err := objectstore.New(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	keys, err := c.List(context.Background(), bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// A backup never replaces another: a name taken — a file or an object — is refused, and the older
// backup stays as it was.
func TestBackup_NeverReplacesAnOlderBackup(t *testing.T) {
	if testing.Short() {
		t.Skip("runs versitygw")
	}
	ctx := context.Background()
	bucket := tests3.Start(t, "backups")
	src := testredis.Start(t)
	src.Client().Set(ctx, "fs:{waitlist}:entries", "older", 0)
	env := bucket.Env()
	env["REDIS_URL"] = src.URL()
	file := filepath.Join(t.TempDir(), "one.backup.gz")
	for _, to := range []string{file, "s3://backups/site/one.backup.gz"} {
		if out, err := runCmd(t, env, "backup", "--to", to); err != nil {
			t.Fatalf("backup to %s: %v %s", to, err, out)
		}
	}
	src.Client().Set(ctx, "fs:{waitlist}:entries", "newer", 0)
	for _, to := range []string{file, "s3://backups/site/one.backup.gz"} {
		if out, err := runCmd(t, env, "backup", "--to", to); err == nil || !strings.Contains(err.Error(), "never replaces another") {
			t.Fatalf("a second backup to %s: %v %s", to, err, out)
		}
		dst := testredis.Start(t)
		env["REDIS_URL"] = dst.URL()
		if out, err := runCmd(t, env, "restore", "--insecure", "--from", to); err != nil {
			t.Fatalf("restore of %s: %v %s", to, err, out)
		}
		if v := dst.Client().Get(ctx, "fs:{waitlist}:entries").Val(); v != "older" {
			t.Fatalf("%s holds %q, want the older backup's value", to, v)
		}
		env["REDIS_URL"] = src.URL()
	}
	if files, _ := filepath.Glob(filepath.Dir(file) + "/.formsservice-backup-*"); len(files) != 0 {
		t.Fatalf("scratch files left: %v", files)
	}
}

// A backup to a bucket and a restore from it keep no copy on the pod's disk: with no usable temporary
// folder at all, both work (the Job's /tmp is a small bounded emptyDir).
func TestBackupRestore_S3NeedsNoScratchSpace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs versitygw")
	}
	ctx := context.Background()
	bucket := tests3.Start(t, "backups")
	src, dst := testredis.Start(t), testredis.Start(t)
	src.Client().Set(ctx, "fs:{waitlist}:entries", "one", 0)
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "does-not-exist"))
	env := bucket.Env()
	env["REDIS_URL"] = src.URL()
	if out, err := runCmd(t, env, "backup", "--to", "s3://backups/site/a.backup.gz"); err != nil {
		t.Fatalf("backup without a temporary folder: %v %s", err, out)
	}
	env["REDIS_URL"] = dst.URL()
	if out, err := runCmd(t, env, "restore", "--insecure", "--keep-sessions", "--from", "s3://backups/site/a.backup.gz"); err != nil || !strings.Contains(out, "restored 1 keys") {
		t.Fatalf("restore without a temporary folder: %v %s", err, out)
	}
}
