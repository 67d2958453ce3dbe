// Package files keeps the bytes of the declared forms' file fields in an S3-compatible bucket (package
// objectstore) and signs the links that download them (D77). It streams each file to the bucket
// through bounded buffers, counting, hashing (SHA-256) and sniffing its type as it goes, and removes
// what it wrote when the file or its submission is refused. Redis keeps only the store.File that
// describes each one.
package files

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/objectstore"
)

// Why Put refused a file. Any other error is the store's (or the client's, ErrRead).
var (
	// ErrTooLarge: the file is over its field's maxSize.
	ErrTooLarge = errors.New("file over its field's maxSize")
	// ErrTotalTooLarge: the file takes the submission over its form's maxFileBytes.
	ErrTotalTooLarge = errors.New("files over the form's maxFileBytes")
	// ErrType: the file's bytes are not of a type its field accepts.
	ErrType = errors.New("file of a type its field does not accept")
	// ErrRead: the request body could not be read (the client went away mid-upload).
	ErrRead = errors.New("reading the upload failed")
)

// sniffLen is what net/http.DetectContentType reads.
const sniffLen = 512

// EmptyType is the type of a file of no bytes, which show none.
const EmptyType = "application/octet-stream"

// Store puts files into one bucket under one prefix.
type Store struct {
	client *objectstore.Client
	bucket string
	prefix string
}

// New returns the store of forms.files, reaching the bucket through client.
func New(client *objectstore.Client, cfg *config.FormFiles) *Store {
	return &Store{client: client, bucket: cfg.Bucket, prefix: cfg.FilesPrefix()}
}

// Key is the object key of the file id of form.
func (s *Store) Key(form, id string) string { return s.prefix + form + "/" + id }

// FormPrefix is the prefix of every key of form's files.
func (s *Store) FormPrefix(form string) string { return s.prefix + form + "/" }

// Location is where the object of key is.
func (s *Store) Location(key string) objectstore.Location {
	return objectstore.Location{Bucket: s.bucket, Key: key}
}

// ID returns the id of key when it is a key of form's files (a download link names its file by id).
func (s *Store) ID(form, key string) (string, bool) {
	id, ok := strings.CutPrefix(key, s.FormPrefix(form))
	return id, ok && ValidID(id)
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID is 128 random bits: a key nobody can guess, and a name that says nothing of the file.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return idEncoding.EncodeToString(b[:])
}

// ValidID reports whether id can be a file's id (what newID makes).
func ValidID(id string) bool {
	if len(id) != 26 {
		return false
	}
	_, err := idEncoding.DecodeString(id)
	return err == nil
}

// Put streams one file of field fd of form from r into the bucket: at most min(fd's maxSize, room)
// bytes, of a type fd accepts as the first bytes show it. name is what the sender called it. Refused
// (ErrTooLarge, ErrTotalTooLarge, ErrType) or failed, it leaves no object behind.
func (s *Store) Put(ctx context.Context, form string, fd *config.FormField, name string, r io.Reader, room int64) (store.File, error) {
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return store.File{}, fmt.Errorf("%w: %v", ErrRead, err)
	}
	head = head[:n]
	typ := Sniff(head)
	if !fd.Accepts(typ) {
		return store.File{}, ErrType
	}
	limit, over := fd.FileSize(), ErrTooLarge
	if room < limit {
		limit, over = room, ErrTotalTooLarge
	}
	body := &countingReader{r: io.MultiReader(bytes.NewReader(head), r), limit: limit, over: over, sum: sha256.New()}
	f := store.File{Field: fd.Name, Key: s.Key(form, newID()), Name: SafeName(name), Type: typ}
	err = s.client.PutStream(ctx, s.Location(f.Key), body, objectstore.Object{ContentType: typ,
		Metadata: map[string]string{"filename": f.Name, "form": form}})
	if body.err != nil {
		err = body.err // why the reader stopped: the limit, or the client
	}
	if err != nil {
		// A multipart upload is aborted by the client; a single object cannot have been completed.
		// Removing is the belt to those braces (a server that completed it after all).
		s.Remove(context.WithoutCancel(ctx), f.Key)
		return store.File{}, err
	}
	f.Size, f.SHA256 = body.n, hex.EncodeToString(body.sum.Sum(nil))
	return f, nil
}

// Remove deletes the objects of keys, best effort: it returns the first error, having tried them all.
func (s *Store) Remove(ctx context.Context, keys ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var first error
	for _, k := range keys {
		if err := s.client.Remove(ctx, s.Location(k)); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// RemoveFiles deletes the objects of files.
func (s *Store) RemoveFiles(ctx context.Context, files []store.File) error {
	keys := make([]string, len(files))
	for i, f := range files {
		keys[i] = f.Key
	}
	return s.Remove(ctx, keys...)
}

// Open returns the object of key to read (objectstore.ErrNoObject when it is gone).
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, objectstore.Stored, error) {
	return s.client.Open(ctx, s.Location(key))
}

// List returns the keys of form's objects.
func (s *Store) List(ctx context.Context, form string) ([]string, error) {
	return s.client.List(ctx, s.bucket, s.FormPrefix(form))
}

// Sniff is the media type the bytes show (net/http.DetectContentType, the WHATWG sniffing algorithm:
// PDF, PNG, JPEG, GIF, WebP, ZIP, MP4, text…), without parameters.
func Sniff(head []byte) string {
	if len(head) == 0 {
		return EmptyType
	}
	mt, _, _ := strings.Cut(http.DetectContentType(head), ";")
	return strings.TrimSpace(mt)
}

// SafeName is a file name made safe to store, show in a mail and send in a Content-Disposition: the
// last segment of a path (browsers of old sent C:\…), valid UTF-8 without control or format
// characters, at most 200 bytes; "file" when nothing is left.
func SafeName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToValidUTF8(name, "\uFFFD")
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '"' {
			return -1
		}
		return r
	}, name)
	for len(name) > 200 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	name = strings.TrimSpace(name) // after the cut, which can leave a space at the end (FuzzSafeName)
	if name == "" || name == "." || name == ".." {
		return "file"
	}
	return name
}

// countingReader counts and hashes what it passes on, and fails past limit bytes.
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64
	over  error
	sum   hash.Hash
	err   error // why it stopped, when not at the end
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.limit {
		c.err = c.over
		return 0, c.err
	}
	c.sum.Write(p[:n])
	if err != nil && err != io.EOF {
		c.err = fmt.Errorf("%w: %v", ErrRead, err)
		return n, c.err
	}
	return n, err
}
