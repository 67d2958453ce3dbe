package signin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ory/fosite"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/web"
)

// Authorize is /oauth2/authorize. GET validates the authorization request, then either answers at once
// (a signed-in browser, or prompt=none) or shows the sign-in page; POST is the page's form. The
// authorization request itself always travels in the query string, on the GET and in the form's action
// URL, so that fosite sees exactly the same request both times and nothing is kept between them.
func (h *Handler) Authorize(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	var formErr error
	if r.Method == http.MethodPost {
		formErr = r.ParseForm()
	}
	// A password sign-in counts its request against the address's rate limit in the same Redis call as
	// its throttle reservation (password.go, D38); every other request here, and a sign-in that stops
	// before its reservation (a bad client, request or CSRF token) where it stops (rateLater).
	folded := formErr == nil && passwordSignIn(r)
	if !folded && !h.web.RateAllowed(w, r, rt, "authorize-ip", clientKey, rt.Config.Auth.RateLimit.PerIP) {
		return
	}
	rateLater := func() bool {
		return !folded || h.web.RateAllowed(w, r, rt, "authorize-ip", clientKey, rt.Config.Auth.RateLimit.PerIP)
	}
	areq := r
	if r.Method == http.MethodPost {
		if formErr != nil {
			h.web.BadForm(w)
			return
		}
		if r.URL.RawQuery == "" && r.PostForm.Get("client_id") != "" && r.PostForm.Get("csrf_token") == "" {
			// An authorization request sent as a form POST (OpenID Connect Core 3.1.2.1): answer it as the
			// GET it is equivalent to, so that the page's own form always carries it in its query.
			http.Redirect(w, r, rt.BasePath+"/oauth2/authorize?"+r.PostForm.Encode(), http.StatusSeeOther)
			return
		}
		areq = queryOnly(r)
	}
	cl, ok := h.checkClient(ctx, w, rt, areq.URL.Query(), rateLater)
	if !ok {
		return
	}
	a := &attempt{w: w, r: r, rt: rt, cl: cl, clientKey: clientKey}
	ar, err := rt.Provider.NewAuthorizeRequest(ctx, areq)
	if err == nil {
		err = checkAuthorizeParams(ar, cl)
	}
	a.ar = ar
	if err != nil {
		if rateLater() {
			h.authorizeError(a, err)
		}
		return
	}
	if r.Method != http.MethodPost {
		h.show(a)
		return
	}
	if !web.CSRFValid(r, rt) {
		if rateLater() {
			h.csrfRefused(a)
		}
		return
	}
	switch r.PostForm.Get("action") {
	case "cancel":
		h.decline(a)
	case "signup":
		h.signup(a)
	case "passkey":
		h.passkeySignIn(a)
	case "mfa":
		h.submitSecondStep(a)
	case "ldap":
		d, ok := directoryOf(a)
		if !ok {
			h.renderSignIn(a, http.StatusBadRequest, page.SignIn{Error: "This way of signing in is not offered here."})
		} else if dir, id := h.directory.signIn(d); id != nil {
			h.connectorSignedIn(a, dir, id, []string{acr.FED, acr.PWD})
		}
	default:
		h.password(a)
	}
}

// show answers the GET of a checked authorization request: at once for a browser whose session
// satisfies it, with login_required for prompt=none, else with the sign-in page (or the second step a
// session signed in with too little needs).
func (h *Handler) show(a *attempt) {
	ctx := a.r.Context()
	prompt := promptSet(a.ar.GetRequestForm().Get("prompt"))
	if !prompt["login"] {
		// The user's authorize rate limit is counted with the user's read (D44): every authorization
		// request of a signed-in user counts, whatever it answers.
		var rate *throttle.Rate
		if !a.cl.Account {
			rl := a.rt.Config.Auth.RateLimit
			rate = &throttle.Rate{Kind: "authorize-user", Limit: rl.PerUser, Window: rl.Window.D()}
		}
		sess, user, limited, err := h.signOn.SignedInRated(ctx, a.r, a.rt, rate)
		if err != nil {
			h.authorizeError(a, err)
			return
		}
		if user != nil && maxAgeSatisfied(a.ar, sess.AuthTime) {
			if needsVerification(a.cl, user) && prompt["none"] {
				h.authorizeError(a, fosite.ErrInteractionRequired.WithHint("The account's e-mail address is not verified, and this client requires it."))
				return
			}
			if h.unverified(a, user) {
				return
			}
			if sessionSatisfies(a.cl, a.ar, sess.AMR) {
				if limited != nil {
					if wait, err := limited.Wait(); !h.web.RateAnswer(a.w, "authorize-user", wait, err) {
						return
					}
				}
				h.counted(signinSession)
				h.grantCode(a, user, signedIn{authTime: sess.AuthTime, session: web.ReadCookie(a.r, a.rt, web.SessionCookie), generation: sess.Generation, amr: sess.AMR})
				return
			}
			if !prompt["none"] { // signed in with too little for this client: the second step
				h.stepUp(a, user, sess)
				return
			}
			h.trail.mfaRequired(ctx, user, a.cl, "prompt_none")
		}
	}
	if id := a.ar.GetRequestForm().Get("connector_id"); id != "" && !prompt["none"] {
		h.connectorStart(a, id) // straight to the one upstream the client named (D58)
		return
	}
	if prompt["none"] {
		h.counted(signinLoginRequired)
		h.authorizeError(a, fosite.ErrLoginRequired.WithHint("The user is not signed in and prompt=none forbids asking."))
		return
	}
	h.renderSignIn(a, http.StatusOK, page.SignIn{})
}

