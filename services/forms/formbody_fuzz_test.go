package forms

import (
	"bytes"
	"mime/multipart"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/forms/jsonobj"
)

// The form readers' seed corpus is kept in testdata/fuzz/<target>/; `go test` runs it, and
// `go test -fuzz FuzzReadURLEncoded ./services/forms/` explores from it.

var fuzzKeys = []string{"email", "consent", "name", "message", NextField}

// checkRead holds a form reader to its promises on whatever it accepted: UTF-8 values, line breaks as
// "\n", and a value only for the keys asked for.
func checkRead(t *testing.T, vals []jsonobj.Value) {
	t.Helper()
	for i, v := range vals {
		if v.Kind == jsonobj.Absent {
			continue
		}
		if v.Kind != jsonobj.String {
			t.Fatalf("%s: kind %v", fuzzKeys[i], v.Kind)
		}
		if s := v.Text(); !utf8.ValidString(s) || strings.Contains(s, "\r\n") {
			t.Fatalf("%s: %q", fuzzKeys[i], s)
		}
	}
}

func FuzzReadURLEncoded(f *testing.F) {
	f.Add([]byte("email=ada%40example.com&consent=on&name=Ada+L"))
	f.Fuzz(func(t *testing.T, body []byte) {
		vals := make([]jsonobj.Value, len(fuzzKeys))
		err := readForm(bodyFormat{kind: kindURLEncoded}, body, fuzzKeys, vals)
		if err != nil {
			return
		}
		checkRead(t, vals)
		// Where the standard library reads the same body (it refuses ';'), every key read has the
		// value url.ParseQuery finds, once.
		q, qerr := url.ParseQuery(string(body))
		if qerr != nil {
			return
		}
		for i, k := range fuzzKeys {
			got, want := vals[i], q[k]
			switch {
			case len(want) == 0 && got.Kind != jsonobj.Absent:
				t.Fatalf("%s: read %q, ParseQuery found nothing", k, got.Text())
			case len(want) > 1:
				t.Fatalf("%s: accepted %d copies", k, len(want))
			case len(want) == 1 && got.Text() != strings.ReplaceAll(strings.ReplaceAll(want[0], "\r\n", "\n"), "\r", "\n"):
				t.Fatalf("%s: read %q, ParseQuery %q", k, got.Text(), want[0])
			}
		}
	})
}

func FuzzReadMultipart(f *testing.F) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.SetBoundary("b0undary")
	_ = w.WriteField("email", "ada@example.com")
	_ = w.WriteField("message", "Line\r\nnext")
	_ = w.Close()
	f.Add("b0undary", b.Bytes())
	f.Fuzz(func(t *testing.T, boundary string, body []byte) {
		vals := make([]jsonobj.Value, len(fuzzKeys))
		if err := readForm(bodyFormat{kind: kindMultipart, boundary: boundary}, body, fuzzKeys, vals); err != nil {
			return
		}
		checkRead(t, vals)
	})
}
