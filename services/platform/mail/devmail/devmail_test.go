package devmail

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/platform/logging"
	"github.com/formsservice/formsservice/services/platform/mail"
	"github.com/formsservice/formsservice/services/platform/server"
)

// start serves the outbox's routes on a loopback port the kernel picks, as the dev server mounts them.
func start(t *testing.T, b *Outbox) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := server.New(server.Options{Logger: slog.New(slog.DiscardHandler)}, b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = app.Serve(ctx, server.ServeOptions{Listener: ln, ShutdownTimeout: 5 * time.Second})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

var verify = mail.MustContent("verify", "Confirm your address for {{.Brand.Product}}",
	"Hello {{.Data.Name}},\n\nconfirm your address: {{.Data.Link}}\n",
	`<p>Hello {{.Data.Name}},</p>{{.Button .Data.Link "Confirm my address"}}<p>Or open <a href="{{.Data.Link}}">{{.Data.Link}}</a>.</p>`)

func verification(t *testing.T, to, link string) mail.Message {
	t.Helper()
	m, err := verify.Render("en", mail.Brand{Product: "Acme", Accent: "#0b7a3e"}, map[string]string{"Name": "Zoë <b>", "Link": link})
	if err != nil {
		t.Fatal(err)
	}
	m.To, m.ID, m.Unsubscribe = []string{to}, "verify-1", "http://127.0.0.1:8080/waitlist/unsubscribe?t=u1"
	return m
}

func TestOutbox_BoundedNewestFirstAndLogsEveryLink(t *testing.T) {
	var logs bytes.Buffer
	b := New(Options{Max: 3, Logger: logging.New(&logs, "info"), BaseURL: "http://127.0.0.1:8080/"})
	for i := 1; i <= 5; i++ {
		if err := b.Send(t.Context(), verification(t, fmt.Sprintf("u%d@example.org", i), fmt.Sprintf("http://127.0.0.1:8080/verify?t=%d&x=y", i))); err != nil {
			t.Fatal(err)
		}
	}
	got := b.List()
	if len(got) != 3 || got[0].Seq != 5 || got[2].Seq != 3 || got[0].Recipients[0] != "u5@example.org" {
		t.Fatalf("outbox %d mails, first %d", len(got), got[0].Seq)
	}
	if _, ok := b.Get(2); ok {
		t.Error("mail 2 is still kept past the bound")
	}
	if m, _ := b.Get(4); m.MessageID != "<verify-1@formsservice.localhost>" || m.From != `"formsservice dev" <dev@formsservice.localhost>` {
		t.Errorf("mail 4: %s from %s", m.MessageID, m.From)
	}
	for _, want := range []string{`"to":["u5@example.org"]`, `"subject":"Confirm your address for Acme"`,
		`"links":["http://127.0.0.1:8080/verify?t=5&x=y"]`, `"unsubscribe":"http://127.0.0.1:8080/waitlist/unsubscribe?t=u1"`,
		`"view":"http://127.0.0.1:8080/dev/mail/5"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %s", want)
		}
	}
	if err := b.Send(t.Context(), mail.Message{Text: "no recipient"}); err == nil || !mail.IsPermanent(err) {
		t.Errorf("a mail the relay would refuse was kept: %v", err)
	}
}

func TestPage_ListsAndShowsAMailWithHeadersPolicyAndLinks(t *testing.T) {
	b := New(Options{})
	base := start(t, b)
	res, body := get(t, base+"/dev/mail/")
	if res.StatusCode != 200 || !strings.Contains(body, "No mail yet") {
		t.Fatalf("empty outbox: %d %s", res.StatusCode, body)
	}
	if err := b.Send(t.Context(), verification(t, "ada@example.org", "http://127.0.0.1:8080/verify?t=abc&x=1")); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, base+"/dev/mail/")
	if !strings.Contains(body, `<a href="/dev/mail/1">Confirm your address for Acme</a>`) || !strings.Contains(body, "to ada@example.org") {
		t.Errorf("list:\n%s", body)
	}
	res, body = get(t, base+"/dev/mail/1")
	csp := res.Header.Get("Content-Security-Policy")
	if res.StatusCode != 200 || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("mail page: %d, CSP %q", res.StatusCode, csp)
	}
	for _, want := range []string{
		`<a href="http://127.0.0.1:8080/verify?t=abc&amp;x=1">http://127.0.0.1:8080/verify?t=abc&amp;x=1</a>`, // text part, linked
		"Hello Zoë &lt;b&gt;,", `<iframe src="/dev/mail/1/html"`, `sandbox="`, "&lt;verify-1@formsservice.localhost&gt;",
		`<a href="http://127.0.0.1:8080/waitlist/unsubscribe?t=u1">`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("mail page lacks %s", want)
		}
	}
	res, body = get(t, base+"/dev/mail/1/html")
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") || strings.Contains(csp, "allow-scripts") || !strings.Contains(csp, "frame-ancestors 'self'") {
		t.Errorf("HTML part's CSP %q", csp)
	}
	if !strings.HasPrefix(body, `<base target="_top"><!DOCTYPE html>`) {
		t.Errorf("HTML part %.80q", body)
	}
	if res, body = get(t, base+"/dev/mail/1/raw"); !strings.Contains(body, "Message-ID: <verify-1@formsservice.localhost>") || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("raw: %s", body)
	}
	for _, path := range []string{"/dev/mail/2", "/dev/mail/0", "/dev/mail/x", "/dev/mail/+1", "/dev/mail/2/html", "/dev/mail/99999999999999999999"} {
		if res, _ := get(t, base+path); res.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", path, res.StatusCode)
		}
	}
}

