//go:build !formsonly

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/spf13/cobra"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/platform/backup"
	"github.com/formsservice/formsservice/services/platform/objectstore"
)

// s3Env are the variables the S3 target reads (package objectstore).
var s3Env = []envVar{
	{"AWS_ENDPOINT_URL_S3", "the S3 endpoint for s3:// locations (else AWS_ENDPOINT_URL, else AWS S3); http:// for a bucket inside the cluster"},
	{"AWS_ACCESS_KEY_ID", "the S3 access key"},
	{"AWS_SECRET_ACCESS_KEY", "the S3 secret key"},
	{"AWS_SESSION_TOKEN", "the session token of temporary keys"},
	{"AWS_REGION", "the bucket's region, where the server needs one"},
	{"AWS_CA_BUNDLE", "a PEM file of the CAs that sign an https endpoint's certificate (a private S3 server)"},
	{"AWS_WEB_IDENTITY_TOKEN_FILE", "without static keys: a token traded at STS for the keys of AWS_ROLE_ARN"},
	{"AWS_ROLE_ARN", "the role a web identity assumes"},
	{"AWS_ENDPOINT_URL_STS", "the STS of a web identity (else the region's)"},
	{"FORMSSERVICE_S3_SSE", "server-side encryption of uploads: AES256 (SSE-S3) or aws:kms (SSE-KMS)"},
	{"FORMSSERVICE_S3_SSE_KMS_KEY_ID", "the KMS key of aws:kms (else the bucket's)"},
}

// newBackupCmd is `formsservice backup`: every key of the store to a file or an S3 object.
func newBackupCmd(env *environment) *cobra.Command {
	var store storeFlags
	var to, recipientsFile, identityFile string
	var match, recipients []string
	cmd := &cobra.Command{
		Use:   "backup --to FILE|s3://BUCKET/KEY [--recipient age1…]... [--match PATTERN]...",
		Short: "write the whole store (submissions, accounts, grants, audit trail) to a file or an S3 bucket",
		Long: `Writes every key of the store — the forms' submissions and outbox, auth's users, passkeys, grants,
sessions and audit trail — to one gzip file, each key with its value and its end, checked by a
SHA-256 in the file's trailer. It works on a single Redis, Sentinel or a Cluster, while the services
run: every submission acknowledged before it starts is in it. A file is created readable by its
owner only (it holds personal data and password hashes). A location ending in / gets a name with
the time: formsservice-YYYYMMDDTHHMMSSZ.backup.gz; a name that is taken is refused (a backup never
replaces another). An S3 object is streamed and then read back and compared (size and SHA-256). A
failover of the store during the backup fails it (no object is left): run it again. Restore it with
formsservice restore.

With --recipient (or --recipients-file) the file is encrypted and authenticated with age to those
public keys: only a holder of the identity (age-keygen's secret key) can read or restore it, and a
changed or cut file is refused. The backup itself needs no secret. Without one the file is clear,
and a restore reads it only with --insecure.`,
		Example: `  age-keygen -o backup-key.txt      # once; keep the key outside the cluster it protects
  formsservice backup --to /backups/ --recipient age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p
  formsservice backup --to /backups/
  AWS_ENDPOINT_URL_S3=http://s3.storage:7070 formsservice backup --to s3://backups/formsservice/`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			_, rdb, err := store.open(ctx, env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			name := "formsservice-" + time.Now().UTC().Format("20060102T150405Z") + ".backup.gz"
			if strings.HasSuffix(to, "/") {
				to += name
			}
			rs, err := readRecipients(recipients, recipientsFile, identityFile)
			if err != nil {
				return err
			}
			if len(rs) == 0 {
				fmt.Fprintln(env.stderr, "warning: the backup is not encrypted (--recipient): anyone who reads it reads the store, and a restore must pass --insecure")
			}
			write := func(w io.Writer) (backup.Stats, error) {
				return backup.Write(ctx, rdb, w, backup.Options{Match: match, Recipients: rs})
			}
			st, err := backupTo(ctx, env, to, write)
			if err != nil {
				return fmt.Errorf("backup to %s: %w", to, err)
			}
			fmt.Fprintf(env.stdout, "wrote %d keys (%s) to %s\n", st.Keys, byPrefix(st), to)
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "a file, a directory ending in /, or s3://BUCKET/KEY (required)")
	cmd.Flags().StringArrayVar(&match, "match", nil, "only keys matching this pattern; repeat for more (a Redis shared with other programs: ours are 'fs:*', 'forms:*' and 'auth:*')")
	cmd.Flags().StringArrayVar(&recipients, "recipient", nil, "encrypt to this age public key (age1…); repeat for more")
	cmd.Flags().StringVar(&recipientsFile, "recipients-file", "", "encrypt to the age public keys in this file, one per line")
	cmd.Flags().StringVar(&identityFile, "identity-file", "", "encrypt to the public key of this age identity (the file a restore reads it with)")
	cmd.PreRunE = requireFlags("to")
	store.register(cmd, env)
	readsEnv(cmd, append(slices.Clone(storeEnv), s3Env...)...)
	return cmd
}

// backupTo writes the backup to a file (created 0600, renamed into place only when whole) or streams it
// to an S3 object, which is then read back and checked (verifyUpload) before the backup counts.
func backupTo(ctx context.Context, env *environment, to string, write func(io.Writer) (backup.Stats, error)) (backup.Stats, error) {
	if objectstore.IsLocation(to) {
		return backupToObject(ctx, env, to, write)
	}
	dir := filepath.Dir(to)
	// A directory that does not exist yet is made, the owner's only, like the file.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return backup.Stats{}, err
	}
	tmp, err := os.CreateTemp(dir, ".formsservice-backup-*")
	if err != nil {
		return backup.Stats{}, err
	}
	defer os.Remove(tmp.Name()) // gone once renamed; a failed backup leaves nothing half written
	defer tmp.Close()
	if err := tmp.Chmod(0o600); err != nil {
		return backup.Stats{}, err
	}
	st, err := write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		return st, err
	}
	// A link, not a rename: it fails when the name is taken, so no backup replaces another.
	if err := os.Link(tmp.Name(), to); err != nil {
		if errors.Is(err, os.ErrExist) {
			return st, errBackupExists
		}
		return st, err
	}
	return st, nil
}

