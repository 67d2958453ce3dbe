package backup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"filippo.io/age"
)

// A backup file is encrypted and authenticated with age (age-encryption.org/v1: X25519 recipients,
// ChaCha20-Poly1305 in 64 KiB chunks with a last-chunk flag), around the gzip stream: a reader without
// the identity learns nothing but the size, and a changed, cut or swapped byte fails the whole file
// (docs/decisions D62). The SHA-256 trailer inside stays, as the check of a clear file.

// ageMagic is how every age file (not armored) begins.
const ageMagic = "age-encryption.org/"

// ReadOptions say how a backup may be read.
type ReadOptions struct {
	// Identities decrypt an encrypted backup (age X25519 identities, AGE-SECRET-KEY-1…).
	Identities []age.Identity
	// AllowClear reads a backup that is not encrypted. Without it such a file is refused (ErrClear):
	// anyone who could write to the bucket could have written it.
	AllowClear bool
}

// ErrClear is a backup that is not encrypted, read without AllowClear.
var ErrClear = errors.New("the backup is not encrypted, so nothing shows that it is ours")

// ErrNoIdentity is an encrypted backup read without an identity, or with none that it was made for.
var ErrNoIdentity = errors.New("the backup is encrypted for another key")

// open unwraps the encryption of a backup file, or checks that a clear one may be read.
func (o ReadOptions) open(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(len(ageMagic))
	if !bytes.Equal(head, []byte(ageMagic)) {
		if !o.AllowClear {
			return nil, fmt.Errorf("%w (restore it only if you know where it came from: --insecure)", ErrClear)
		}
		return br, nil
	}
	if len(o.Identities) == 0 {
		return nil, fmt.Errorf("%w: it is encrypted and no identity was given (--identity-file)", ErrNoIdentity)
	}
	dr, err := age.Decrypt(br, o.Identities...)
	var noMatch *age.NoIdentityMatchError
	switch {
	case errors.As(err, &noMatch):
		return nil, fmt.Errorf("%w: none of the given identities opens it", ErrNoIdentity)
	case err != nil:
		return nil, damaged("its encryption header: %v", err)
	}
	return authenticatedReader{dr}, nil
}

// authenticatedReader reports a failed chunk (altered or cut short) as a damaged file.
type authenticatedReader struct{ r io.Reader }

func (a authenticatedReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && err != io.EOF {
		err = damaged("it does not decrypt: %v", err)
	}
	return n, err
}

// encrypt wraps w so that what is written to it is encrypted to the recipients (none: w itself).
func encrypt(w io.Writer, recipients []age.Recipient) (io.WriteCloser, error) {
	if len(recipients) == 0 {
		return nopCloser{w}, nil
	}
	return age.Encrypt(w, recipients...)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// ParseRecipients reads age recipients (age1…), one per line or separated by spaces; '#' starts a
// comment.
func ParseRecipients(text string) ([]age.Recipient, error) {
	var out []age.Recipient
	for _, f := range fields(text) {
		r, err := age.ParseX25519Recipient(f)
		if err != nil {
			return nil, fmt.Errorf("backup: %q is not an age recipient (age1…): %w", short(f), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ReadIdentityFile reads the age identities (AGE-SECRET-KEY-1…) of a file, as age-keygen writes it.
func ReadIdentityFile(path string) ([]age.Identity, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("backup: the identity file: %w", err)
	}
	ids, err := ParseIdentities(string(b))
	if err != nil {
		return nil, fmt.Errorf("backup: %s: %w", path, err)
	}
	return ids, nil
}

// ParseIdentities reads age identities as age-keygen writes them (comments, one key a line). Its errors
// never repeat the text: it is a secret key, or something mistaken for one.
func ParseIdentities(text string) ([]age.Identity, error) {
	var out []age.Identity
	for _, f := range fields(text) {
		id, err := age.ParseX25519Identity(f)
		if err != nil {
			return nil, errors.New("a line that is not an age identity (AGE-SECRET-KEY-1…)")
		}
		out = append(out, id)
	}
	if len(out) == 0 {
		return nil, errors.New("no age identity (AGE-SECRET-KEY-1…)")
	}
	return out, nil
}

// RecipientOf is the public recipient of an identity file's first identity: what a backup is encrypted
// to, so that whoever only writes backups needs no secret.
func RecipientOf(ids []age.Identity) (string, error) {
	for _, id := range ids {
		if x, ok := id.(*age.X25519Identity); ok {
			return x.Recipient().String(), nil
		}
	}
	return "", errors.New("backup: no X25519 identity")
}

// fields splits text into its words, leaving out comments.
func fields(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		out = append(out, strings.Fields(line)...)
	}
	return out
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}
