package files

import (
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// A sender's file name becomes a name that is safe to store, show in a mail and send in a
// Content-Disposition, whatever the sender's computer called it.
func FuzzSafeName(f *testing.F) {
	for _, s := range []string{"cv.pdf", `C:\Users\ada\cv.pdf`, "../../etc/passwd", "a\x00b\r\nc.txt", "\u202eexe.pdf",
		`"quoted".png`, strings.Repeat("é", 150), "\xff\xfe.bin", "", ".", "..", " / "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := SafeName(in)
		switch {
		case out == "" || out == "." || out == "..":
			t.Fatalf("%q: an empty or dot name %q", in, out)
		case len(out) > 200 || !utf8.ValidString(out):
			t.Fatalf("%q: %q is too long or not UTF-8", in, out)
		case strings.ContainsAny(out, `/\"`):
			t.Fatalf("%q: %q holds a path separator or a quote", in, out)
		case strings.IndexFunc(out, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0:
			t.Fatalf("%q: %q holds a control or format character", in, out)
		case SafeName(out) != out:
			t.Fatalf("%q: %q is not stable", in, out)
		}
	})
}

func TestSniff_ReadsTheBytesNotTheName(t *testing.T) {
	for head, want := range map[string]string{
		"%PDF-1.7\n":                      "application/pdf",
		"\x89PNG\r\n\x1a\n\x00\x00\x00\r": "image/png",
		"\xff\xd8\xff\xe0":                "image/jpeg",
		"PK\x03\x04":                      "application/zip",
		"just text":                       "text/plain",
		"":                                EmptyType,
	} {
		if got := Sniff([]byte(head)); got != want {
			t.Errorf("%q: %s, want %s", head, got, want)
		}
	}
}

// A link holds for its form, id and expiry only, until then; the key must be long enough.
func TestLinks_SignedForFormIDAndExpiry(t *testing.T) {
	if _, err := NewLinks([]byte("short")); err == nil {
		t.Fatal("a short key was taken")
	}
	l, _ := NewLinks([]byte(strings.Repeat("k", 32)))
	other, _ := NewLinks([]byte(strings.Repeat("j", 32)))
	now := time.Unix(1_800_000_000, 0)
	exp := "1800000060"
	sig := l.sign("apply", "id", exp)
	if err := l.Check("apply", "id", exp, sig, now); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"another form":   l.Check("other", "id", exp, sig, now),
		"another id":     l.Check("apply", "id2", exp, sig, now),
		"another expiry": l.Check("apply", "id", "1800000061", sig, now),
		"another key":    other.Check("apply", "id", exp, sig, now),
		"no signature":   l.Check("apply", "id", exp, "", now),
	} {
		if err != ErrBadLink {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := l.Check("apply", "id", exp, sig, now.Add(time.Minute)); err != ErrExpiredLink {
		t.Errorf("at its expiry: %v", err)
	}
}
