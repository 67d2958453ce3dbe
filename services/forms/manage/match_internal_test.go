package manage

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The prefilter's ASCII search must find exactly what a search in the lowered record finds: a record
// it wrongly leaves out is a submission missing from a search.
func TestContainsFold_AgreesWithToLower(t *testing.T) {
	var toASCII []rune
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l < utf8.RuneSelf {
			toASCII = append(toASCII, r)
		}
	}
	if string(toASCII) != "\u0130\u212a" {
		t.Fatalf("runes beyond ASCII that lower into it: %q; containsFold knows U+0130 and U+212A only", toASCII)
	}
	records := []string{
		`{"name":"Ada LOVELACE","email":"ada@example.com"}`,
		`{"name":"Grace Hopper","message":"Zürich, Straße, ÉCOLE"}`,
		"{\"name\":\"\u212aelvin\"}",          // the Kelvin sign lowers to k
		"{\"city\":\"\u0130stanbul\"}",        // İ lowers to i
		"{\"bad\":\"ab\xffcd\",\"x\":\"EF\"}", // invalid UTF-8 lowers to U+FFFD
		"", "a", "ÀDA",
	}
	texts := []string{"ada", "lovelace", "hopper", "zürich", "ecole", "kelvin", "istanbul", "abcd", "cd", "ef", "a", "@example.com", "x\":"}
	for _, rec := range records {
		for _, text := range texts {
			if !isASCII(text) {
				continue // the prefilter lowers the record for these
			}
			want := strings.Contains(strings.ToLower(rec), text)
			if got := containsFold(rec, text); got != want {
				t.Errorf("containsFold(%q, %q) = %v, the lowered record says %v", rec, text, got, want)
			}
		}
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
