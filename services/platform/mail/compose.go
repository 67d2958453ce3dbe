package mail

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	gomail "github.com/wneessen/go-mail"
)

// maxLine is RFC 5322's limit on a line, without its CRLF (section 2.1.1).
const maxLine = 998

// msg builds go-mail's message: go-mail writes the MIME structure, the quoted-printable parts and the
// address headers, and folds every header at its spaces; encodeText makes sure a long subject has
// spaces to fold at.
func (p *Prepared) msg() (*gomail.Msg, error) {
	m := gomail.NewMsg(gomail.WithNoDefaultUserAgent(), gomail.WithEncoding(gomail.EncodingQP), gomail.WithCharset(gomail.CharsetUTF8))
	if err := m.From(p.From); err != nil {
		return nil, invalid("from: %v", err)
	}
	if err := m.To(p.To...); err != nil {
		return nil, invalid("to: %v", err)
	}
	if p.ReplyTo != "" {
		if err := m.ReplyTo(p.ReplyTo); err != nil {
			return nil, invalid("reply-to: %v", err)
		}
	}
	m.SetGenHeader(gomail.HeaderSubject, encodeText(p.Subject))
	m.SetGenHeader(gomail.HeaderMessageID, p.MessageID)
	m.SetDateWithValue(p.Date)
	if p.Unsubscribe != "" {
		m.SetGenHeader(gomail.HeaderListUnsubscribe, "<"+p.Unsubscribe+">")
		m.SetGenHeader(gomail.HeaderListUnsubscribePost, "List-Unsubscribe=One-Click")
	}
	if _, ok := p.Headers["Auto-Submitted"]; !ok {
		// RFC 3834: no auto-reply (an out-of-office answer) to a machine's mail.
		m.SetGenHeader("Auto-Submitted", "auto-generated")
	}
	names := make([]string, 0, len(p.Headers))
	for k := range p.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		m.SetGenHeader(gomail.Header(k), p.Headers[k])
	}
	m.SetBodyString(gomail.TypeTextPlain, p.Text)
	if p.HTML != "" {
		m.AddAlternativeString(gomail.TypeTextHTML, p.HTML)
	}
	return m, nil
}

// Bytes is the message as it goes over the wire (RFC 5322, CRLF line ends), checked: no line over 998
// characters.
func (p *Prepared) Bytes() ([]byte, error) {
	m, err := p.msg()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := m.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("mail: writing the message: %w", err)
	}
	if err := checkLines(b.Bytes()); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// checkLines refuses a message with a line over maxLine: a strict relay answers it with 5xx on every
// attempt, so it is better never sent (and the test that composes it fails).
func checkLines(raw []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 4096), len(raw)+1)
	for n := 1; sc.Scan(); n++ {
		if l := len(bytes.TrimSuffix(sc.Bytes(), []byte("\r"))); l > maxLine {
			return invalid("line %d is %d characters long (RFC 5322 allows %d)", n, l, maxLine)
		}
	}
	return sc.Err()
}

// longWord is the longest run without a space that a header may keep as it is: go-mail folds at
// spaces, to lines of about 76 characters, so a longer run would make a longer line.
const longWord = 60

// encodeText prepares unstructured header text (a subject): as it is when it is short-worded ASCII,
// otherwise as RFC 2047 encoded words of at most 75 characters each, separated by spaces where the
// header may be folded. Go's mime encoder leaves ASCII alone however long its words, and an ASCII text
// that looks like an encoded word ("=?") is encoded too, so a reader shows it as typed.
func encodeText(s string) string {
	needs := strings.Contains(s, "=?")
	for _, w := range strings.Split(s, " ") {
		if len(w) > longWord {
			needs = true
		}
	}
	for i := 0; i < len(s) && !needs; i++ {
		needs = s[i] >= utf8.RuneSelf || s[i] < ' ' || s[i] == 0x7f
	}
	if !needs {
		return s
	}
	const prefix, suffix = "=?utf-8?q?", "?="
	// Words of at most 60 characters, so that the first fits on the header's own line (go-mail would
	// otherwise begin with a fold: valid, but odd) and every folded line stays under 78 (RFC 5322 2.1.1).
	const room = 60 - len(prefix) - len(suffix)
	var words []string
	var cur strings.Builder
	var buf [utf8.UTFMax]byte
	for _, r := range s {
		var enc strings.Builder
		for _, c := range buf[:utf8.EncodeRune(buf[:], r)] {
			switch {
			case c == ' ':
				enc.WriteByte('_')
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("!*+-/", c) >= 0:
				enc.WriteByte(c)
			default:
				fmt.Fprintf(&enc, "=%02X", c)
			}
		}
		if cur.Len()+enc.Len() > room { // a character is never split across two words (RFC 2047 5)
			words = append(words, prefix+cur.String()+suffix)
			cur.Reset()
		}
		cur.WriteString(enc.String())
	}
	if cur.Len() > 0 {
		words = append(words, prefix+cur.String()+suffix)
	}
	return strings.Join(words, " ")
}
