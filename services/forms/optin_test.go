package forms

import (
	"bytes"
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/optin"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// clock is the service's clock, moved by the test.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// optInHarness runs the forms with the double opt-in on, mailing through Mailpit, on the test's clock.
func optInHarness(t *testing.T) (*harness, *testmail.Server, *clock) {
	t.Helper()
	mp := testmail.Start(t, testmail.Options{})
	sender, err := mail.NewSMTP(mail.SMTPOptions{Addr: mp.SMTPAddr, Security: mail.Plain,
		Defaults: mail.Defaults{From: "Example <waitlist@example.com>"}})
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	cfg := func(publicURL string) *config.Config {
		c := formstest.Config()
		c.Forms.PublicURL = publicURL
		c.Forms.DoubleOptIn = &config.DoubleOptIn{}
		c.Forms.Sites = []config.Site{{Origin: formstest.Origin, Name: "Example", ConsentVersion: "2026-03 waitlist v1"}}
		return c
	}
	h := newHarness(t, harnessOpts{cfg: cfg("http://127.0.0.1:1"), mail: sender, now: clk.now})
	h.src.Set(t, cfg(h.url)) // the links point at the service, whose address is known now
	return h, mp, clk
}

// linksOf returns a confirmation mail's confirmation and unsubscribe links.
func linksOf(t *testing.T, m testmail.Mail) (confirm, unsubscribe string) {
	t.Helper()
	for _, l := range m.Links() {
		switch {
		case strings.Contains(l, optin.ConfirmPath+"?"):
			confirm = l
		case strings.Contains(l, optin.UnsubscribePath+"?"):
			unsubscribe = l
		}
	}
	if confirm == "" || unsubscribe == "" {
		t.Fatalf("the mail lacks its links: %v\n%s", m.Links(), m.Text)
	}
	return confirm, unsubscribe
}

func entry(t *testing.T, h *harness, addr string) store.WaitlistRecord {
	t.Helper()
	rec, ok := storedWaitlist(t, h, addr)
	if !ok {
		t.Fatalf("%s is not on the waitlist", addr)
	}
	return rec
}

func TestOptIn_SignUpConfirmUnsubscribe_MailpitAndChromium(t *testing.T) {
	h, mp, clk := optInHarness(t)
	const addr = "ada@example.com"
	h.post("/waitlist", `{"email":"Ada@Example.com","consent":true}`).expect(t, 201, "created")
	rec := entry(t, h, addr)
	if rec.State != store.StatePending || rec.ID == "" || rec.ConsentVersion != "2026-03 waitlist v1" || rec.Origin != formstest.Origin || !rec.CreatedAt.Equal(clk.now()) {
		t.Fatalf("stored %+v", rec)
	}

	// The confirmation mail, with RFC 8058 one-click unsubscribe.
	m := mp.Latest(t, addr, 15*time.Second)
	confirm, unsubscribe := linksOf(t, m)
	if m.Subject != "Confirm your sign-up to Example" || m.ListUnsubscribe.Header != "<"+unsubscribe+">" ||
		m.ListUnsubscribe.HeaderPost != "List-Unsubscribe=One-Click" || m.ListUnsubscribe.Errors != "" {
		t.Fatalf("subject %q, List-Unsubscribe %+v, link %s", m.Subject, m.ListUnsubscribe, unsubscribe)
	}
	if !strings.HasPrefix(confirm, h.url+optin.ConfirmPath) || strings.Contains(confirm, addr) {
		t.Fatalf("confirmation link %s", confirm)
	}

	// Signing up again while pending: a duplicate, and the mail is not sent again within the window...
	h.post("/waitlist", `{"email":"ada@example.com","consent":true}`).expect(t, 200, "duplicate")
	if n := h.rdb.XLen(t.Context(), store.WaitlistOutbox).Val(); n != 0 {
		t.Fatalf("%d mails queued again within the resend window", n)
	}
	// ...but once it is over, it is.
	testredis.EndLifetimes(t, h.rdb, "fs:{waitlist}:resend:*", config.DefaultResendAfter)
	h.post("/waitlist", `{"email":"ada@example.com","consent":true}`).expect(t, 200, "duplicate")
	mp.WaitTo(t, addr, 2, 15*time.Second)

	// The link in Chromium: the GET shows a button and confirms nothing (mail scanners open links).
	ctx := testbrowser.New(t)
	testbrowser.Do(t, ctx, "the confirmation link", chromedp.Navigate(confirm), chromedp.WaitVisible(chromedp.CSS("button")))
	if entry(t, h, addr).State != store.StatePending {
		t.Fatal("opening the link confirmed the sign-up")
	}
	for _, scheme := range []string{"light", "dark"} {
		testbrowser.Do(t, ctx, "viewport", testbrowser.Viewport(320, scheme))
		testbrowser.Accessible(t, ctx, "the confirmation page, "+scheme)
		if px := testbrowser.Get(t, ctx, "width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); px > 320 {
			t.Errorf("the confirmation page is %d px wide at 320", px)
		}
	}
	testbrowser.Do(t, ctx, "confirming", chromedp.Click(chromedp.CSS("button")), chromedp.WaitVisible(chromedp.CSS("h1")))
	waitTitle(t, ctx, "You are on the waitlist")
	testbrowser.Accessible(t, ctx, "the confirmed page")
	rec = entry(t, h, addr)
	if rec.State != store.StateConfirmed || !rec.ConfirmedAt.Equal(clk.now()) {
		t.Fatalf("after confirming: %+v", rec)
	}
	if h.rdb.ZScore(t.Context(), store.WaitlistPending, addr).Err() == nil {
		t.Fatal("a confirmed entry still waits to expire")
	}

	// The link used again: nothing changes.
	testbrowser.Do(t, ctx, "the link again", chromedp.Navigate(confirm), chromedp.WaitVisible(chromedp.CSS("button")), chromedp.Click(chromedp.CSS("button")))
	waitTitle(t, ctx, "Already confirmed")

	// A forged link: another signature, or another entry's id with this one's signature.
	u, _ := url.Parse(confirm)
	q := u.Query()
	for _, forge := range []func(url.Values){
		func(v url.Values) { v.Set("s", strings.Repeat("A", 43)) },
		func(v url.Values) { v.Set("e", strings.Repeat("0", 32)) },
		func(v url.Values) { v.Set("x", "99999999999") }, // a later expiry under the old signature
	} {
		v := url.Values{}
		for k, vs := range q {
			v[k] = append([]string(nil), vs...)
		}
		forge(v)
		u.RawQuery = v.Encode()
		testbrowser.Do(t, ctx, "a forged link", chromedp.Navigate(u.String()))
		waitTitle(t, ctx, "This link is not valid")
		resp, err := http.Post(u.String(), "application/x-www-form-urlencoded", nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("POST of a forged link: %v %v", resp.StatusCode, err)
		}
		resp.Body.Close()
	}

	// One-click unsubscribe as a mail client does it (RFC 8058): a POST to the List-Unsubscribe URL.
	resp, err := http.Post(unsubscribe, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("one-click unsubscribe: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	clk.add(time.Minute)
	rec = entry(t, h, addr)
	if rec.State != store.StateUnsubscribed || rec.UnsubscribedAt.IsZero() || rec.ConsentVersion == "" {
		t.Fatalf("after unsubscribing: %+v", rec)
	}
	// The unsubscribe page in Chromium: the GET asks, and says so again when pressed.
	testbrowser.Do(t, ctx, "the unsubscribe link", chromedp.Navigate(unsubscribe), chromedp.WaitVisible(chromedp.CSS("button")))
	testbrowser.Accessible(t, ctx, "the unsubscribe page")
	testbrowser.Do(t, ctx, "unsubscribing again", chromedp.Click(chromedp.CSS("button")))
	waitTitle(t, ctx, "You are unsubscribed")

	// The confirmation link of the second mail no longer confirms.
	second, _ := linksOf(t, mp.Latest(t, addr, time.Second))
	resp, err = http.Post(second, "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("confirming after unsubscribing: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if entry(t, h, addr).State != store.StateUnsubscribed {
		t.Fatal("an old link re-subscribed the address")
	}

	// Export shows the state and the consent.
	var b bytes.Buffer
	if _, err := store.ExportWaitlist(t.Context(), h.rdb, &b, store.FormatCSV); err != nil {
		t.Fatal(err)
	}
	rows, _ := csv.NewReader(&b).ReadAll()
	if len(rows) != 2 || rows[1][8] != "unsubscribed" || rows[1][9] != "2026-03 waitlist v1" || rows[1][10] == "" || rows[1][11] == "" {
		t.Fatalf("export %v", rows)
	}

	// Signing up again after unsubscribing starts over: pending, a new id, a new mail.
	h.post("/waitlist", `{"email":"ada@example.com","consent":true}`).expect(t, 201, "created")
	if again := entry(t, h, addr); again.State != store.StatePending || again.ID == rec.ID {
		t.Fatalf("signed up again: %+v (before: %s)", again, rec.ID)
	}
	mp.WaitTo(t, addr, 3, 15*time.Second)
}

func TestOptIn_Unconfirmed_ExpiresWithItsLink(t *testing.T) {
	h, mp, clk := optInHarness(t)
	const addr = "late@example.com"
	h.post("/waitlist", `{"email":"late@example.com","consent":true}`).expect(t, 201, "created")
	confirm, unsubscribe := linksOf(t, mp.Latest(t, addr, 15*time.Second))

	// Just before its time the entry is kept.
	clk.add(config.DefaultConfirmWithin - time.Minute)
	if err := h.svc.optin.Sweep(t.Context(), h.src.Current()); err != nil {
		t.Fatal(err)
	}
	entry(t, h, addr)
	// After it, the link has expired and the entry is erased, with its id.
	clk.add(2 * time.Minute)
	resp, err := http.Post(confirm, "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("an expired link: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if err := h.svc.optin.Sweep(t.Context(), h.src.Current()); err != nil {
		t.Fatal(err)
	}
	if _, ok := storedWaitlist(t, h, addr); ok {
		t.Fatal("an unconfirmed entry outlived its time")
	}
	if n := h.rdb.HLen(t.Context(), store.WaitlistIDs).Val(); n != 0 {
		t.Fatalf("%d ids left in the index", n)
	}
	if n := h.rdb.LLen(t.Context(), store.WaitlistOrder).Val(); n != 0 {
		t.Fatalf("%d addresses left in the order", n)
	}
	if formstest.Counter(t, h.reg, "formsservice_forms_optin_expired_total") != 1 {
		t.Error("the expiry is not counted")
	}
	// The unsubscribe link of an erased entry still answers: the address gets no mail either way.
	resp, err = http.Post(unsubscribe, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("unsubscribing an erased entry: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
}

func TestWaitlistRetention_ErasesEntriesOlderThanIt(t *testing.T) {
	clk := newClock()
	c := formstest.Config()
	c.Forms.WaitlistRetention = config.Duration(30 * 24 * time.Hour)
	h := newHarness(t, harnessOpts{cfg: c, now: clk.now})
	h.post("/waitlist", `{"email":"old@example.com","consent":true}`).expect(t, 201, "created")
	clk.add(20 * 24 * time.Hour)
	h.post("/waitlist", `{"email":"new@example.com","consent":true}`).expect(t, 201, "created")
	clk.add(11 * 24 * time.Hour) // the first is 31 days old, the second 11
	if err := h.svc.optin.Sweep(t.Context(), h.src.Current()); err != nil {
		t.Fatal(err)
	}
	if _, ok := storedWaitlist(t, h, "old@example.com"); ok {
		t.Fatal("an entry older than the retention was kept")
	}
	if _, ok := storedWaitlist(t, h, "new@example.com"); !ok {
		t.Fatal("a younger entry was erased")
	}
	if got := h.rdb.LRange(t.Context(), store.WaitlistOrder, 0, -1).Val(); len(got) != 1 || got[0] != "new@example.com" {
		t.Fatalf("order %v", got)
	}
}

func waitTitle(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	var got string
	testwait.For(t, 10*time.Second, "the page "+want, func() bool {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var err error
		got, err = chromedp.Run(c, chromedp.Text(chromedp.CSS("h1"))) // fails while the next page loads
		return err == nil && got == want
	})
}

// An unsubscription is the record that the address asked for no mail (who, when). Anyone can sign the
// address up again: the new sign-up carries the last unsubscription's time, and if it is never
// confirmed, the entry goes back to the unsubscribed record it replaced instead of vanishing with it.
func TestOptIn_SignUpAgainAfterUnsubscribing_KeepsTheSuppressionRecord(t *testing.T) {
	h, mp, clk := optInHarness(t)
	const addr = "gone@example.com"
	body := `{"email":"gone@example.com","consent":true}`
	h.post("/waitlist", body).expect(t, 201, "created")
	_, unsubscribe := linksOf(t, mp.Latest(t, addr, 15*time.Second))
	resp, err := http.Post(unsubscribe, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	first := entry(t, h, addr)
	if first.State != store.StateUnsubscribed || first.UnsubscribedAt.IsZero() {
		t.Fatalf("after unsubscribing: %+v", first)
	}

	clk.add(time.Hour)
	h.post("/waitlist", body).expect(t, 201, "created")
	again := entry(t, h, addr)
	if again.State != store.StatePending || !again.UnsubscribedAt.Equal(first.UnsubscribedAt) {
		t.Fatalf("signed up again: state %q, unsubscribed_at %v, want pending with %v kept", again.State, again.UnsubscribedAt, first.UnsubscribedAt)
	}

	clk.add(config.DefaultConfirmWithin + time.Minute)
	if err := h.svc.optin.Sweep(t.Context(), h.src.Current()); err != nil {
		t.Fatal(err)
	}
	back, ok := storedWaitlist(t, h, addr)
	if !ok {
		t.Fatal("the unconfirmed sign-up took the suppression record with it")
	}
	if back.State != store.StateUnsubscribed || !back.UnsubscribedAt.Equal(first.UnsubscribedAt) ||
		!back.CreatedAt.Equal(first.CreatedAt) || back.ID != first.ID {
		t.Fatalf("after the sign-up expired: %+v, want the first record %+v", back, first)
	}
	if got := h.rdb.HGet(t.Context(), store.WaitlistIDs, first.ID).Val(); got != addr {
		t.Fatalf("the first id's index %q, want %s (its unsubscribe link answers as before)", got, addr)
	}
	if got := h.rdb.HLen(t.Context(), store.WaitlistIDs).Val(); got != 1 {
		t.Fatalf("%d ids indexed, want the first one only", got)
	}
}

// A sign-up after an unsubscription rewrites the entry's created_at but keeps its place in the sign-up
// order, which retention walks oldest first: the young entry must not stop it, or every entry behind it
// outlives the retention (a 33-day-old one under a 30-day retention, here).
func TestWaitlistRetention_PassesAnEntrySignedUpAgainAndErasesOlderOnesBehindIt(t *testing.T) {
	h, mp, clk := optInHarness(t)
	c := formstest.Config()
	c.Forms.PublicURL = h.url
	c.Forms.DoubleOptIn = &config.DoubleOptIn{}
	c.Forms.Sites = []config.Site{{Origin: formstest.Origin, Name: "Example"}}
	c.Forms.WaitlistRetention = config.Duration(30 * 24 * time.Hour)
	h.src.Set(t, c)
	post := func(url, body string) {
		t.Helper()
		resp, err := http.Post(url, "application/x-www-form-urlencoded", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	h.post("/waitlist", `{"email":"again@example.com","consent":true}`).expect(t, 201, "created")
	_, unsubscribe := linksOf(t, mp.Latest(t, "again@example.com", 15*time.Second))
	post(unsubscribe, "List-Unsubscribe=One-Click")
	clk.add(24 * time.Hour)
	h.post("/waitlist", `{"email":"behind@example.com","consent":true}`).expect(t, 201, "created")
	confirm, _ := linksOf(t, mp.Latest(t, "behind@example.com", 15*time.Second))
	post(confirm, "")
	clk.add(19 * 24 * time.Hour) // day 20: signed up again, and confirmed
	h.post("/waitlist", `{"email":"again@example.com","consent":true}`).expect(t, 201, "created")
	mp.WaitTo(t, "again@example.com", 2, 15*time.Second)
	confirm, _ = linksOf(t, mp.Latest(t, "again@example.com", 15*time.Second))
	post(confirm, "")
	if s := entry(t, h, "again@example.com").State; s != store.StateConfirmed {
		t.Fatalf("signed up again and confirmed: %q", s)
	}

	clk.add(14 * 24 * time.Hour) // day 34: behind@ is 33 days old, again@ 14
	if err := h.svc.optin.Sweep(t.Context(), h.src.Current()); err != nil {
		t.Fatal(err)
	}
	if _, ok := storedWaitlist(t, h, "behind@example.com"); ok {
		t.Fatal("an entry past the retention outlived it behind an entry signed up again")
	}
	entry(t, h, "again@example.com")
	if got := h.rdb.LRange(t.Context(), store.WaitlistOrder, 0, -1).Val(); len(got) != 1 || got[0] != "again@example.com" {
		t.Fatalf("order %v", got)
	}
}
