package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Account pre-hijacking (docs/security.md "Account pre-hijacking", D51; Sudhodanan & Paverd, 2022): an
// attacker signs up with the victim's address before the victim does, and adds a way in that survives
// the victim taking the account over. Each test below performs a step of that attack.

const victim = "victim@example.com"

// signUpOnPage signs up on the hosted page of b (self sign-up on).
func signUpOnPage(t *testing.T, p *provider, b *browser, email, password string) {
	t.Helper()
	page := b.get(p.authorizeURL("state-signup-0123", oauth2.GenerateVerifier()))
	var signup pageForm
	for _, f := range forms(t, p.base, page.body) {
		if f.fields.Get("action") == "signup" {
			signup = f
		}
	}
	if signup.action == "" {
		t.Fatalf("no sign-up form:\n%.1500s", page.body)
	}
	signup.fields.Set("email", email)
	signup.fields.Set("password", password)
	if res := b.postForm(signup.action, signup.fields); res.StatusCode != http.StatusOK {
		t.Fatalf("sign-up: %d\n%.800s", res.StatusCode, res.body)
	}
}

func reasonsOf(t *testing.T, p *provider, kinds ...audit.Kind) string {
	t.Helper()
	return strings.Join(kindsOf(t, p, kinds...), "\n")
}

