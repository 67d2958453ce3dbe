package forms

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// A declared form's double opt-in (forms.declared[].doubleOptIn): a submission stays pending — not in
// the form's stream, so neither delivered nor exported — until the address in its unique e-mail field
// follows the link of the confirmation mail, which Mailpit receives here.

// newsletterForm asks for a confirmed address.
func newsletterForm() config.DeclaredForm {
	return config.DeclaredForm{ID: "news", Title: "Product newsletter", Unique: "email", DoubleOptIn: &config.DoubleOptIn{},
		Fields: []config.FormField{
			{Name: "email", Type: config.FieldEmail, Required: true},
			{Name: "topics", Type: config.FieldManyOf, Choices: []string{"releases", "events"}},
		}}
}

func formOptInHarness(t *testing.T) (*harness, *testmail.Server, *clock) {
	t.Helper()
	mp := testmail.Start(t, testmail.Options{})
	sender, err := mail.NewSMTP(mail.SMTPOptions{Addr: mp.SMTPAddr, Security: mail.Plain,
		Defaults: mail.Defaults{From: "Example <news@example.com>"}})
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	cfg := func(publicURL string) *config.Config {
		c := declaredConfig(newsletterForm(), ticketForm("plain", nil))
		c.Forms.PublicURL = publicURL
		c.Forms.Sites = []config.Site{{Origin: formstest.Origin, Name: "Example"}}
		return c
	}
	h := newHarness(t, harnessOpts{cfg: cfg("http://127.0.0.1:1"), mail: sender, now: clk.now})
	h.src.Set(t, cfg(h.url)) // the links point at the service, whose address is known now
	return h, mp, clk
}