// errBackupExists is a backup refused because its name is taken: an older backup is never replaced.
var errBackupExists = errors.New("a backup of that name exists already, and a backup never replaces another: choose another name (a location ending in / gets one with the time)")

// afterUpload runs between an upload and its check (tests: what the bucket holds changes there).
var afterUpload = func(objectstore.Location) {}

// backupToObject streams the backup to the object as it is written: no scratch file, however big the
// store. A backup that fails (a failover, a lost connection) fails the upload, whose parts are
// aborted, so no object is left that claims to be whole. The bytes' size and SHA-256 are kept on the
// way and compared with the object read back afterwards.
func backupToObject(ctx context.Context, env *environment, to string, write func(io.Writer) (backup.Stats, error)) (backup.Stats, error) {
	loc, err := objectstore.ParseLocation(to)
	if err != nil {
		return backup.Stats{}, err
	}
	c, err := objectstore.New(env.getenv)
	if err != nil {
		return backup.Stats{}, err
	}
	// A name taken (a request id used again, a FormsService made again) must not replace an older
	// backup. The check and the upload are two requests; the operator's names hold the Job's UID, so
	// two of its Jobs never race for one.
	switch r, _, err := c.Open(ctx, loc); {
	case err == nil:
		r.Close()
		return backup.Stats{}, errBackupExists
	case !errors.Is(err, objectstore.ErrNoObject):
		return backup.Stats{}, err
	}
	pr, pw := io.Pipe()
	sent := newDigest()
	var st backup.Stats
	var writeErr error
	written := make(chan struct{})
	go func() {
		defer close(written)
		st, writeErr = write(io.MultiWriter(pw, sent))
		pw.CloseWithError(writeErr) // nil: the upload sees the end; else it fails with the backup's error
	}()
	err = c.PutStream(ctx, loc, pr, objectstore.Object{ContentType: "application/gzip"})
	pr.CloseWithError(errUploadEnded) // a failed upload stops the backup's writes
	<-written
	if writeErr != nil && !errors.Is(writeErr, errUploadEnded) {
		return st, writeErr // the backup's own error says more than the upload's
	}
	if err != nil {
		return st, err
	}
	afterUpload(loc)
	if err := verifyUpload(ctx, c, loc, sent); err != nil {
		// Not a backup to rely on: it goes, so that no restore picks it.
		if rmErr := c.Remove(ctx, loc); rmErr != nil {
			return st, fmt.Errorf("%w; removing it failed too: %v", err, rmErr)
		}
		return st, fmt.Errorf("%w; the object was removed", err)
	}
	return st, nil
}

var errUploadEnded = errors.New("the upload ended")

