package forms

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/forms/jsonobj"
)

// bodyKind is how a request body is encoded, from its Content-Type.
type bodyKind uint8

const (
	kindUnsupported bodyKind = iota // answered 415
	kindJSON                        // application/json: the public JSON contract
	kindURLEncoded                  // application/x-www-form-urlencoded: a plain HTML form
	kindMultipart                   // multipart/form-data: a plain HTML form with enctype="multipart/form-data"
)

// bodyFormat is a body's kind and, for multipart, its boundary.
type bodyFormat struct {
	kind     bodyKind
	boundary string
}

// isForm reports a plain HTML form post: its answers are pages and redirects, not JSON.
func (f bodyFormat) isForm() bool { return f.kind == kindURLEncoded || f.kind == kindMultipart }

// formatOf reads the Content-Type. JSON keeps its own check (isJSON). A form body's charset, if given,
// must be UTF-8, as for JSON: browsers send the page's encoding, and a page in another one is refused
// (415) rather than stored as what nobody typed.
func formatOf(ct []byte) bodyFormat {
	if isJSON(ct) {
		return bodyFormat{kind: kindJSON}
	}
	mt, params, err := mime.ParseMediaType(string(ct))
	if err != nil {
		return bodyFormat{}
	}
	if cs, ok := params["charset"]; ok && !isUTF8Name(cs) {
		return bodyFormat{}
	}
	switch mt {
	case "application/x-www-form-urlencoded":
		return bodyFormat{kind: kindURLEncoded}
	case "multipart/form-data":
		// A boundary the multipart reader cannot use makes the body unreadable (400), not the type
		// unsupported: the client did send a form.
		return bodyFormat{kind: kindMultipart, boundary: params["boundary"]}
	}
	return bodyFormat{}
}

// isFormContentType reports a form post from the header alone, for the answers written before the body
// is read (403, 413): a person who posted a plain form gets a page for those too.
func isFormContentType(ct []byte) bool {
	mt, _, _ := bytes.Cut(ct, []byte{';'})
	mt = bytes.TrimSpace(mt)
	return bytes.EqualFold(mt, []byte("application/x-www-form-urlencoded")) || bytes.EqualFold(mt, []byte("multipart/form-data"))
}

func isUTF8Name(cs string) bool {
	return bytes.EqualFold([]byte(cs), []byte("utf-8")) || bytes.EqualFold([]byte(cs), []byte("utf8"))
}

var (
	// errForm is a form body that cannot be read: bad percent-encoding or multipart framing, a field
	// that is not UTF-8, a field the form reads sent twice, or a file.
	errForm = errors.New("unreadable form body")
)

// readForm reads a form body and stores the values of the fields named in keys into vals (same
// index) as strings, the way jsonobj.Read does for JSON, with the same strictness: the whole body
// must decode and be UTF-8, and a field the form reads may appear once (a repeated one is parameter
// pollution, as in JSON). Line breaks are made "\n": browsers send a textarea's as CRLF.
func readForm(f bodyFormat, body []byte, keys []string, vals []jsonobj.Value) error {
	return eachFormField(f, body, func(key string, value []byte) error { return setField(keys, vals, key, value) })
}

// eachFormField calls set with every field of a form body, in order, repeated names included (a
// declared form's many-of field is a group of checkboxes with one name).
func eachFormField(f bodyFormat, body []byte, set func(key string, value []byte) error) error {
	switch f.kind {
	case kindURLEncoded:
		return readURLEncoded(body, set)
	case kindMultipart:
		return readMultipart(body, f.boundary, set)
	}
	return errForm
}

func readURLEncoded(body []byte, set func(key string, value []byte) error) error {
	for len(body) > 0 {
		var pair []byte
		pair, body, _ = bytes.Cut(body, []byte{'&'})
		if len(pair) == 0 {
			continue
		}
		k, v, _ := bytes.Cut(pair, []byte{'='})
		key, err := url.QueryUnescape(string(k))
		if err != nil {
			return errForm
		}
		value, err := url.QueryUnescape(string(v))
		if err != nil {
			return errForm
		}
		if err := set(key, []byte(value)); err != nil {
			return err
		}
	}
	return nil
}

func readMultipart(body []byte, boundary string, set func(key string, value []byte) error) error {
	if boundary == "" {
		return errForm
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return errForm
		}
		_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
		if err != nil || params["name"] == "" {
			return errForm
		}
		value, err := io.ReadAll(p) // bounded: the whole body is at most 16 KB
		if err != nil {
			return errForm
		}
		if filename, isFile := params["filename"]; isFile {
			// A file input left empty sends a part with filename="" and no content: nothing was sent.
			// Anything else is a file, which the forms never take.
			if filename != "" || len(value) > 0 {
				return errForm
			}
			continue
		}
		if err := set(params["name"], value); err != nil {
			return err
		}
	}
}

// setField stores one decoded field if the form reads it.
func setField(keys []string, vals []jsonobj.Value, key string, value []byte) error {
	if !utf8.ValidString(key) || !utf8.Valid(value) {
		return errForm
	}
	for i, want := range keys {
		if key != want {
			continue
		}
		if vals[i].Kind != jsonobj.Absent {
			return errForm // the same field twice
		}
		vals[i] = jsonobj.StringOf([]byte(lineBreaks.Replace(string(value))))
	}
	return nil
}

// lineBreaks turns every line break of a form field into "\n", as the JSON a script sends has them:
// browsers send a textarea's breaks as CRLF, and HTML counts a lone CR as a break too. Replacing only
// CRLF in one pass left a CRLF where the value had "\r\r\n" (found by FuzzReadMultipart).
var lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n")
