package files

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/platform/config"
)

// MinLinkKey is the shortest key that may sign links: 256 bits.
const MinLinkKey = config.MinLinkKey

// Links signs and checks the download links of files: GET <base>/f/<form>/files/<id>?expires=<unix
// seconds>&sig=<HMAC-SHA256, base64url>. The forms service serves them (it streams the object), so a
// recipient needs to reach the forms host, never the bucket; the link names the file by its random id
// and says nothing else of it.
type Links struct {
	key []byte
}

// NewLinks returns the signer of key (forms.files.linkKeyFile's content).
func NewLinks(key []byte) (*Links, error) {
	if len(key) < MinLinkKey {
		return nil, errors.New("the link key must have at least 32 bytes")
	}
	return &Links{key: key}, nil
}

// Path is the path a file's link has.
func Path(form, id string) string { return "/f/" + form + "/files/" + id }

// URL is the link to file id of form under base (the forms' public URL), working until expires.
func (l *Links) URL(base, form, id string, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	q := url.Values{"expires": {exp}, "sig": {l.sign(form, id, exp)}}
	return strings.TrimSuffix(base, "/") + Path(form, id) + "?" + q.Encode()
}

// Errors of Check.
var (
	ErrBadLink     = errors.New("the link's signature does not match")
	ErrExpiredLink = errors.New("the link has expired")
)

// Check says whether the link to id of form with expires and sig (the query's) holds at now.
func (l *Links) Check(form, id, expires, sig string, now time.Time) error {
	want := l.sign(form, id, expires)
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return ErrBadLink
	}
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil {
		return ErrBadLink // cannot be: the signature covered it
	}
	if !now.Before(time.Unix(exp, 0)) {
		return ErrExpiredLink
	}
	return nil
}

// sign is the HMAC of the link's parts, separated by a byte none of them holds, under a label that
// keeps it from meaning anything else this key might one day sign.
func (l *Links) sign(form, id, expires string) string {
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte("formsservice file link v1\x00" + form + "\x00" + id + "\x00" + expires))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
