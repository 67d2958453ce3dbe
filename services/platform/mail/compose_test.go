package mail

import (
	"bytes"
	"errors"
	"mime"
	"net/mail"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCompose: whatever a person types into a name or a subject, the composed mail parses, keeps every
// line within RFC 5322's 998 characters, carries no header the input smuggled in, and shows the
// subject as typed (line breaks become spaces).
func FuzzCompose(f *testing.F) {
	f.Add("Zoë", "Hello", "x")
	f.Add(strings.Repeat("Ünïcödé ", 300), strings.Repeat("✓", 2000), "body")
	f.Add("Eve\r\nBcc: v@example.org", "=?utf-8?q?hi?=\r\nX-Evil: 1", ".\r\n.")
	f.Add(strings.Repeat("a", 1200), strings.Repeat("b", 1200), strings.Repeat("c", 5000))
	f.Fuzz(func(t *testing.T, name, subject, text string) {
		if !utf8.ValidString(name) || !utf8.ValidString(subject) || !utf8.ValidString(text) {
			return
		}
		m := Message{
			To: []string{"ada@example.org"}, ReplyTo: (&mail.Address{Name: name, Address: "zoe@example.com"}).String(),
			Subject: subject, Text: text + "x", ID: name,
		}
		p, err := Defaults{From: "a@example.net"}.Prepare(m)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Prepare: %v", err)
			}
			return
		}
		raw, err := p.Bytes()
		if err != nil {
			t.Fatalf("Bytes: %v", err)
		}
		for i, line := range bytes.Split(raw, []byte("\r\n")) {
			if len(line) > maxLine {
				t.Fatalf("line %d: %d characters", i+1, len(line))
			}
		}
		msg, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("the composed mail does not parse: %v", err)
		}
		for _, h := range []string{"Bcc", "X-Evil"} {
			if msg.Header.Get(h) != "" {
				t.Fatalf("%s header smuggled in", h)
			}
		}
		got, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
		if err != nil {
			t.Fatalf("subject %q: %v", msg.Header.Get("Subject"), err)
		}
		// Runs of white space are compared as one: a long subject is folded at white space, and Go's
		// header reader (net/textproto) joins a folded line with a single space where RFC 5322's
		// unfolding keeps the run, so "a  b" folded between its spaces reads back as "a b" here only.
		if want := strings.Fields(oneLine(subject)); !slices.Equal(strings.Fields(got), want) {
			t.Fatalf("subject %q, want %q", got, oneLine(subject))
		}
		if !strings.HasPrefix(msg.Header.Get("Message-ID"), "<") || strings.Count(msg.Header.Get("Message-ID"), "@") != 1 {
			t.Fatalf("Message-ID %q", msg.Header.Get("Message-ID"))
		}
	})
}