// csrfRefused answers a form posted without its CSRF token (or from another origin).
func (h *Handler) csrfRefused(a *attempt) {
	h.counted(signinCSRF)
	kind := audit.SignIn
	if a.r.PostForm.Get("action") == "signup" {
		kind = audit.SignUp
	}
	h.audit.Record(a.r.Context(), audit.Event{Kind: kind, Outcome: audit.Failure, Reason: "csrf", Client: a.cl.GetID()})
	h.renderSignIn(a, http.StatusForbidden, page.SignIn{Error: "This form has expired or was not sent from this page. Please try again."})
}

// passwordSignIn reports whether a parsed POST is the sign-in page's password form (the default action
// of a form that carries its CSRF token, as Authorize dispatches it).
func passwordSignIn(r *http.Request) bool {
	if r.Method != http.MethodPost || r.URL.RawQuery == "" || r.PostForm.Get("csrf_token") == "" {
		return false
	}
	switch r.PostForm.Get("action") {
	case "cancel", "signup", "passkey", "mfa", "ldap":
		return false
	}
	return true
}

// decline ends the authorization request the person chose not to sign in to: back to the client with
// access_denied and the unchanged state (RFC 6749 4.1.2.1), so the app can tell a refusal from a failure.
// It signs nobody in or out and counts against no throttle.
func (h *Handler) decline(a *attempt) {
	h.counted(signinCancelled)
	a.rt.Provider.WriteAuthorizeError(a.r.Context(), withIssuer(a.w, a.rt), a.ar, fosite.ErrAccessDenied.WithHint("The user cancelled the sign-in."))
}

// queryOnly is the POST request as fosite must see it: the authorization request from the action URL's
// query, without the page's fields (e-mail, password, CSRF token), which must never reach fosite's form.
func queryOnly(r *http.Request) *http.Request {
	q := r.Clone(r.Context())
	q.Method = http.MethodGet
	q.Body = http.NoBody
	q.ContentLength = 0
	q.Header = r.Header.Clone()
	q.Header.Del("Content-Type")
	q.Form, q.PostForm, q.MultipartForm = nil, nil, nil
	return q
}

// checkClient answers an unknown client or a redirect URI that is not registered exactly with an error
// page: redirecting there would make the provider an open redirector. The developer learns what was sent
// and what is registered (web.Kit.RefusePage). beforeRefusal runs before a refusal is written; when it
// answers false it has answered the request itself (a rate limit, Authorize).
func (h *Handler) checkClient(ctx context.Context, w http.ResponseWriter, rt *realm.Realm, q url.Values, beforeRefusal func() bool) (*realm.Client, bool) {
	const title = "This sign-in link is not valid"
	if len(q["client_id"]) != 1 || len(q["redirect_uri"]) > 1 {
		if !beforeRefusal() {
			return nil, false
		}
		h.web.Pages.RenderError(w, http.StatusBadRequest, page.Error{Title: title,
			Message: "The request must name exactly one application (client_id) and at most one return address."})
		return nil, false
	}
	id, ru := q.Get("client_id"), q.Get("redirect_uri")
	cl, ok := rt.Clients[id]
	if !ok {
		if !beforeRefusal() {
			return nil, false
		}
		h.web.RefusePage(ctx, w, web.RefusedUnknownClient, page.Error{Title: title, Message: "The application that sent you here is not registered."},
			"refused a sign-in: the client_id is not a registered client; add it to auth.clients",
			web.Fact{Name: "client_id", Value: id}, web.Fact{Name: "registered clients", Value: rt.ClientIDs()})
		return nil, false
	}
	if ru == "" {
		if !beforeRefusal() {
			return nil, false
		}
		h.web.RefusePage(ctx, w, web.RefusedRedirectURIMissing, page.Error{Title: title, Message: "The request does not say where to return to (redirect_uri)."},
			"refused a sign-in: the request has no redirect_uri", web.Fact{Name: "client_id", Value: id}, web.Fact{Name: "registered redirect URIs", Value: cl.RedirectURIs})
		return nil, false
	}
	if slices.Contains(cl.RedirectURIs, ru) {
		return cl, true
	}
	if !beforeRefusal() {
		return nil, false
	}
	h.web.RefusePage(ctx, w, web.RefusedRedirectURI, page.Error{Title: title, Message: "The return address of this request is not registered for the application."},
		"refused a sign-in: the redirect_uri is not one of the client's redirectURIs (compared exactly: scheme, host, port and path)",
		web.Fact{Name: "client_id", Value: id}, web.Fact{Name: "redirect_uri sent", Value: ru}, web.Fact{Name: "registered redirect URIs", Value: cl.RedirectURIs})
	return nil, false
}