// TestPage_InChromium_AccessibleAtPhoneWidthInLightAndDarkAndTheLinkIsClickable checks the dev mail
// page with axe-core (WCAG 2.2 AA) at 320 px in both colour schemes, and that a person can follow the
// mail's link from the page. (The mail's own layout has its test in package mail.)
func TestPage_InChromium_AccessibleAtPhoneWidthInLightAndDarkAndTheLinkIsClickable(t *testing.T) {
	b := New(Options{})
	base := start(t, b)
	if err := b.Send(t.Context(), verification(t, "ada@example.org", base+"/dev/mail/?from=mail")); err != nil {
		t.Fatal(err)
	}
	ctx := testbrowser.New(t)
	for _, scheme := range []string{"light", "dark"} {
		for _, page := range []string{"/dev/mail/", "/dev/mail/1"} {
			what := fmt.Sprintf("%s at 320 px, %s", page, scheme)
			testbrowser.Do(t, ctx, what, testbrowser.Viewport(320, scheme), chromedp.Navigate(base+page), chromedp.WaitReady("body"))
			testbrowser.Accessible(t, ctx, what)
			// Reflow (WCAG 1.4.10): nothing scrolls sideways at 320 px.
			if w := testbrowser.Get(t, ctx, what, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 320 {
				t.Errorf("%s: the page is %d px wide", what, w)
			}
			bg := testbrowser.Get(t, ctx, what, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
			if (scheme == "dark") != (bg == "rgb(21, 23, 26)") {
				t.Errorf("%s: the background is %s", what, bg)
			}
		}
	}
	// The text part's link, clicked, leads where the mail says.
	testbrowser.Do(t, ctx, "opening the mail", chromedp.Navigate(base+"/dev/mail/1"), chromedp.WaitVisible(`iframe[title]`))
	testbrowser.Do(t, ctx, "following the link", chromedp.Click(`section[aria-labelledby="h-text"] a`))
	testwait.For(t, 10*time.Second, "the browser on the mail's link", func() bool {
		loc, ok := testbrowser.TryGet(ctx, chromedp.Location())
		if !ok || loc != base+"/dev/mail/?from=mail" {
			return false
		}
		outbox, ok := testbrowser.TryGet(ctx, chromedp.Evaluate[bool](`document.querySelector("ol.mails") !== null`))
		return ok && outbox
	})
}