// The attacker's account (signed up with the victim's address, never verified) gets no credential but
// its password: the account page offers no second factor or passkey and says why; the set-up pages and
// their posts are refused, and nothing is drawn or stored.
func TestPreHijack_AnUnverifiedAccountGetsNoPasskeyAndNoSecondFactor(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp, mutate: localhostIssuer(func(c *config.Config) { c.Auth.SelfSignup = true })})
	attacker := newBrowser(t)
	signUpOnPage(t, p, attacker, victim, "the attacker's password")
	page := p.accountSignIn(attacker, victim, "the attacker's password", nil)
	if !strings.Contains(page.body, `id="verify-first"`) || strings.Contains(page.body, `href="/account/totp"`) {
		t.Fatalf("the unverified account's page offers a second factor, or does not say why not:\n%.3000s", page.body)
	}
	csrf := csrfOf(t, page.body)

	if res := attacker.get(p.base + "/account/totp"); res.StatusCode != http.StatusForbidden || secretRe.MatchString(res.body) || !strings.Contains(res.body, `id="verify-first"`) {
		t.Fatalf("the set-up page of an unverified account: %d\n%.1500s", res.StatusCode, res.body)
	}
	if res := attacker.postForm(p.base+"/account/totp", url.Values{"csrf_token": {csrf}, "code": {"123456"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("confirming a set-up for an unverified account: %d", res.StatusCode)
	}
	passkeys := attacker.get(p.base + "/account/passkeys")
	if passkeys.StatusCode != http.StatusOK || strings.Contains(passkeys.body, `id="passkey-add"`) || !strings.Contains(passkeys.body, `id="verify-first"`) {
		t.Fatalf("the passkeys page of an unverified account: %d\n%.1500s", passkeys.StatusCode, passkeys.body)
	}
	begin := attacker.postForm(p.base+"/account/passkeys/begin", url.Values{"csrf_token": {csrfOf(t, passkeys.body)}, "name": {"Attacker's key"}, "password": {"the attacker's password"}})
	if begin.StatusCode != http.StatusForbidden || !strings.Contains(begin.body, "Confirm your e-mail address first") {
		t.Fatalf("a passkey ceremony for an unverified account: %d %s", begin.StatusCode, begin.body)
	}

	u, err := p.svc.Users().ByEmail(context.Background(), victim)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.rdb.Exists(context.Background(), "auth:mfa:{"+u.ID+"}:pending", "auth:mfa:{"+u.ID+"}", "auth:passkey:{"+u.ID+"}").Result(); err != nil || n != 0 {
		t.Fatalf("something of a second factor or passkey is stored for the unverified account: %d %v", n, err)
	}
	if got, want := reasonsOf(t, p, audit.MFAEnrolled, audit.PasskeyAdded), "account.mfa_enrolled failure unverified\npasskey.added failure unverified"; got != want {
		t.Fatalf("audit trail:\n%s\nwant:\n%s", got, want)
	}

	// The notice's form sends the link again: the way out of the refusal.
	resend := formTo(t, p.base, page.body, "/account/verify/resend")
	if resend.fields.Get("email") != victim {
		t.Fatalf("the resend form carries %v", resend.fields)
	}
}

// A mail scanner or link preview that opens the verification link verifies nothing; the link's page asks.
// The owner of the address, who did not make the account, deletes it from there: the squatter's
// sessions end, the address is free for the owner's own account, and the link is used up. An account an
// operator made is not the link reader's to delete.
func TestPreHijack_TheLinkVerifiesOnlyOnAButton_AndItsOwnerDeletesTheSquattersAccount(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp, mutate: func(c *config.Config) { c.Auth.SelfSignup = true }})
	attacker := newBrowser(t)
	signUpOnPage(t, p, attacker, victim, "the attacker's password")
	p.accountSignIn(attacker, victim, "the attacker's password", nil)
	link := mailLink(t, mp, victim, "/account/verify", 1)

	scanner := newBrowser(t)
	if res := scanner.get(link); res.StatusCode != http.StatusOK || !strings.Contains(res.body, `id="disown"`) {
		t.Fatalf("the link's page: %d\n%.1500s", res.StatusCode, res.body)
	}
	if u, err := p.svc.Users().ByEmail(context.Background(), victim); err != nil || u.EmailVerified {
		t.Fatalf("after a GET of the link: %+v %v (a scanner verified the address)", u, err)
	}

	owner := newBrowser(t)
	res := followVerifyLink(t, owner, p.base, link, "delete")
	if res.StatusCode != http.StatusOK || !strings.Contains(res.body, "The account was deleted") {
		t.Fatalf("deleting from the link: %d\n%.1500s", res.StatusCode, res.body)
	}
	if _, err := p.svc.Users().ByEmail(context.Background(), victim); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("the squatter's account after its deletion: %v", err)
	}
	if !p.signedOut(attacker) {
		t.Error("the squatter's browser is still signed in")
	}
	if res := owner.get(link); res.StatusCode != http.StatusGone {
		t.Errorf("the link after its use: %d, want 410", res.StatusCode)
	}
	signUpOnPage(t, p, owner, victim, "the owner's own password")
	if u, err := p.svc.Users().ByEmail(context.Background(), victim); err != nil || !u.SelfSignup {
		t.Fatalf("the owner's sign-up with the freed address: %+v %v", u, err)
	}
	deleted := false
	for _, e := range trail(t, p) {
		deleted = deleted || e.Kind == audit.UserDeleted && e.Outcome == audit.Success && e.Detail["by"] == "address_owner"
	}
	if !deleted {
		t.Error("no user.deleted by=address_owner in the audit trail")
	}

	// An operator's unverified account: the page offers no deletion, and a forged post deletes nothing.
	p.unverifiedUser("grace@example.com", testPassword)
	if _, err := p.svc.SendVerification(context.Background(), "grace@example.com", ""); err != nil {
		t.Fatal(err)
	}
	opLink := mailLink(t, mp, "grace@example.com", "/account/verify", 1)
	b := newBrowser(t)
	page := b.get(opLink)
	if page.StatusCode != http.StatusOK || strings.Contains(page.body, `id="disown"`) {
		t.Fatalf("an operator's account's link page: %d\n%.1500s", page.StatusCode, page.body)
	}
	if res := followVerifyLink(t, b, p.base, opLink, "delete"); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("deleting an operator's account from its link: %d, want 400", res.StatusCode)
	}
	if _, err := p.svc.Users().ByEmail(context.Background(), "grace@example.com"); err != nil {
		t.Fatalf("the operator's account after a forged deletion: %v", err)
	}
}

