package signin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/ory/fosite"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/claims"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// signedIn is the sign-in a code is granted for: when and how the person signed in, the session's
// token and the user's sign-out generation the session saw.
type signedIn struct {
	authTime   time.Time
	session    string
	generation int64
	amr        []string
	// askPasswordChange: the account's password fails the rules for new ones (users.MustChangePassword):
	// the person is asked to change it before going on to the client (passwordchange.go).
	askPasswordChange bool
}

// startSession follows a right password, or an upstream provider's word (first: the methods so far):
// the second step when the sign-in needs one (secondstep.go), else the session starts with first.
func (h *Handler) startSession(a *attempt, u *users.User, first []string) {
	if h.secondStep(a, u, first) {
		return
	}
	h.openSession(a, u, first)
}

// openSession sets a new sign-in session cookie for u signed in with amr (a new value at every sign-in,
// against session fixation) and answers the authorization request. The user's authorize rate limit is
// counted in the round trip that starts the session (D44).
func (h *Handler) openSession(a *attempt, u *users.User, amr []string) {
	if h.unverified(a, u) { // no session for a sign-in the client refuses
		return
	}
	var rate *throttle.Rate
	if !a.cl.Account {
		rl := a.rt.Config.Auth.RateLimit
		rate = &throttle.Rate{Kind: "authorize-user", Who: u.ID, Limit: rl.PerUser, Window: rl.Window.D()}
	}
	now := time.Now().UTC()
	token, gen, wait, err := h.signOn.NewSession(a.w, a.r, a.rt, u, amr, now, rate, a.reads)
	if err != nil {
		h.unavailablePage(a, u.Email, err)
		return
	}
	h.sessionOpened(a, u)
	h.keepLogout(a, u, token)
	if rate != nil && !h.web.RateAnswer(a.w, rate.Kind, wait, nil) {
		return
	}
	h.grantCode(a, u, signedIn{authTime: now, session: token, generation: gen, amr: amr, askPasswordChange: u.MustChangePassword && a.rt.Config.Auth.AskToReplaceWeak()})
}

// keepLogout keeps with the new session what single logout with the upstream needs (D89): a failure
// costs only the IdP's side of a later logout, so the sign-in goes on (logged).
func (h *Handler) keepLogout(a *attempt, u *users.User, token string) {
	l := a.logout
	if l == nil {
		return
	}
	if err := h.federation.KeepLogout(a.r.Context(), l, u.ID, sso.ID(token), a.rt.Config.Auth.SessionLifetime.D()); err != nil {
		h.log.Warn("sign-in through a SAML connector: its single-logout record was not kept", "connector", l.Connector, "err", err)
	}
}

// sessionOpened follows a new sign-in session of u: when the browser was never seen for the account,
// its owner is mailed (D66), unless this is the account's first session ever (nothing to compare with:
// the sign-up's, or an operator's account's first).
func (h *Handler) sessionOpened(a *attempt, u *users.User) {
	if a.newBrowser && !u.NeverSignedIn {
		h.notify.NewBrowserSignedIn(a.r.Context(), u, a.cl.GetID(), web.RequestLang(a.r), a.r.UserAgent())
	}
}

// grantCode grants the request (the clients are first-party: no consent screen) and redirects back with
// the authorization code; the caller counted the user's authorize rate limit. A sign-out everywhere
// since the session's sign-in (which may run at the same time as this request) refuses the code.
func (h *Handler) grantCode(a *attempt, u *users.User, in signedIn) {
	ar := a.ar
	if a.cl.Account {
		h.answerAccountClient(a) // the account page: signed in, no code
		return
	}
	for _, scope := range ar.GetRequestedScopes() {
		ar.GrantScope(scope)
	}
	// The access token is for the APIs requested (audience, checked by fosite against the client's, or
	// RFC 8707 resource, checked in checkAuthorizeParams), else for every API of the client (its
	// configured audiences; the client ID when it has none).
	requested := append(slices.Clone(ar.GetRequestedAudience()), ar.GetRequestForm()["resource"]...)
	if len(requested) == 0 {
		requested = ar.GetClient().GetAudience()
	}
	for _, aud := range requested {
		ar.GrantAudience(aud)
	}
	sess := claims.For(u, ar.GetGrantedScopes(), ar.GetClient().GetID(), in.authTime, ar.GetRequestedAt())
	sess.IDClaims.AuthenticationMethodsReferences = in.amr
	sess.IDClaims.AuthenticationContextClassReference = acr.Claim(in.amr, requestedACR(ar))
	claims.WithSID(sess, sso.SID(sso.ID(in.session)))
	claims.AccessGroups(sess, u, ar.GetGrantedScopes(), a.cl.AccessTokenGroups)
	sess.Upstream = a.upstream // a connector's re-check state rides with the grant it made (D78)
	// The code, its PKCE challenge and its OpenID Connect request are written together, in one step; the
	// grant joins the user's index with its session (logout ends it) unless the user was signed out
	// everywhere since the session's sign-in.
	ctx, _ := h.store.BeginTX(store.WithOrigin(a.r.Context(), store.Origin{Session: sso.ID(in.session), Generation: in.generation}))
	resp, err := a.rt.Provider.NewAuthorizeResponse(ctx, ar, sess)
	if err == nil {
		err = h.store.Commit(ctx)
	} else {
		_ = h.store.Rollback(ctx)
	}
	if errors.Is(err, store.ErrSignedOut) {
		// The session is older than a sign-out everywhere: it ends here too, and the person signs in again.
		_ = h.signOn.Sessions.Delete(a.r.Context(), in.session)
		web.SetCookie(a.w, a.rt, web.SessionCookie, "", -1)
		err = fosite.ErrLoginRequired.WithHint("The account was signed out everywhere since this sign-in; sign in again.")
	}
	if errors.Is(err, store.ErrSessionEnded) {
		// The session was signed out while this request ran.
		web.SetCookie(a.w, a.rt, web.SessionCookie, "", -1)
		err = fosite.ErrLoginRequired.WithHint("This sign-in has ended; sign in again.")
	}
	if err != nil {
		h.authorizeError(a, err)
		return
	}
	if in.askPasswordChange {
		h.askPasswordChange(a, resp)
		return
	}
	a.rt.Provider.WriteAuthorizeResponse(a.r.Context(), withIssuer(a.w, a.rt), ar, resp)
}

