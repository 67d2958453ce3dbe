package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/logging"
	"github.com/formsservice/formsservice/services/platform/mail"
)

func TestDevServer_ServesTheDevMailPage(t *testing.T) {
	url := startCommand(t, "dev", func(string) string { return "" })
	code, page := httpGet(t, url+"/dev/mail/")
	if code != 200 || !strings.Contains(page, "<h1>Outbox</h1>") {
		t.Fatalf("GET /dev/mail/: %d %s", code, page)
	}
	if code, _ := httpGet(t, url+"/dev/mail/1"); code != 404 {
		t.Errorf("GET a mail that was never sent: %d", code)
	}
}

func TestFormsCommand_DoesNotServeTheDevMailPage(t *testing.T) {
	url := startFormsCommand(t, testredis.Start(t, testredis.Options{AppendFsync: "no"}).URL())
	if code, _ := httpGet(t, url+"/dev/mail/"); code != 404 {
		t.Fatalf("production forms service answered /dev/mail/ with %d, want 404", code)
	}
}

func TestMailSender_DevWithoutRelay_KeepsTheMailAndLogsItsLinks(t *testing.T) {
	var logs bytes.Buffer
	c := config.DevFixtures()
	c.ApplyDefaults()
	sender, outbox := mailSender(config.Static{C: c}, true, logging.New(&logs, "info"), "http://127.0.0.1:8080")
	err := sender.Send(t.Context(), mail.Message{To: []string{config.DevEmail}, Subject: "Confirm your address",
		Text: "Open http://127.0.0.1:8080/auth/verify?t=abc&x=1 to confirm."})
	if err != nil {
		t.Fatal(err)
	}
	if got := outbox.List(); len(got) != 1 || got[0].Subject != "Confirm your address" {
		t.Fatalf("outbox %+v", got)
	}
	for _, want := range []string{`"links":["http://127.0.0.1:8080/auth/verify?t=abc&x=1"]`, `"view":"http://127.0.0.1:8080/dev/mail/1"`, config.DevEmail} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, logs.String())
		}
	}

	prod, none := mailSender(config.Static{C: c}, false, logging.New(&logs, "info"), "")
	if none != nil {
		t.Fatal("production got an outbox")
	}
	if err := prod.Send(t.Context(), mail.Message{To: []string{config.DevEmail}, Text: "x"}); err != mail.ErrNoRelay {
		t.Fatalf("production without a relay: %v, want ErrNoRelay", err)
	}
}

// `make run` shows the contact messages it was sent: without a relay in forms.delivery, the dev server
// mails them to its outbox, where /dev/mail/ lists them.
func TestDevServer_ContactMessageLandsInTheDevOutbox(t *testing.T) {
	url := startCommand(t, "dev", func(string) string { return "" })
	req, _ := http.NewRequest(http.MethodPost, url+"/contact",
		strings.NewReader(`{"name":"Ada Lovelace","email":"ada@example.com","message":"Hello there, does the outbox show this?"}`))
	req.Header.Set("Origin", url) // the dev server accepts its own origin
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("POST /contact: %d", resp.StatusCode)
	}
	var page string
	testwait.For(t, 10*time.Second, "the contact mail in the dev outbox", func() bool {
		_, page = httpGet(t, url+"/dev/mail/")
		return strings.Contains(page, "[contact] general: Ada Lovelace")
	})
	if code, mail := httpGet(t, url+"/dev/mail/1"); code != 200 || !strings.Contains(mail, "does the outbox show this?") || !strings.Contains(mail, "team@formsservice.localhost") {
		t.Fatalf("GET /dev/mail/1: %d\n%s", code, mail)
	}
}

// `make run` shows the mailed journeys' mails: "Forgot password?" for the demo user lands a reset mail
// in the dev outbox, whose page carries the link to click.
func TestDevServer_PasswordResetMailLandsInTheDevOutbox(t *testing.T) {
	base := startCommand(t, "dev", func(string) string { return "" })
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	res, err := c.Get(base + "/account/forgot")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(string(body))
	if res.StatusCode != 200 || m == nil {
		t.Fatalf("GET /account/forgot: %d\n%.600s", res.StatusCode, body)
	}
	res, err = c.PostForm(base+"/account/forgot", neturl.Values{"csrf_token": {m[1]}, "email": {config.DevEmail}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("POST /account/forgot: %d", res.StatusCode)
	}
	var page string
	testwait.For(t, 10*time.Second, "the reset mail in the dev outbox", func() bool {
		_, page = httpGet(t, base+"/dev/mail/1")
		return strings.Contains(page, "Reset your password")
	})
	if !strings.Contains(page, base+"/account/reset?token=") {
		t.Fatalf("the dev mail page shows no reset link:\n%.2000s", page)
	}
}