// A password reset of an account whose address was never verified recovers it: whoever put a passkey or
// an authenticator app on it (an account from before the gate above, or any other way) loses them, the
// address is verified (the link proved the mailbox), and the owner is told what was removed.
func TestPreHijack_AResetOfAnUnverifiedAccountRemovesEveryOtherWayIn(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	clock := newTestClock()
	p := startProvider(t, setup{mail: mp, now: clock.now, mutate: newBrowserMailsOff})
	id := p.user(victim, "the attacker's password")
	attacker := newBrowser(t)
	p.accountSignIn(attacker, victim, "the attacker's password", nil)
	p.enrolTOTP(attacker, clock)
	ctx := context.Background()
	if err := p.rdb.HSet(ctx, "auth:passkey:{"+id+"}", "QUFBQQ", `{"name":"Attacker's key","created":1700000000,"cred":{}}`).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.rdb.HDel(ctx, "auth:user:{"+id+"}", "verified").Err(); err != nil { // never verified
		t.Fatal(err)
	}
	next := mailsTo(t, mp, victim)
	next("Two-step sign-in was turned on")

	owner := newBrowser(t)
	forgot := owner.get(p.base + "/account/forgot")
	f := formTo(t, p.base, forgot.body, "/account/forgot")
	f.fields.Set("email", victim)
	if res := owner.postForm(f.action, f.fields); res.StatusCode != http.StatusOK {
		t.Fatalf("forgot: %d", res.StatusCode)
	}
	reset := owner.get(mailLink(t, mp, victim, "/account/reset", 2))
	if reset.StatusCode != http.StatusOK || !strings.Contains(reset.body, "was never confirmed") || strings.Contains(reset.body, `name="remove_factors"`) {
		t.Fatalf("the reset page of an unverified account: %d\n%.1500s", reset.StatusCode, reset.body)
	}
	rf := formTo(t, p.base, reset.body, "/account/reset")
	rf.fields.Set("new_password", "the owner's new password")
	done := owner.postForm(rf.action, rf.fields)
	if done.StatusCode != http.StatusOK || !strings.Contains(done.body, "its 1 passkey and its two-step sign-in") {
		t.Fatalf("the reset: %d\n%.1500s", done.StatusCode, done.body)
	}

	if u, err := p.svc.Users().ByID(ctx, id); err != nil || !u.EmailVerified {
		t.Fatalf("after the reset: %+v %v, want the address verified", u, err)
	}
	if on, err := mfa.NewStore(p.rdb, mfa.Sealer{}, nil).Enrolled(ctx, id); err != nil || on {
		t.Fatalf("the attacker's authenticator app after the reset: %v %v", on, err)
	}
	if n, err := p.rdb.Exists(ctx, "auth:passkey:{"+id+"}", "auth:mfa:{"+id+"}:recovery").Result(); err != nil || n != 0 {
		t.Fatalf("the attacker's passkey or recovery codes after the reset: %d %v", n, err)
	}
	// The owner signs in with the new password alone: nobody else's code is asked for.
	if tk, _ := p.fullSignIn(victim, "the owner's new password"); tk.status != http.StatusOK {
		t.Fatalf("the owner's sign-in: %d %s", tk.status, tk.Error)
	}
	m := next("Your password for")
	if !strings.Contains(m.Text, "its 1 passkey and its two-step sign-in") {
		t.Fatalf("the password mail does not say what was removed:\n%s", m.Text)
	}
	var detail map[string]string
	for _, e := range trail(t, p) {
		if e.Kind == audit.PasswordReset && e.Outcome == audit.Success {
			detail = e.Detail
		}
	}
	if detail["passkeysRemoved"] != "1" || detail["secondFactorRemoved"] != "true" || detail["verified"] != "true" {
		t.Fatalf("the reset's audit detail: %v", detail)
	}
}

