package manage

import (
	"strings"
	"unicode"

	"github.com/formsservice/formsservice/services/forms/store"
)

// matcher finds a text in a submission's or an entry's values, in any case. Its prefilter looks for
// the text in the stored record's JSON first, so that a search through many records decodes only those
// that may hold it; a text with a character JSON may escape (quotes, backslashes, slashes — Redis's
// cjson writes \/ —, <, >, &, control characters) skips the prefilter.
type matcher struct {
	text   string // lower case
	direct bool   // the prefilter applies
}

// MaxText is the longest text a search takes.
const MaxText = 200

func newMatcher(text string) *matcher {
	text = strings.ToLower(strings.TrimSpace(text))
	if text == "" {
		return nil
	}
	direct := !strings.ContainsAny(text, "\"\\/<>&\u2028\u2029") && !strings.ContainsFunc(text, unicode.IsControl)
	return &matcher{text: text, direct: direct}
}

// prefilter reports whether record may hold the text.
func (m *matcher) prefilter(record string) bool {
	return !m.direct || strings.Contains(strings.ToLower(record), m.text)
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