// sendMails runs the mailer once (the service's own loop would within seconds).
func sendMails(t *testing.T, h *harness) {
	t.Helper()
	if err := h.svc.optin.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func formLinksOf(t *testing.T, m testmail.Mail, form string) (confirm, withdraw string) {
	t.Helper()
	for _, l := range m.Links() {
		switch {
		case strings.Contains(l, "/f/"+form+"/confirm?"):
			confirm = l
		case strings.Contains(l, "/f/"+form+"/unsubscribe?"):
			withdraw = l
		}
	}
	if confirm == "" || withdraw == "" {
		t.Fatalf("the mail lacks its links: %v\n%s", m.Links(), m.Text)
	}
	return confirm, withdraw
}

func postLink(t *testing.T, link, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(link, "application/x-www-form-urlencoded", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDeclaredOptIn_PendingUntilConfirmed_Mailpit(t *testing.T) {
	h, mp, clk := formOptInHarness(t)
	ctx := t.Context()
	const addr = "ada@example.com"
	h.post("/f/news", `{"email":"Ada@Example.com","topics":["releases"]}`).expect(t, 201, "created")
	if n := h.rdb.XLen(ctx, store.FormStream("news")).Val(); n != 0 {
		t.Fatalf("%d submissions stored before the confirmation", n)
	}
	if n := h.rdb.HLen(ctx, store.FormPending("news")).Val(); n != 1 {
		t.Fatalf("%d pending submissions, want 1", n)
	}
	sendMails(t, h)
	m := mp.Latest(t, addr, 15*time.Second)
	confirm, withdraw := formLinksOf(t, m, "news")
	if m.Subject != "Confirm: Product newsletter" || m.ListUnsubscribe.Header != "<"+withdraw+">" ||
		m.ListUnsubscribe.HeaderPost != "List-Unsubscribe=One-Click" || !strings.Contains(m.Text, "Example") {
		t.Fatalf("subject %q, List-Unsubscribe %+v\n%s", m.Subject, m.ListUnsubscribe, m.Text)
	}
	if !strings.HasPrefix(confirm, h.url+"/f/news/confirm?") || strings.Contains(confirm, addr) {
		t.Fatalf("confirmation link %s", confirm)
	}

	// Sent again while pending: a duplicate, re-mailed only after the window, at most three times with
	// the window doubling (the waitlist's cap).
	h.post("/f/news", `{"email":"ada@example.com"}`).expect(t, 200, "duplicate")
	if n := h.rdb.XLen(ctx, store.FormOutbox("news")).Val(); n != 0 {
		t.Fatalf("%d mails queued again within the resend window", n)
	}
	for resend := 1; resend <= store.MaxResends; resend++ {
		testredis.EndLifetimes(t, h.rdb, "fs:{form:news}:optin:resend:*", config.DefaultResendAfter<<resend)
		h.post("/f/news", `{"email":"ada@example.com"}`).expect(t, 200, "duplicate")
		sendMails(t, h) // or the service's own loop did
		mp.WaitTo(t, addr, 1+resend, 15*time.Second)
	}
	h.rdb.Del(ctx, h.rdb.Keys(ctx, "fs:{form:news}:optin:resend:*").Val()...) // even past every window
	h.post("/f/news", `{"email":"ada@example.com"}`).expect(t, 200, "duplicate")
	if n := h.rdb.XLen(ctx, store.FormOutbox("news")).Val(); n != 0 {
		t.Fatalf("a fifth mail was queued: %d", n)
	}

	// Opening the link changes nothing (mail scanners open links); its button's POST confirms.
	resp, err := http.Get(confirm)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || h.rdb.XLen(ctx, store.FormStream("news")).Val() != 0 {
		t.Fatalf("GET of the link: %d, stream %d", resp.StatusCode, h.rdb.XLen(ctx, store.FormStream("news")).Val())
	}
	code, body := postLink(t, confirm, "")
	if code != 200 || !strings.Contains(body, "is confirmed") {
		t.Fatalf("confirming: %d %s", code, body)
	}
	recs := storedForm(t, h, "news")
	if len(recs) != 1 || recs[0].ConfirmedAt == nil || !recs[0].ConfirmedAt.Equal(clk.now()) ||
		recs[0].Fields.Get("email") != "Ada@Example.com" || jsonText(recs[0].Fields.Get("topics")) != "[releases]" {
		t.Fatalf("stored after the confirmation: %+v", recs)
	}
	if n := h.rdb.HLen(ctx, store.FormPending("news")).Val(); n != 0 {
		t.Fatalf("%d pending after the confirmation", n)
	}
	if days := h.rdb.HVals(ctx, store.FormDaily("news")).Val(); len(days) != 1 || days[0] != "1" {
		t.Fatalf("the per-day counts after the confirmation: %v, want one arrival (none while pending)", days)
	}
	var csv strings.Builder
	if _, err := store.ExportForm(ctx, h.rdb, &csv, store.FormatCSV, "news"); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(csv.String()), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[0], ",confirmed_at") ||
		!strings.HasSuffix(lines[1], ","+clk.now().Format(time.RFC3339Nano)) {
		t.Fatalf("the export:\n%s", csv.String())
	}
	if code, body = postLink(t, confirm, ""); code != 200 || !strings.Contains(body, "Already confirmed") {
		t.Fatalf("the link again: %d %s", code, body)
	}
	if n := len(storedForm(t, h, "news")); n != 1 {
		t.Fatalf("the link used twice stored %d", n)
	}
	// Confirmed, the address is a duplicate as on any form with a unique field, and mails nothing.
	h.post("/f/news", `{"email":"ada@example.com"}`).expect(t, 200, "duplicate")
	if n := h.rdb.XLen(ctx, store.FormOutbox("news")).Val(); n != 0 {
		t.Fatalf("a confirmed address was mailed again: %d", n)
	}
	sendMails(t, h)
	if n := len(mp.To(t, addr)); n != 1+store.MaxResends {
		t.Fatalf("%d mails to %s, want %d: one and %d re-sends", n, addr, 1+store.MaxResends, store.MaxResends)
	}
	if h.counter("formsservice_forms_optin_links_total", "action", "confirm", "result", "done") != 1 {
		t.Error("the confirmation is not counted")
	}

	// Forged links, and a link of this form at another form: 400, nothing changes.
	u, _ := url.Parse(confirm)
	q := u.Query()
	q.Set("x", "99999999999") // a later expiry under the old signature
	u.RawQuery = q.Encode()
	if code, _ := postLink(t, u.String(), ""); code != http.StatusBadRequest {
		t.Fatalf("a stretched link: %d", code)
	}
	other := strings.Replace(confirm, "/f/news/", "/f/plain/", 1)
	if code, _ := postLink(t, other, ""); code != http.StatusBadRequest {
		t.Fatalf("the link at another form: %d", code)
	}
	if code, _ := postLink(t, strings.Replace(confirm, "/f/news/", "/f/gone/", 1), ""); code != http.StatusGone {
		t.Fatalf("the link at a form not declared: %d", code)
	}
}

// The mail's one-click unsubscribe withdraws a pending submission: it is erased, its links answer 410,
// and the address may send the form anew; one left unconfirmed is erased by the sweep. (forget:
// store.TestForget_ErasesPendingFormSubmissionsAndTheirMails, without a mailer that could take the mail.)
func TestDeclaredOptIn_WithdrawAndExpire(t *testing.T) {
	h, mp, clk := formOptInHarness(t)
	ctx := t.Context()
	h.post("/f/news", `{"email":"bob@example.com"}`).expect(t, 201, "created")
	sendMails(t, h)
	confirm, withdraw := formLinksOf(t, mp.Latest(t, "bob@example.com", 15*time.Second), "news")
	if code, body := postLink(t, withdraw, "List-Unsubscribe=One-Click"); code != 200 || !strings.Contains(body, "Withdrawn") {
		t.Fatalf("one-click unsubscribe: %d %s", code, body)
	}
	if n := h.rdb.HLen(ctx, store.FormPending("news")).Val(); n != 0 {
		t.Fatalf("%d pending after the withdrawal", n)
	}
	if code, _ := postLink(t, confirm, ""); code != http.StatusGone {
		t.Fatalf("confirming a withdrawn submission: %d", code)
	}
	if code, _ := postLink(t, withdraw, "List-Unsubscribe=One-Click"); code != 200 {
		t.Fatalf("withdrawing again: %d", code)
	}
	h.post("/f/news", `{"email":"bob@example.com"}`).expect(t, 201, "created") // the address is free again

	// Left unconfirmed past confirmWithin: erased by the sweep, with its unique value.
	clk.add(config.DefaultConfirmWithin + time.Minute)
	if err := h.svc.optin.Sweep(ctx, h.src.Current()); err != nil {
		t.Fatal(err)
	}
	if n := h.rdb.HLen(ctx, store.FormPending("news")).Val(); n != 0 {
		t.Fatalf("%d pending after the sweep", n)
	}
	if n := h.rdb.HLen(ctx, store.FormUnique("news")).Val(); n != 0 {
		t.Fatalf("the expired submission still holds its address: %d", n)
	}
	if n := len(storedForm(t, h, "news")); n != 0 {
		t.Fatalf("%d stored without a confirmation", n)
	}

}

// The form's confirmation and withdrawal pages in Chromium: the GET shows a button and changes nothing,
// the button confirms; each page meets WCAG 2.2 AA (axe-core) at 320 px in light and dark mode.
func TestDeclaredOptIn_PagesInChromium(t *testing.T) {
	h, mp, _ := formOptInHarness(t)
	h.post("/f/news", `{"email":"dee@example.com"}`).expect(t, 201, "created")
	sendMails(t, h)
	confirm, withdraw := formLinksOf(t, mp.Latest(t, "dee@example.com", 15*time.Second), "news")
	ctx := testbrowser.New(t)
	for _, link := range []struct{ url, title string }{{withdraw, "Withdraw this submission"}, {confirm, "Confirm your submission"}} {
		testbrowser.Do(t, ctx, link.title, chromedp.Navigate(link.url), chromedp.WaitVisible(chromedp.CSS("button")))
		waitTitle(t, ctx, link.title)
		for _, scheme := range []string{"light", "dark"} {
			testbrowser.Do(t, ctx, "viewport", testbrowser.Viewport(320, scheme))
			testbrowser.Accessible(t, ctx, link.title+", "+scheme)
			if px := testbrowser.Get(t, ctx, "width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); px > 320 {
				t.Errorf("%s is %d px wide at 320", link.title, px)
			}
		}
	}
	if n := h.rdb.XLen(t.Context(), store.FormStream("news")).Val(); n != 0 {
		t.Fatal("opening the links stored the submission")
	}
	testbrowser.Do(t, ctx, "confirming", chromedp.Click(chromedp.CSS("button")))
	waitTitle(t, ctx, "Thank you")
	testbrowser.Accessible(t, ctx, "the confirmed page")
	if n := len(storedForm(t, h, "news")); n != 1 {
		t.Fatalf("%d stored after the button", n)
	}
}