// The reset of a verified account keeps its passkeys and second factor unless its owner ticks "also
// remove my passkeys and two-step sign-in".
func TestReset_OfAVerifiedAccount_RemovesTheOtherFactorsOnlyWhenAsked(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	clock := newTestClock()
	p := startProvider(t, setup{mail: mp, now: clock.now, mutate: func(c *config.Config) { c.Auth.Throttle.MailsPerAddress = 5 }})
	id := p.user(testEmail, testPassword)
	b := newBrowser(t)
	p.accountSignIn(b, testEmail, testPassword, nil)
	p.enrolTOTP(b, clock)
	// The notice of the new second factor is sent on its own: until it is in, the reset link could be
	// mailed before it, and "the second mail" would be the notice.
	mp.WaitTo(t, testEmail, 1, 30*time.Second)
	ctx := context.Background()
	factors := mfa.NewStore(p.rdb, mfa.Sealer{}, nil)

	resetWith := func(n int, password string, remove bool) response {
		t.Helper()
		owner := newBrowser(t)
		f := formTo(t, p.base, owner.get(p.base+"/account/forgot").body, "/account/forgot")
		f.fields.Set("email", testEmail)
		owner.postForm(f.action, f.fields)
		page := owner.get(mailLink(t, mp, testEmail, "/account/reset", n))
		if !strings.Contains(page.body, `name="remove_factors"`) {
			t.Fatalf("the reset page of a verified account offers no removal:\n%.1500s", page.body)
		}
		rf := formTo(t, p.base, page.body, "/account/reset")
		rf.fields.Set("new_password", password)
		if remove {
			rf.fields.Set("remove_factors", "1")
		}
		return owner.postForm(rf.action, rf.fields)
	}
	// mails: turned on (1), reset link (2), password changed (3), reset link (4), password changed (5)
	if res := resetWith(2, "a first new password", false); res.StatusCode != http.StatusOK || strings.Contains(res.body, `id="journey-said"`) {
		t.Fatalf("a reset without the removal: %d\n%.1000s", res.StatusCode, res.body)
	}
	if on, err := factors.Enrolled(ctx, id); err != nil || !on {
		t.Fatalf("the second factor after a plain reset: %v %v, want kept", on, err)
	}
	mp.WaitTo(t, testEmail, 3, 30*time.Second)
	if res := resetWith(4, "a second new password", true); res.StatusCode != http.StatusOK || !strings.Contains(res.body, "its two-step sign-in") {
		t.Fatalf("a reset with the removal: %d\n%.1000s", res.StatusCode, res.body)
	}
	if on, err := factors.Enrolled(ctx, id); err != nil || on {
		t.Fatalf("the second factor after the reset that removes it: %v %v", on, err)
	}
}

// A second factor is changed only by its owner: with one set up, the set-up page and its post draw and
// accept no new secret (turning it off comes first), and turning it off or making new recovery codes
// takes the current factor as well as the password.
func TestSecondFactor_IsSwappedOnlyWithTheCurrentOne(t *testing.T) {
	clock := newTestClock()
	p := startProvider(t, setup{now: clock.now})
	id := p.user(testEmail, testPassword)
	b := newBrowser(t)
	p.accountSignIn(b, testEmail, testPassword, nil)
	secret, _ := p.enrolTOTP(b, clock)
	csrf := csrfOf(t, b.get(p.base+"/account").body)
	factors := mfa.NewStore(p.rdb, mfa.Sealer{}, nil)
	ctx := context.Background()

	if res := b.get(p.base + "/account/totp"); res.StatusCode != http.StatusSeeOther || secretRe.MatchString(res.body) {
		t.Fatalf("the set-up page with a factor on: %d", res.StatusCode)
	}
	if res := b.postForm(p.base+"/account/totp", url.Values{"csrf_token": {csrf}, "code": {"000000"}}); res.StatusCode != http.StatusSeeOther || secretRe.MatchString(res.body) {
		t.Fatalf("a set-up post with a factor on: %d\n%.800s", res.StatusCode, res.body)
	}
	if n, err := p.rdb.Exists(ctx, "auth:mfa:{"+id+"}:pending").Result(); err != nil || n != 0 {
		t.Fatalf("a pending secret was drawn for an enrolled user: %d %v", n, err)
	}

	off := func(code string) response {
		return b.postForm(p.base+"/account/mfa", url.Values{"csrf_token": {csrf}, "action": {"remove"}, "password": {testPassword}, "code": {code}})
	}
	if res := off(""); res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.body, `id="mfa-code-error"`) {
		t.Fatalf("turning it off with the password alone: %d\n%.1500s", res.StatusCode, res.body)
	}
	if res := off("000000"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("turning it off with a wrong code: %d", res.StatusCode)
	}
	if on, err := factors.Enrolled(ctx, id); err != nil || !on {
		t.Fatalf("after the refusals: %v %v, want the factor kept", on, err)
	}
	clock.nextStep()
	if res := off(clock.code(t, secret)); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("turning it off with the app's code: %d", res.StatusCode)
	}
	if on, err := factors.Enrolled(ctx, id); err != nil || on {
		t.Fatalf("after turning it off: %v %v", on, err)
	}
	if got, want := reasonsOf(t, p, audit.MFAEnrolled, audit.MFARemoved), strings.Join([]string{"account.mfa_enrolled success",
		"account.mfa_enrolled failure enrolled", "account.mfa_removed failure wrong_code", "account.mfa_removed failure wrong_code",
		"account.mfa_removed success"}, "\n"); got != want {
		t.Fatalf("audit trail:\n%s\nwant:\n%s", got, want)
	}
}

