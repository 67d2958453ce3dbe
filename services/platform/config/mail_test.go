package config

import (
	"strings"
	"testing"
	"time"
)

func TestMail_DefaultsAndAValidRelay(t *testing.T) {
	c, err := Parse([]byte(`
mail:
  from: Acme <no-reply@acme.example>
  replyTo: support@acme.example
  smtp:
    addr: smtp.acme.example:587
    username: mailer
    passwordFile: /secrets/smtp/password
`))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if s := c.Mail.SMTP; s.TLS != MailTLSStartTLS || s.Timeout.D() != 10*time.Second {
		t.Fatalf("defaults %+v", s)
	}
	m, ok := c.MailSettings()
	if !ok || m.SMTP.Addr != "smtp.acme.example:587" || m.From != "Acme <no-reply@acme.example>" {
		t.Fatalf("settings %+v %v", m, ok)
	}
}

func TestMail_Validate_ReportsEveryProblem(t *testing.T) {
	c, err := Parse([]byte(`
mail:
  replyTo: "not an address"
  messageIDDomain: "bad domain"
  smtp:
    addr: smtp.acme.example
    tls: ssl
    username: mailer
    caFile: " /ca.pem"
    timeout: -1s
`))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	err = c.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"mail.from: required", "mail.replyTo", "mail.messageIDDomain", "mail.smtp.addr", "mail.smtp.tls \"ssl\"",
		"username and passwordFile go together", "mail.smtp.caFile", "mail.smtp.timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
}

func TestMail_PlainTextOnlyToALoopbackRelay(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:25": true, "localhost:1025": true, "[::1]:25": true,
		"mail.internal:25": false, "10.0.0.5:25": false,
	} {
		c, err := Parse([]byte("mail: {from: a@example.com, smtp: {addr: '" + addr + "', tls: none}}"))
		if err != nil {
			t.Fatal(err)
		}
		c.ApplyDefaults()
		err = c.Validate()
		if ok && err != nil {
			t.Errorf("%s: %v", addr, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "clear text")) {
			t.Errorf("%s: got %v, want a refusal of clear text", addr, err)
		}
	}
}

func TestMail_UnknownKey_IsAnError(t *testing.T) {
	if _, err := Parse([]byte("mail: {smtp: {addr: 'h:25', startTLS: true}}")); err == nil {
		t.Fatal("an unknown key was accepted")
	}
}

func TestMailSettings_FallsBackToTheFormsRelayAsDocumented(t *testing.T) {
	c, err := Parse([]byte(`
forms:
  delivery:
    smtp: {addr: 'relay.internal:25', from: 'Forms <forms@acme.example>', to: [team@acme.example], username: u, passwordFile: /p}
`))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	m, ok := c.MailSettings()
	if !ok || m.From != "Forms <forms@acme.example>" || m.SMTP.Addr != "relay.internal:25" || m.SMTP.TLS != MailTLSStartTLS || m.SMTP.Username != "u" {
		t.Fatalf("settings %+v %+v", m, m.SMTP)
	}
	c.Forms.Delivery.SMTP.StartTLS = true
	c.Mail.From = "Acme <no-reply@acme.example>"
	if m, _ := c.MailSettings(); m.SMTP.TLS != MailTLSStartTLS || m.From != "Acme <no-reply@acme.example>" {
		t.Fatalf("settings %+v %+v", m, m.SMTP)
	}
	if _, ok := (&Config{}).MailSettings(); ok {
		t.Fatal("no relay, yet settings")
	}
}