// answerAccountClient ends a sign-in to the account page: back to the page asked for, no code.
func (h *Handler) answerAccountClient(a *attempt) {
	back := a.ar.GetState()
	if !a.rt.AccountPath(back) {
		back = a.rt.BasePath + "/account"
	}
	http.Redirect(a.w, a.r, back, http.StatusSeeOther)
}

// renderSignIn writes the sign-in page with status and d, in the client's look.
func (h *Handler) renderSignIn(a *attempt, status int, d page.SignIn) {
	rt, cl := a.rt, a.cl
	d.CSRF = web.CSRFToken(a.w, a.r, rt)
	d.Action = rt.BasePath + "/oauth2/authorize?" + a.r.URL.RawQuery // host-relative: works under any host alias
	d.ClientName = cl.Name
	if cl.Account {
		d.ClientName = page.T(a.w, cl.Name) // "your account", in the page's language
	}
	d.SelfSignup = rt.Config.Auth.SelfSignup
	d.Passkey = passkeyOffer(rt, d.Passkey)
	for _, id := range cl.Connectors {
		if c, ok := rt.Config.Auth.ConnectorByID(id); ok {
			q := a.r.URL.Query()
			q.Set("connector_id", c.ID)
			d.Connectors = append(d.Connectors, page.Connector{ID: c.ID, Name: c.Name, URL: rt.BasePath + "/oauth2/authorize?" + q.Encode(), Brand: brandOf(c)})
		}
	}
	d.ForgotURL = rt.BasePath + "/account/forgot?" + url.Values{"client_id": {cl.GetID()}, "return": {d.Action}}.Encode()
	h.web.Pages.RenderSignIn(page.WithLook(a.w, web.PageLook(a.r, rt, cl)), status, d, []string{realm.OriginOf(a.r.URL.Query().Get("redirect_uri"))})
}

// unavailablePage answers a sign-in that could not be checked (store down, hashing pool full) with the
// page and a 503: the user may simply retry.
func (h *Handler) unavailablePage(a *attempt, email string, err error) {
	h.counted(signinError)
	h.log.Warn("sign-in could not be checked", "err", err)
	a.w.Header().Set("Retry-After", "5")
	h.renderSignIn(a, http.StatusServiceUnavailable, page.SignIn{Email: email, Error: "Signing in is briefly unavailable. Please try again in a moment."})
}

// unverified refuses the sign-in of an account whose address is not verified to a client that requires
// a verified one (requireVerifiedEmail): the sign-in page says so and offers the link again. It reports
// whether it answered.
func (h *Handler) unverified(a *attempt, u *users.User) bool {
	if !needsVerification(a.cl, u) {
		return false
	}
	h.audit.Record(a.r.Context(), audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, Reason: "unverified", User: u.ID, Client: a.cl.GetID()})
	h.renderSignIn(a, http.StatusForbidden, page.SignIn{Email: u.Email,
		Error:        fmt.Sprintf("Confirm your e-mail address to continue to %s: open the link we sent to %s.", a.cl.Name, u.Email),
		ResendAction: a.rt.BasePath + "/account/verify/resend", ResendClient: a.cl.GetID()})
	return true
}

// needsVerification: cl requires a verified address and u's is not.
func needsVerification(cl *realm.Client, u *users.User) bool {
	return cl != nil && cl.RequireVerified && !cl.Account && !u.EmailVerified
}

// signup is the page's action=signup, done by package journeys and answered here on the sign-in page.
func (h *Handler) signup(a *attempt) {
	res := h.journeys.Signup(a.w, a.r, a.rt, a.cl, a.clientKey)
	if res.Err != nil {
		h.unavailablePage(a, "", res.Err)
		return
	}
	if res.Metric != "" {
		h.counted(res.Metric)
	}
	h.renderSignIn(a, res.Status, res.Page)
}