// checkAuthorizeParams enforces what fosite checks only later, or not as strictly: every parameter at
// most once (RFC 6749 3.1; fosite reads the first copy, and whatever sits in front of us may read
// another), PKCE with S256 for every client (refused before the page is shown, not after the user
// signed in), no plain challenge, and the query response mode only.
func checkAuthorizeParams(ar fosite.AuthorizeRequester, cl *realm.Client) error {
	f := ar.GetRequestForm()
	if name, ok := web.RepeatedParam(f); ok {
		return fosite.ErrInvalidRequest.WithHintf("The parameter %s was sent more than once.", name)
	}
	challenge, method := f.Get("code_challenge"), f.Get("code_challenge_method")
	switch {
	case challenge == "" && method != "":
		return fosite.ErrInvalidRequest.WithHint("code_challenge_method was sent without code_challenge.")
	case challenge == "":
		return fosite.ErrInvalidRequest.WithHint("PKCE is required: send code_challenge with code_challenge_method=S256.")
	case challenge != "" && method != "S256":
		return fosite.ErrInvalidRequest.WithHint("code_challenge_method must be S256; plain is not allowed.")
	case challenge != "" && !isBase64URL(challenge, 43):
		return fosite.ErrInvalidRequest.WithHint("code_challenge must be the base64url-encoded SHA-256 of the code_verifier (43 characters).")
	}
	for _, p := range strings.Fields(f.Get("prompt")) {
		if !slices.Contains(realm.SupportedPrompts, p) {
			return fosite.ErrInvalidRequest.WithHintf("prompt=%s is not supported; the supported values are none and login.", p)
		}
	}
	if _, ok := acr.Requested(f.Get("acr_values")); !ok {
		return errUnmetAuthentication.WithHintf("acr_values names no level this provider supports (%s).", strings.Join(acr.Supported, " "))
	}
	for _, res := range f["resource"] { // RFC 8707 2: only the client's configured APIs
		if !slices.Contains(cl.GetAudience(), res) {
			return realm.ErrInvalidTarget.WithHintf("The resource %q is not an API this client may request tokens for.", res)
		}
	}
	if id := f.Get("connector_id"); id != "" && !offersConnector(cl, id) {
		return fosite.ErrInvalidRequest.WithHintf("connector_id %q is not a connector this client offers (its connectors).", id)
	}
	switch m := ar.GetResponseMode(); m {
	case fosite.ResponseModeDefault, fosite.ResponseModeQuery:
	default:
		return fosite.ErrUnsupportedResponseMode.WithHintf("Only response_mode=query is supported.")
	}
	if ma := f.Get("max_age"); ma != "" {
		if n, err := strconv.ParseInt(ma, 10, 64); err != nil || n < 0 {
			return fosite.ErrInvalidRequest.WithHint("max_age must be a non-negative number of seconds.")
		}
	}
	return nil
}

// errUnmetAuthentication is OpenID Connect Core Unmet Authentication Requirements 1.0's error: the
// requested acr_values cannot be met.
var errUnmetAuthentication = &fosite.RFC6749Error{ErrorField: "unmet_authentication_requirements", DescriptionField: "The authorization server cannot meet the requested authentication requirements.", CodeField: http.StatusBadRequest}

func isBase64URL(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func promptSet(p string) map[string]bool {
	set := map[string]bool{}
	for _, v := range strings.Fields(p) {
		set[v] = true
	}
	return set
}

func maxAgeSatisfied(ar fosite.AuthorizeRequester, authTime time.Time) bool {
	ma := ar.GetRequestForm().Get("max_age")
	if ma == "" {
		return true
	}
	n, _ := strconv.ParseInt(ma, 10, 64)
	return time.Since(authTime) <= time.Duration(n)*time.Second
}

// authorizeError answers an authorization request that failed: with a redirect carrying the OAuth error
// when the redirect URI is known to be good, with an error page otherwise. Store outages become
// temporarily_unavailable, never a 500.
func (h *Handler) authorizeError(a *attempt, err error) {
	if web.IsUnavailable(err) {
		h.log.Warn("authorize: store unavailable", "err", err)
		err = fosite.ErrTemporarilyUnavailable.WithHint("The service is briefly unavailable; try again.")
	}
	rfc := fosite.ErrorToRFC6749Error(err)
	if rfc.CodeField >= 500 && !errors.Is(err, fosite.ErrTemporarilyUnavailable) {
		h.log.Error("authorize failed", "error", rfc.ErrorField, "debug", rfc.DebugField)
	}
	if a.ar == nil || !a.ar.IsRedirectURIValid() {
		h.web.Pages.RenderError(a.w, http.StatusBadRequest, page.Error{Title: "This sign-in link is not valid", Message: rfc.GetDescription()})
		return
	}
	a.rt.Provider.WriteAuthorizeError(a.r.Context(), withIssuer(a.w, a.rt), a.ar, err)
}
