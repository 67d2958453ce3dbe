package manage

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/forms/store"
)

// matcher finds a text in a submission's or an entry's values, in any case. Its prefilter looks for
// the text in the stored record's JSON first, so that a search through many records decodes only those
// that may hold it; a text with a character JSON may escape (quotes, backslashes, slashes — Redis's
// cjson writes \/ —, <, >, &, control characters) skips the prefilter.
type matcher struct {
	text   string // lower case
	direct bool   // the prefilter applies
	ascii  bool   // the text is ASCII: the prefilter need not lower the record (containsFold)
}

// MaxText is the longest text a search takes.
const MaxText = 200

func newMatcher(text string) *matcher {
	text = strings.ToLower(strings.TrimSpace(text))
	if text == "" {
		return nil
	}
	direct := !strings.ContainsAny(text, "\"\\/<>&\u2028\u2029") && !strings.ContainsFunc(text, unicode.IsControl)
	ascii := !strings.ContainsFunc(text, func(r rune) bool { return r >= utf8.RuneSelf })
	return &matcher{text: text, direct: direct, ascii: ascii}
}

// prefilter reports whether record may hold the text. A search through a page's scan budget runs it
// on thousands of records: an ASCII text is found without a lowered copy of each (containsFold).
func (m *matcher) prefilter(record string) bool {
	switch {
	case !m.direct:
		return true
	case m.ascii:
		return containsFold(record, m.text)
	}
	return strings.Contains(strings.ToLower(record), m.text)
}

// containsFold reports whether strings.ToLower(s) holds text (lower-case ASCII, not empty) without
// lowering s. Of the runes beyond ASCII only two lower into it, U+0130 (İ) to i and U+212A (the Kelvin
// sign) to k (TestContainsFold_AgreesWithToLower goes through every rune); an s holding either is
// lowered. Every other one lowers to bytes beyond ASCII, which never match the text's.
func containsFold(s, text string) bool {
	if strings.Contains(s, "\u0130") || strings.Contains(s, "\u212a") {
		return strings.Contains(strings.ToLower(s), text)
	}
	for i := 0; i+len(text) <= len(s); i++ {
		j := 0
		for j < len(text) && lowerASCII(s[i+j]) == text[j] {
			j++
		}
		if j == len(text) {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func (m *matcher) in(s string) bool { return strings.Contains(strings.ToLower(s), m.text) }

func (m *matcher) values(vs store.Values) bool {
	for _, v := range vs {
		switch x := v.Value.(type) {
		case string:
			if m.in(x) {
				return true
			}
		case []string:
			for _, s := range x {
				if m.in(s) {
					return true
				}
			}
		}
	}
	return false
}

// submission reports whether a field's value, a kept field's value or the ID holds the text.
func (m *matcher) submission(s Submission) bool {
	return m.in(s.ID) || m.values(s.Fields) || m.values(s.Additional)
}