// digest counts and hashes the bytes written to it.
type digest struct {
	hash.Hash
	size int64
}

func newDigest() *digest { return &digest{Hash: sha256.New()} }

func (d *digest) Write(p []byte) (int, error) {
	d.size += int64(len(p))
	return d.Hash.Write(p)
}

func (d *digest) String() string { return fmt.Sprintf("%d bytes, SHA-256 %x", d.size, d.Sum(nil)) }

// verifyUpload reads the object back and compares its size (as stored, and as read) and its SHA-256
// with what was sent.
func verifyUpload(ctx context.Context, c *objectstore.Client, loc objectstore.Location, sent *digest) error {
	r, stored, err := c.Open(ctx, loc)
	if err != nil {
		return fmt.Errorf("reading the uploaded object back: %w", err)
	}
	defer r.Close()
	if stored.Size != sent.size {
		return fmt.Errorf("the uploaded object is %d bytes, the backup %d: the bucket does not hold what was sent", stored.Size, sent.size)
	}
	got := newDigest()
	if _, err := io.Copy(got, r); err != nil {
		return fmt.Errorf("reading the uploaded object back: %w", err)
	}
	if got.size != sent.size || !bytes.Equal(got.Sum(nil), sent.Sum(nil)) {
		return fmt.Errorf("the uploaded object reads back as %s, the backup was %s: the bucket does not hold what was sent", got, sent)
	}
	return nil
}