// A second step's challenge begun before a sign-out everywhere (a new password, a reset, an
// administrator's) dies with it: the right code afterwards opens no session and issues no code, so a
// sign-in made with the old password cannot outlive its change.
func TestSecondStep_AChallengeDiesWithASignOutEverywhere(t *testing.T) {
	clock := newTestClock()
	p := startProvider(t, setup{now: clock.now})
	id := p.user(testEmail, testPassword)
	owner := newBrowser(t)
	p.accountSignIn(owner, testEmail, testPassword, nil)
	secret, _ := p.enrolTOTP(owner, clock)

	thief := newBrowser(t)
	page := thief.get(p.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
	step := thief.signIn(p.base, page.body, testEmail, testPassword) // the code page: a challenge
	if _, _, err := p.svc.Accounts().SignOutEverywhere(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	clock.nextStep()
	res := thief.secondStep(p.base, step, clock.code(t, secret))
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("Location") != "" {
		t.Fatalf("the right code after a sign-out everywhere: %d %s, want 401 and no redirect", res.StatusCode, res.Header.Get("Location"))
	}
	if !p.signedOut(thief) {
		t.Fatal("the challenge opened a session after the sign-out everywhere")
	}
	// A challenge begun after it still works.
	page = thief.get(p.authorizeURL("state-0123456790", oauth2.GenerateVerifier()))
	clock.nextStep()
	if res := thief.secondStep(p.base, thief.signIn(p.base, page.body, testEmail, testPassword), clock.code(t, secret)); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a challenge after the sign-out: %d\n%.600s", res.StatusCode, res.body)
	}
}

// deviceCookieID is the browser ID of b's device cookie ("" without one).
func deviceCookieID(b *browser, base string) string {
	u, _ := url.Parse(base)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "fs_device" {
			if parts := strings.Split(c.Value, "."); len(parts) == 6 {
				return parts[2]
			}
		}
	}
	return ""
}

