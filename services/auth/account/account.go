// Package account is the account page (/account) and the passkeys page (/account/passkeys).
package account

import (
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/backchannel"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// The account page (/account, docs/auth.md "The account page"): the signed-in person changes their
// password, sets up or turns off the second factor, and sees and ends their sessions and grants. It is
// signed in through the hosted page's session (accountSignIn); every form is a POST with the CSRF
// token, answered with a 303 back to the page (or, for recovery codes, a page that shows them once).

// Options are the account pages' dependencies.
type Options struct {
	Web      *web.Kit
	SignOn   *signon.Kit
	Accounts *accounts.Ops
	MFA      *mfa.Store
	Passkeys *passkey.Store
	Audit    *audit.Recorder
	Pages    *page.AccountRenderer
	// Federation links and unlinks accounts at upstream providers (identities.go; nil: none).
	Federation *federation.Kit
	Log        *slog.Logger
	// Backchannel queues the logout tokens of a session ended on the page (nil: none are sent).
	Backchannel *backchannel.Notifier
}

// Handler serves the account page and the passkeys page.
type Handler struct {
	web        *web.Kit
	signOn     *signon.Kit
	accounts   *accounts.Ops
	mfa        *mfa.Store
	passkeys   *passkey.Store
	audit      *audit.Recorder
	pages      *page.AccountRenderer
	federation *federation.Kit
	log        *slog.Logger
	// backchannel tells relying parties of a session ended on the page (D60).
	backchannel *backchannel.Notifier
}

// New returns the account pages' handler.
func New(o Options) *Handler {
	return &Handler{web: o.Web, signOn: o.SignOn, accounts: o.Accounts, mfa: o.MFA, passkeys: o.Passkeys, audit: o.Audit,
		pages: o.Pages, federation: o.Federation, log: o.Log, backchannel: o.Backchannel}
}

// accountUser returns the signed-in user and session; without one it sends the browser to sign in (and
// back) and returns false.
func (h *Handler) accountUser(w http.ResponseWriter, r *http.Request, rt *realm.Realm) (*users.User, *sso.Session, bool) {
	sess, u, err := h.currentSession(w, r, rt)
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return nil, nil, false
	}
	if u != nil {
		return u, sess, true
	}
	if r.Method == http.MethodGet && r.URL.Path == "/account" && r.URL.Query().Get("error") != "" {
		// Back from the sign-in page without signing in (Cancel): no loop back to it.
		h.pages.RenderNotSignedIn(w, rt.BasePath)
		return nil, nil, false
	}
	back := rt.BasePath + "/account"
	if r.Method == http.MethodGet {
		back = rt.BasePath + r.URL.RequestURI()
	}
	accountSignIn(w, r, rt, back)
	return nil, nil, false
}

// currentSession is the browser's sign-in session and its user, when the session is of the user's
// current sign-out generation. A session older than a sign-out everywhere (one that escaped its list:
// D35) opens no account page, passkeys page or ceremony: it ends here and answers no user, and the
// person signs in again, as at authorize.
func (h *Handler) currentSession(w http.ResponseWriter, r *http.Request, rt *realm.Realm) (*sso.Session, *users.User, error) {
	sess, u, err := h.signOn.SignedIn(r.Context(), r, rt)
	if err != nil || u == nil {
		return nil, nil, err
	}
	gen, err := h.signOn.Store.Generations.Of(r.Context(), u.ID)
	if err != nil {
		return nil, nil, err
	}
	if sess.Generation >= gen {
		return sess, u, nil
	}
	_ = h.signOn.Sessions.Delete(r.Context(), web.ReadCookie(r, rt, web.SessionCookie))
	web.SetCookie(w, rt, web.SessionCookie, "", -1)
	return nil, nil, nil
}

// accountSignIn sends the browser to the hosted sign-in page, to come back to back (a path under
// /account) once signed in. The account page signs people in through the hosted page, as a client
// would: the provider's own client realm.AccountClientID, so the sign-in (password, second step,
// throttles, audit) is exactly the one every app gets; the sign-in area answers that client with no
// code, a 303 back to the account page asked for (carried in state), so no grant is made and no token
// exists for it.
func accountSignIn(w http.ResponseWriter, r *http.Request, rt *realm.Realm, back string) {
	if !rt.AccountPath(back) {
		back = rt.BasePath + "/account"
	}
	verifier := web.RandomToken() // never redeemed: the account client gets no code
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"client_id":             {realm.AccountClientID},
		"redirect_uri":          {rt.Issuer + "/account"},
		"response_type":         {"code"},
		"scope":                 {"openid"},
		"state":                 {back},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
	}
	http.Redirect(w, r, rt.BasePath+"/oauth2/authorize?"+q.Encode(), http.StatusSeeOther)
}