// newRestoreCmd is `formsservice restore`: a backup back into a store.
func newRestoreCmd(env *environment) *cobra.Command {
	var store storeFlags
	var from, identityFile string
	var replace, checkOnly, insecure, allKeys, keepSessions bool
	cmd := &cobra.Command{
		Use:   "restore --from FILE|s3://BUCKET/KEY --identity-file FILE|--insecure [--replace] [--check] [--keep-sessions]",
		Short: "write a backup into the store (an empty one, unless --replace)",
		Long: `Reads the whole backup first and checks it (the trailer's count and SHA-256): a truncated or
altered file is refused before anything is written. Then writes every key whose end has not passed,
with that same end. The store must be empty, so that nothing newer is overwritten by mistake; with
--replace the backup's keys overwrite the store's, and keys not in the backup stay. The store may be
another kind than the backup's source (a single Redis to a Cluster and back), of the same Redis
version or a newer one. Stop the services first, or restore into a new store they are not yet using.
With --check the backup is only read and checked, and nothing is written.
A restore that was interrupted (a lost connection, a killed process) can be run again as it was: the
store holds a marker of that backup, and the second run writes its keys again and finishes. A store
whose maxmemory leaves too little room for the backup is refused before anything is written.

An encrypted backup needs the identity it was made for (--identity-file, as age-keygen writes it);
a changed, cut or spliced file is refused whole. A clear backup is refused unless --insecure: nothing
shows who wrote it, and a restore writes password hashes and grants into the store. Only
formsservice's keys (fs:, forms:, auth:) are written, unless --all-keys: a backup of a Redis shared
with other programs does not write into theirs.

After writing, every account is signed out everywhere: no sign-in session, remembered browser or
grant (refresh token) the backup holds lives on, since some may have been ended or revoked after
the backup was made. People sign in again. --keep-sessions keeps them, for a disaster recovery
where the backup is the newest state there is and signing everyone out costs more than it protects.`,
		Example: `  formsservice restore --identity-file backup-key.txt --from /backups/formsservice-20261126T030000Z.backup.gz
  formsservice restore --check --identity-file backup-key.txt --from s3://backups/formsservice/formsservice-20261126T030000Z.backup.gz
  formsservice restore --insecure --from /backups/old-clear.backup.gz`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			ctx := cmd.Context()
			read := backup.ReadOptions{AllowClear: insecure}
			if identityFile != "" {
				if read.Identities, err = backup.ReadIdentityFile(identityFile); err != nil {
					return err
				}
			}
			open, done, err := restoreSource(ctx, env, from)
			if err != nil {
				return err
			}
			defer done()
			if checkOnly {
				f, err := open()
				if err != nil {
					return err
				}
				defer f.Close()
				st, err := backup.Check(f, read)
				if err != nil {
					return fmt.Errorf("%s: %w", from, err)
				}
				fmt.Fprintf(env.stdout, "%s is whole: %d keys (%s), written %s from Redis %s\n", from, st.Keys, byPrefix(st),
					st.Header.CreatedAt.Format(time.RFC3339), st.Header.RedisVersion)
				return nil
			}
			cfg, rdb, err := store.open(ctx, env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			// Every account is signed out before the restore counts as finished: a restore interrupted
			// before that is run again like any other interrupted one (backup.MarkerKey).
			var ended accounts.Ended
			signOut := func(ctx context.Context) (err error) {
				if keepSessions {
					return nil
				}
				ended, err = accounts.EndEverySession(ctx, rdb, cfg.Auth)
				if err != nil {
					return fmt.Errorf("the keys are written, but not every account could be signed out (run the same restore again: it finishes the interrupted one): %w", err)
				}
				return nil
			}
			st, err := backup.Restore(ctx, rdb, open, backup.RestoreOptions{Replace: replace, Read: read, AllKeys: allKeys, After: signOut})
			if err != nil {
				return fmt.Errorf("restore from %s: %w", from, err)
			}
			fmt.Fprintf(env.stdout, "restored %d keys from %s (it holds %s; written %s); %d had ended since and were left out\n",
				st.Restored, from, byPrefix(st), st.Header.CreatedAt.Format(time.RFC3339), st.Expired)
			if st.Foreign > 0 {
				fmt.Fprintf(env.stdout, "%d keys were not formsservice's (not fs:, forms: or auth:) and were left out; --all-keys restores them\n", st.Foreign)
			}
			if keepSessions {
				fmt.Fprintln(env.stdout, "sessions and grants of the backup were kept (--keep-sessions)")
				return nil
			}
			fmt.Fprintf(env.stdout, "signed out %d accounts everywhere: %d grants and %d sign-in sessions of the backup ended\n", ended.Accounts, ended.Grants, ended.Sessions)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the backup: a file or s3://BUCKET/KEY (required)")
	cmd.Flags().BoolVar(&replace, "replace", false, "restore into a store that holds keys, overwriting the backup's")
	cmd.Flags().BoolVar(&checkOnly, "check", false, "only read and check the backup; write nothing")
	cmd.Flags().StringVar(&identityFile, "identity-file", "", "the age identity (secret key file) an encrypted backup was made for")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "read a backup that is not encrypted (nothing shows who wrote it)")
	cmd.Flags().BoolVar(&allKeys, "all-keys", false, "restore every key of the backup, not only formsservice's (fs:, forms:, auth:)")
	cmd.Flags().BoolVar(&keepSessions, "keep-sessions", false, "keep the backup's sign-in sessions and grants (by default every account is signed out everywhere after the restore)")
	cmd.PreRunE = requireFlags("from")
	store.register(cmd, env)
	readsEnv(cmd, append(slices.Clone(storeEnv), s3Env...)...)
	return cmd
}

// restoreSource opens a backup file, or an S3 object, as many times as the restore asks: an object is
// read from the bucket each time, never copied to a scratch file, however big (done releases nothing
// today; it stays for the callers).
func restoreSource(ctx context.Context, env *environment, from string) (backup.Source, func(), error) {
	done := func() {}
	if !objectstore.IsLocation(from) {
		return func() (io.ReadCloser, error) { return os.Open(from) }, done, nil
	}
	loc, err := objectstore.ParseLocation(from)
	if err != nil {
		return nil, nil, err
	}
	c, err := objectstore.New(env.getenv)
	if err != nil {
		return nil, nil, err
	}
	return func() (io.ReadCloser, error) {
		r, _, err := c.Open(ctx, loc)
		if errors.Is(err, objectstore.ErrNoObject) {
			return nil, fmt.Errorf("%s: %w", from, err)
		}
		return r, err
	}, done, nil
}

// byPrefix says the counts by kind of key: "forms 120, auth 455".
func byPrefix(st backup.Stats) string {
	keys := make([]string, 0, len(st.ByPrefix))
	for k := range st.ByPrefix {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, st.ByPrefix[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// readRecipients gathers the --recipient flags, the keys of --recipients-file and the public key of
// --identity-file's identity.
func readRecipients(flags []string, file, identityFile string) ([]age.Recipient, error) {
	text := strings.Join(flags, "\n")
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--recipients-file: %w", err)
		}
		text += "\n" + string(b)
	}
	if identityFile != "" {
		ids, err := backup.ReadIdentityFile(identityFile)
		if err != nil {
			return nil, err
		}
		r, err := backup.RecipientOf(ids)
		if err != nil {
			return nil, err
		}
		text += "\n" + r
	}
	return backup.ParseRecipients(text)
}