// Device cookies die with a sign-out everywhere: a browser that signed in with the old password (a
// thief's, say) guesses the new one against the unknown browsers' budget, not a budget of its own, while
// the owner's browser, signed in since, keeps its own. A browser keeps one cookie ID per account however
// often it signs in, so signing in again mints no fresh budget.
func TestDeviceCookie_DiesWithASignOutEverywhere_OneIDPerBrowser(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Throttle = config.Throttle{DeviceFailures: 10, AccountFailures: 2, IPFailures: 100, Window: config.Duration(time.Minute)}
	}})
	p.user(testEmail, testPassword)
	signInOnce := func(b *browser, password string) response {
		t.Helper()
		page := b.get(p.authorizeURL("state-device-0123", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "login")))
		return b.signIn(p.base, page.body, testEmail, password)
	}
	thief := newBrowser(t)
	if res := signInOnce(thief, testPassword); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the thief's sign-in with the old password: %d", res.StatusCode)
	}
	first := deviceCookieID(thief, p.base)
	if res := signInOnce(thief, testPassword); res.StatusCode != http.StatusSeeOther || first == "" || deviceCookieID(thief, p.base) != first {
		t.Fatalf("a second sign-in from one browser: %d, cookie ID %q then %q, want one ID", res.StatusCode, first, deviceCookieID(thief, p.base))
	}

	// The owner changes the password on the account page: every session, grant and device cookie ends.
	owner := newBrowser(t)
	p.accountSignIn(owner, testEmail, testPassword, nil)
	csrf := csrfOf(t, owner.get(p.base+"/account").body)
	const newPassword = "the owner's new password"
	if res := owner.postForm(p.base+"/account/password", url.Values{"csrf_token": {csrf}, "current_password": {testPassword}, "new_password": {newPassword}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the change: %d", res.StatusCode)
	}
	if res := signInOnce(owner, newPassword); res.StatusCode != http.StatusSeeOther { // a cookie of the new generation
		t.Fatalf("the owner's sign-in with the new password: %d", res.StatusCode)
	}

	// The thief's old cookie counts against the unknown browsers' budget of 2: the third guess waits.
	var res response
	for i := range 3 {
		res = signInOnce(thief, "a guess "+string(rune('a'+i)))
	}
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the third guess with a cookie from before the change: %d, want 429 (the cookie kept a budget of its own)", res.StatusCode)
	}
	// The owner's browser, signed in since, is a known browser: never refused for the thief's guesses.
	if res := signInOnce(owner, newPassword); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the owner's browser while the unknown browsers' budget is used up: %d", res.StatusCode)
	}
}

// A browser's session from before the user's last sign-out everywhere opens no passkeys page (nor its
// ceremony), as it opens no account page: also when the sign-out missed it in the user's list of
// sessions (here: the generation moved, and the session record stayed). The page ends it.
func TestPasskeysPage_ASessionFromBeforeASignOutEverywhereIsOver(t *testing.T) {
	p := startProvider(t, setup{mutate: localhostIssuer(nil)})
	id := p.user(testEmail, testPassword)
	b := newBrowser(t)
	p.accountSignIn(b, testEmail, testPassword, nil)
	if res := b.get(p.base + "/account/passkeys"); res.StatusCode != http.StatusOK {
		t.Fatalf("the passkeys page while signed in: %d", res.StatusCode)
	}
	// A second browser has the page open, ready to begin adding a passkey.
	b2 := newBrowser(t)
	p.accountSignIn(b2, testEmail, testPassword, nil)
	open := b2.get(p.base + "/account/passkeys")
	if open.StatusCode != http.StatusOK {
		t.Fatalf("the second browser's passkeys page: %d", open.StatusCode)
	}
	if _, err := p.svc.Store().RevokeSubject(context.Background(), id); err != nil { // the generation moves; the session record stays
		t.Fatal(err)
	}
	begin := b2.postForm(p.base+"/account/passkeys/begin", url.Values{"csrf_token": {csrfOf(t, open.body)}, "name": {"Key"}, "password": {testPassword}})
	if begin.StatusCode != http.StatusUnauthorized || !strings.Contains(begin.body, "Your sign-in has ended") {
		t.Errorf("a passkey ceremony begun with a session from before the sign-out: %d %s", begin.StatusCode, begin.body)
	}
	if res := b.get(p.base + "/account/passkeys"); res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.body, "Sign in first") {
		t.Fatalf("the passkeys page with a session from before the sign-out: %d", res.StatusCode)
	}
	if !p.signedOut(b) {
		t.Fatal("the account page still takes the session from before the sign-out")
	}
}