// notices are what the page says after an action (?done=…): a closed set, so a link cannot make the page
// say anything else.
var notices = map[string]string{
	"password":        "Your password was changed. Every other browser and app was signed out, and we sent you a mail about it.",
	"password-nomail": "Your password was changed. Every other browser and app was signed out.",
	"mfa-off":         "Two-step sign-in is off. Sign-in asks for your password only.",
	"session":         "That browser was signed out.",
	"others":          "Every other browser was signed out, with the apps' access that started in it. This browser stays signed in.",
	"grant":           "That app's access was removed; it has to ask you to sign in again.",
	"linked":          "The account was linked: you can sign in with it now.",
	"unlinked":        "The link was removed.",
}

// Page is GET /account.
func (h *Handler) Page(w http.ResponseWriter, r *http.Request, _ string) {
	rt := h.web.Realm.Current()
	u, sess, ok := h.accountUser(w, r, rt)
	if !ok {
		return
	}
	h.renderAccount(w, r, rt, u, sess, http.StatusOK, page.Account{Notice: notices[r.URL.Query().Get("done")], Error: linkErrors[r.URL.Query().Get("link_error")]})
}

// renderAccount fills in the page's lists and writes it.
func (h *Handler) renderAccount(w http.ResponseWriter, r *http.Request, rt *realm.Realm, u *users.User, sess *sso.Session, status int, d page.Account) {
	ctx := r.Context()
	st, err := h.mfa.Status(ctx, u.ID)
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	sessions, err := h.signOn.Sessions.List(ctx, u.ID)
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	grants, err := h.signOn.Store.Grants(ctx, u.ID)
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	d.Frame = page.Frame{CSRF: web.CSRFToken(w, r, rt), Base: rt.BasePath}
	if err := h.identities(r, rt, u, &d); err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	d.Email, d.Name = u.Email, u.Name
	if u.MustChangePassword && rt.Config.Auth.AskToReplaceWeak() && d.PasswordError == "" {
		// A sign-in found that the password fails the rules for new ones (D54).
		d.PasswordError = "Your password does not meet our rules for passwords: at least 12 characters, not known from data breaches, not easy to guess. Please choose a new one here."
	}
	d.VerifyFirst = verifyFirst(rt, u, d.CSRF)
	d.Passkeys = rt.RP != nil
	d.Groups = u.Groups
	d.MFA = page.MFAStatus{On: st.TOTP, Since: day(st.Since), RecoveryLeft: st.RecoveryLeft}
	for _, x := range sessions {
		d.Sessions = append(d.Sessions, page.SessionRow{ID: x.ID, Browser: authmail.BrowserName(x.UserAgent), UserAgent: x.UserAgent,
			SignedIn: authmail.When(x.AuthTime), LastUsed: authmail.When(x.LastUsed), Methods: methodsLabel(x.AMR), Current: x.ID == sess.ID})
	}
	for _, g := range grants {
		if g.ClientID == realm.AccountClientID {
			continue
		}
		name := g.ClientID
		if cl, ok := rt.Clients[g.ClientID]; ok {
			name = cl.Name
		}
		d.Grants = append(d.Grants, page.GrantRow{ID: g.Family, Client: name, Offline: g.Offline, SignedIn: authmail.When(g.AuthTime), LastUsed: authmail.When(g.LastUsed)})
	}
	h.pages.RenderAccount(w, status, d)
}

// accountForm parses a POST of the account page and checks its CSRF token; it answers (and returns
// false) when the form is not to be acted on.
func (h *Handler) accountForm(w http.ResponseWriter, r *http.Request, rt *realm.Realm) (*users.User, *sso.Session, bool) {
	if err := r.ParseForm(); err != nil {
		h.web.BadForm(w)
		return nil, nil, false
	}
	u, sess, ok := h.accountUser(w, r, rt)
	if !ok {
		return nil, nil, false
	}
	if !web.CSRFValid(r, rt) {
		h.renderAccount(w, r, rt, u, sess, http.StatusForbidden, page.Account{Error: "This form has expired or was not sent from this page. Please try again."})
		return nil, nil, false
	}
	return u, sess, true
}

func day(t time.Time) string {
	if t.IsZero() {
		return "an unknown day"
	}
	return t.UTC().Format("2 Jan 2006")
}

func groupsOfFour(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// methodsLabel says in words how a session signed in.
func methodsLabel(amr []string) string {
	var parts []string
	for _, m := range amr {
		switch m {
		case acr.PWD:
			parts = append(parts, "password")
		case acr.OTP:
			parts = append(parts, "a code")
		case acr.RC:
			parts = append(parts, "a recovery code")
		case acr.POP, acr.HWK, acr.SWK:
			parts = append(parts, "a passkey")
		}
	}
	if len(parts) == 0 {
		return "password"
	}
	return strings.Join(parts, " and ")
}

// verifyFirst is the account pages' notice for an account whose address is not verified (nil for a
// verified one): until the owner of the address has shown up, the account gets no credential but its
// password, so that whoever signed up with an address not theirs cannot keep a way in once its owner
// takes the account over (docs/security.md "Account pre-hijacking").
func verifyFirst(rt *realm.Realm, u *users.User, csrf string) *page.VerifyFirst {
	if u.EmailVerified {
		return nil
	}
	return &page.VerifyFirst{Base: rt.BasePath, CSRF: csrf, Email: u.Email}
}
