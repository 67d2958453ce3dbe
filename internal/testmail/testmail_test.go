package testmail

import (
	"net/smtp"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testproc"
)

const sample = "From: a@example.net\r\nTo: Bob <bob@example.org>\r\nSubject: hi\r\nMessage-ID: <1@example.net>\r\n" +
	"List-Unsubscribe: <https://example.net/u?t=1>\r\nMIME-Version: 1.0\r\n" +
	"Content-Type: multipart/alternative; boundary=b\r\n\r\n" +
	"--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nOpen https://example.net/text?x=1.\r\n" +
	"--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p><a href=\"https://example.net/html?a=1&amp;b=2\">go</a></p>\r\n--b--\r\n"

func TestStart_ReceivesAMailAndReadsItsPartsHeadersAndLinks(t *testing.T) {
	s := Start(t, Options{})
	if err := smtp.SendMail(s.SMTPAddr, nil, "a@example.net", []string{"bob@example.org"}, []byte(sample)); err != nil {
		t.Fatal(err)
	}
	m := s.Latest(t, "bob@example.org", 10*time.Second)
	if m.Subject != "hi" || m.MessageID != "1@example.net" || m.Header("message-id") != "<1@example.net>" {
		t.Errorf("subject %q, Message-ID %q / %q", m.Subject, m.MessageID, m.Header("Message-ID"))
	}
	if !strings.Contains(m.Text, "Open https://example.net/text") || !strings.Contains(m.HTML, "<a href=") {
		t.Errorf("parts: text %q html %q", m.Text, m.HTML)
	}
	if got := strings.Join(m.Links(), " "); got != "https://example.net/html?a=1&b=2 https://example.net/text?x=1" {
		t.Errorf("links %q", got)
	}
	if m.ListUnsubscribe.Header != "<https://example.net/u?t=1>" || !strings.Contains(m.Raw, "\r\nSubject: hi\r\n") {
		t.Errorf("List-Unsubscribe %+v / raw %q", m.ListUnsubscribe, m.Raw)
	}
	if n := len(s.To(t, "nobody@example.org")); n != 0 {
		t.Errorf("%d mails to an address nothing was sent to", n)
	}
}

func TestStart_RecipientOutsideAllowedList_GetsA550(t *testing.T) {
	s := Start(t, Options{AllowedRecipients: `@example\.org$`})
	err := smtp.SendMail(s.SMTPAddr, nil, "a@example.net", []string{"x@elsewhere.test"}, []byte(sample))
	if err == nil || !strings.HasPrefix(err.Error(), "550") {
		t.Fatalf("got %v, want a 550 refusal", err)
	}
}

// `make deps-mail` must install the version the tests look for in bin/.
func TestVersion_IsTheOneTheInstallScriptBuilds(t *testing.T) {
	v, err := testproc.ScriptVersion("hack/install-mailpit.sh", "MAILPIT_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if v != Version {
		t.Errorf("hack/install-mailpit.sh builds Mailpit %s, the tests run %s", v, Version)
	}
}
