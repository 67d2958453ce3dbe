package backup_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/backup"
)

// An encrypted backup restores with its identity and gives back every key; the file shows none of
// the store's contents; the writer needed only the public recipient.
func TestEncrypted_RestoresWithItsIdentityAndShowsNothing(t *testing.T) {
	ctx := context.Background()
	src, dst := testredis.Start(t).Client(), testredis.Start(t).Client()
	want := fill(t, src, 20)
	id := newIdentity(t)
	recipients, err := backup.ParseRecipients("# the team's backup key\n" + id.Recipient().String() + "\n")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := backup.Write(ctx, src, &buf, backup.Options{Recipients: recipients}); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("age-encryption.org/v1\n")) {
		t.Fatalf("the file begins %q, not with age's header", buf.Bytes()[:min(40, buf.Len())])
	}
	// Nothing of the data, not even compressed: a clear file of the same store, gunzipped, would show
	// every address; this one is not even gzip.
	if bytes.Contains(buf.Bytes(), []byte("person1@example.com")) || bytes.Contains(buf.Bytes(), []byte{0x1f, 0x8b}) && bytes.Index(buf.Bytes(), []byte{0x1f, 0x8b}) < 200 {
		t.Fatal("the encrypted file shows the store's contents or a gzip header near its start")
	}
	read := backup.ReadOptions{Identities: []age.Identity{id}}
	if st, err := backup.Check(bytes.NewReader(buf.Bytes()), read); err != nil || st.Keys != 120 {
		t.Fatalf("check: %+v %v", st, err)
	}
	rs, err := backup.Restore(ctx, dst, source(buf.Bytes()), backup.RestoreOptions{Read: read})
	if err != nil || rs.Restored != 120 {
		t.Fatalf("restore: %+v %v", rs, err)
	}
	equal(t, "restored from the encrypted file", snapshot(t, dst), want)
}

// Each way an encrypted file can be wrong is refused before anything is written: no identity, another
// identity, a clear file without AllowClear, a changed byte anywhere, a file cut short (age's last
// chunk flag), and a chunk of another file of the same key spliced in.
func TestEncrypted_RefusedWholeWhenWrong(t *testing.T) {
	ctx := context.Background()
	src := testredis.Start(t).Client()
	fill(t, src, 300)
	for i := range 4 { // values gzip cannot shrink: a file of several 64 KiB chunks
		noise := make([]byte, 64<<10)
		_, _ = rand.Read(noise)
		src.Set(ctx, fmt.Sprintf("forms:noise:%d", i), noise, 0)
	}
	id := newIdentity(t)
	var enc, other, clear bytes.Buffer
	if _, err := backup.Write(ctx, src, &enc, backup.Options{Recipients: []age.Recipient{id.Recipient()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Write(ctx, src, &other, backup.Options{Recipients: []age.Recipient{id.Recipient()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Write(ctx, src, &clear, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	if enc.Len() < 3*64<<10 {
		t.Fatalf("the file is %d bytes: too small for the chunk tests", enc.Len())
	}
	read := backup.ReadOptions{Identities: []age.Identity{id}}
	b := enc.Bytes()
	flipped := func(i int) []byte { c := bytes.Clone(b); c[i] ^= 1; return c }
	spliced := bytes.Clone(b)
	copy(spliced[len(b)/2:len(b)/2+1000], other.Bytes()[len(b)/2:len(b)/2+1000])
	cases := []struct {
		name string
		file []byte
		o    backup.ReadOptions
		want error
	}{
		{"no identity", b, backup.ReadOptions{}, backup.ErrNoIdentity},
		{"another identity", b, backup.ReadOptions{Identities: []age.Identity{newIdentity(t)}}, backup.ErrNoIdentity},
		{"a clear file, not allowed", clear.Bytes(), read, backup.ErrClear},
		// A changed key stanza is, to age, a file for another key; a changed header MAC is damage.
		{"a changed byte in the key stanza", changedShare(b), read, backup.ErrNoIdentity},
		{"a changed byte in the header's MAC", flipped(bytes.Index(b, []byte("\n--- ")) + 6), read, backup.ErrDamaged},
		{"a changed byte in the first chunk", flipped(400), read, backup.ErrDamaged},
		{"a changed byte in a middle chunk", flipped(len(b) / 2), read, backup.ErrDamaged},
		{"a changed last byte", flipped(len(b) - 1), read, backup.ErrDamaged},
		{"cut at a chunk's end", b[:len(b)-(len(b)-200)%(64<<10+16)], read, backup.ErrDamaged},
		{"cut short by a byte", b[:len(b)-1], read, backup.ErrDamaged},
		{"another file's bytes spliced in", spliced, read, backup.ErrDamaged},
	}
	for _, c := range cases {
		dst := testredis.Start(t).Client()
		if _, err := backup.Check(bytes.NewReader(c.file), c.o); !errors.Is(err, c.want) {
			t.Errorf("%s: check: %v, want %v", c.name, err, c.want)
		}
		if _, err := backup.Restore(ctx, dst, source(c.file), backup.RestoreOptions{Read: c.o}); !errors.Is(err, c.want) {
			t.Errorf("%s: restore: %v, want %v", c.name, err, c.want)
		}
		if n := dst.DBSize(ctx).Val(); n != 0 {
			t.Errorf("%s: %d keys written", c.name, n)
		}
	}
	// And a clear file is read when the reader says so (the --insecure door).
	if st, err := backup.Check(bytes.NewReader(clear.Bytes()), backup.ReadOptions{AllowClear: true}); err != nil || st.Keys != 1804 {
		t.Fatalf("a clear file with AllowClear: %+v %v", st, err)
	}
}

// The identity file as age-keygen writes it (comments, one key) is read, and its recipient is the one
// age-keygen prints; a file that holds anything else is refused without its content in the error.
func TestIdentityFile(t *testing.T) {
	id := newIdentity(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "key.txt")
	text := "# created: 2026-11-29T09:00:00Z\n# public key: " + id.Recipient().String() + "\n" + id.String() + "\n"
	if err := os.WriteFile(good, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ids, err := backup.ReadIdentityFile(good)
	if err != nil || len(ids) != 1 {
		t.Fatalf("ReadIdentityFile: %v %v", ids, err)
	}
	if r, err := backup.RecipientOf(ids); err != nil || r != id.Recipient().String() {
		t.Fatalf("RecipientOf: %q %v, want %s", r, err, id.Recipient())
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("AGE-SECRET-KEY-1NOTAKEYBUTSECRETLOOKING\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.ReadIdentityFile(bad); err == nil || strings.Contains(err.Error(), "NOTAKEY") {
		t.Fatalf("a bad identity file: %v (must be refused, without its content)", err)
	}
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, []byte("# nothing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.ReadIdentityFile(empty); err == nil {
		t.Fatal("an identity file without an identity was accepted")
	}
	if _, err := backup.ParseRecipients("age1notarecipient"); err == nil {
		t.Fatal("a bad recipient was accepted")
	}
}

// changedShare changes one character of the X25519 stanza's ephemeral share to another base64
// character (always a valid stanza: flipping a bit could make it unreadable base64 instead).
func changedShare(b []byte) []byte {
	c := bytes.Clone(b)
	i := bytes.Index(c, []byte("-> X25519 ")) + len("-> X25519 ") + 5
	if c[i] == 'A' {
		c[i] = 'B'
	} else {
		c[i] = 'A'
	}
	return c
}

func newIdentity(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}
