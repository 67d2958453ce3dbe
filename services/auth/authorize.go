package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
)

// authorize is /oauth2/authorize. GET validates the authorization request, then either answers at once
// (a signed-in browser, or prompt=none) or shows the sign-in page; POST is the page's form. The
// authorization request itself always travels in the query string, on the GET and in the form's action
// URL, so that fosite sees exactly the same request both times and nothing is kept between them.
func (s *Service) authorize(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := s.rt()
	ctx := r.Context()
	var formErr error
	if r.Method == http.MethodPost {
		formErr = r.ParseForm()
	}
	// A password sign-in counts its request against the address's rate limit in the same Redis call as
	// its throttle reservation (signin, D38); every other request here, and a sign-in that stops before
	// its reservation (a bad client, request or CSRF token) where it stops (rateLater).
	folded := formErr == nil && passwordSignIn(r)
	if !folded && !s.rateAllowed(w, r, rt, "authorize-ip", clientKey, rt.cfg.Auth.RateLimit.PerIP) {
		return
	}
	rateLater := func() bool {
		return !folded || s.rateAllowed(w, r, rt, "authorize-ip", clientKey, rt.cfg.Auth.RateLimit.PerIP)
	}
	areq := r
	if r.Method == http.MethodPost {
		if formErr != nil {
			s.pages.RenderError(w, http.StatusBadRequest, page.Error{Title: "Bad request", Message: "The form could not be read."})
			return
		}
		if r.URL.RawQuery == "" && r.PostForm.Get("client_id") != "" && r.PostForm.Get("csrf_token") == "" {
			// An authorization request sent as a form POST (OpenID Connect Core 3.1.2.1): answer it as the
			// GET it is equivalent to, so that the page's own form always carries it in its query.
			http.Redirect(w, r, rt.basePath+"/oauth2/authorize?"+r.PostForm.Encode(), http.StatusSeeOther)
			return
		}
		areq = queryOnly(r)
	}
	cl, ok := s.checkClient(ctx, w, rt, areq.URL.Query(), rateLater)
	if !ok {
		return
	}
	ar, err := rt.provider.NewAuthorizeRequest(ctx, areq)
	if err != nil {
		if rateLater() {
			s.authorizeError(w, r, rt, ar, err)
		}
		return
	}
	if err := checkAuthorizeParams(ar, cl); err != nil {
		if rateLater() {
			s.authorizeError(w, r, rt, ar, err)
		}
		return
	}
	prompt := promptSet(ar.GetRequestForm().Get("prompt"))

	if r.Method != http.MethodPost {
		if !prompt["login"] {
			// The user's authorize rate limit is counted with the user's read (D44): every authorization
			// request of a signed-in user counts, whatever it answers.
			var rate *throttle.Rate
			if !isAccountClient(ar) {
				rl := rt.cfg.Auth.RateLimit
				rate = &throttle.Rate{Kind: "authorize-user", Limit: rl.PerUser, Window: rl.Window.D()}
			}
			sess, user, limited, err := s.signedInRated(ctx, r, rt, rate)
			if err != nil {
				s.authorizeError(w, r, rt, ar, err)
				return
			}
			if user != nil && maxAgeSatisfied(ar, sess.AuthTime) {
				if needsVerification(cl, user) && prompt["none"] {
					s.authorizeError(w, r, rt, ar, fosite.ErrInteractionRequired.WithHint("The account's e-mail address is not verified, and this client requires it."))
					return
				}
				if s.unverified(w, r, rt, cl, user) {
					return
				}
				if sessionSatisfies(cl, ar, sess.AMR) {
					if limited != nil {
						if wait, err := limited.Wait(); !s.rateAnswer(w, "authorize-user", wait, err) {
							return
						}
					}
					s.metrics.signins.WithLabelValues(signinSession).Inc()
					s.grantCode(w, r, rt, ar, user, sess.AuthTime, readCookie(r, rt, sessionCookie), sess.Generation, sess.AMR)
					return
				}
				if !prompt["none"] { // signed in with too little for this client: the second step
					s.stepUp(w, r, rt, cl, ar, user, sess)
					return
				}
				s.mfaRequired(ctx, user, cl, "prompt_none")
			}
		}
		if prompt["none"] {
			s.metrics.signins.WithLabelValues(signinLoginRequired).Inc()
			s.authorizeError(w, r, rt, ar, fosite.ErrLoginRequired.WithHint("The user is not signed in and prompt=none forbids asking."))
			return
		}
		s.renderSignIn(w, r, rt, cl, http.StatusOK, page.SignIn{})
		return
	}

	if !csrfValid(r, rt) {
		if !rateLater() {
			return
		}
		s.metrics.signins.WithLabelValues(signinCSRF).Inc()
		kind := audit.SignIn
		if r.PostForm.Get("action") == "signup" {
			kind = audit.SignUp
		}
		s.audit.Record(ctx, audit.Event{Kind: kind, Outcome: audit.Failure, Reason: "csrf", Client: cl.GetID()})
		s.renderSignIn(w, r, rt, cl, http.StatusForbidden, page.SignIn{Error: "This form has expired or was not sent from this page. Please try again."})
		return
	}
	switch r.PostForm.Get("action") {
	case "cancel":
		s.decline(w, r, rt, ar)
	case "signup":
		s.signup(w, r, rt, cl, ar, clientKey)
	case "passkey":
		s.passkeySignIn(w, r, rt, cl, ar, clientKey)
	case "mfa":
		s.submitSecondStep(w, r, rt, cl, ar, clientKey)
	default:
		s.signin(w, r, rt, cl, ar, clientKey)
	}
}

// passwordSignIn reports whether a parsed POST is the sign-in page's password form (the default action
// of a form that carries its CSRF token, as authorize dispatches it).
func passwordSignIn(r *http.Request) bool {
	if r.Method != http.MethodPost || r.URL.RawQuery == "" || r.PostForm.Get("csrf_token") == "" {
		return false
	}
	switch r.PostForm.Get("action") {
	case "cancel", "signup", "passkey", "mfa":
		return false
	}
	return true
}

// decline ends the authorization request the person chose not to sign in to: back to the client with
// access_denied and the unchanged state (RFC 6749 4.1.2.1), so the app can tell a refusal from a failure.
// It signs nobody in or out and counts against no throttle.
func (s *Service) decline(w http.ResponseWriter, r *http.Request, rt *runtime, ar fosite.AuthorizeRequester) {
	s.metrics.signins.WithLabelValues(signinCancelled).Inc()
	rt.provider.WriteAuthorizeError(r.Context(), withIssuer(w, rt), ar, fosite.ErrAccessDenied.WithHint("The user cancelled the sign-in."))
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
// and what is registered (refusals.go). beforeRefusal runs before a refusal is written; when it answers
// false it has answered the request itself (a rate limit, authorize).
func (s *Service) checkClient(ctx context.Context, w http.ResponseWriter, rt *runtime, q url.Values, beforeRefusal func() bool) (*client, bool) {
	const title = "This sign-in link is not valid"
	if len(q["client_id"]) != 1 || len(q["redirect_uri"]) > 1 {
		if !beforeRefusal() {
			return nil, false
		}
		s.pages.RenderError(w, http.StatusBadRequest, page.Error{Title: title,
			Message: "The request must name exactly one application (client_id) and at most one return address."})
		return nil, false
	}
	id, ru := q.Get("client_id"), q.Get("redirect_uri")
	cl, ok := rt.clients[id]
	if !ok {
		if !beforeRefusal() {
			return nil, false
		}
		s.refusePage(ctx, w, refusedUnknownClient, page.Error{Title: title, Message: "The application that sent you here is not registered."},
			"refused a sign-in: the client_id is not a registered client; add it to auth.clients",
			fact{"client_id", id}, fact{"registered clients", rt.clientIDs()})
		return nil, false
	}
	if ru == "" {
		if !beforeRefusal() {
			return nil, false
		}
		s.refusePage(ctx, w, refusedRedirectURIMissing, page.Error{Title: title, Message: "The request does not say where to return to (redirect_uri)."},
			"refused a sign-in: the request has no redirect_uri", fact{"client_id", id}, fact{"registered redirect URIs", cl.RedirectURIs})
		return nil, false
	}
	for _, reg := range cl.RedirectURIs {
		if ru == reg {
			return cl, true
		}
	}
	if !beforeRefusal() {
		return nil, false
	}
	s.refusePage(ctx, w, refusedRedirectURI, page.Error{Title: title, Message: "The return address of this request is not registered for the application."},
		"refused a sign-in: the redirect_uri is not one of the client's redirectURIs (compared exactly: scheme, host, port and path)",
		fact{"client_id", id}, fact{"redirect_uri sent", ru}, fact{"registered redirect URIs", cl.RedirectURIs})
	return nil, false
}

// checkAuthorizeParams enforces what fosite checks only later, or not as strictly: every parameter at
// most once (RFC 6749 3.1; fosite reads the first copy, and whatever sits in front of us may read
// another), PKCE with S256 for every client (refused before the page is shown, not after the user
// signed in), no plain challenge, and the query response mode only.
func checkAuthorizeParams(ar fosite.AuthorizeRequester, cl *client) error {
	f := ar.GetRequestForm()
	if name, ok := repeatedParam(f); ok {
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
		if !slices.Contains(supportedPrompts, p) {
			return fosite.ErrInvalidRequest.WithHintf("prompt=%s is not supported; the supported values are none and login.", p)
		}
	}
	if _, ok := acr.Requested(f.Get("acr_values")); !ok {
		return errUnmetAuthentication.WithHintf("acr_values names no level this provider supports (%s).", strings.Join(acr.Supported, " "))
	}
	for _, res := range f["resource"] { // RFC 8707 2: only the client's configured APIs
		if !slices.Contains(cl.GetAudience(), res) {
			return errInvalidTarget.WithHintf("The resource %q is not an API this client may request tokens for.", res)
		}
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

// errInvalidTarget is RFC 8707's error for a resource the client may not ask for.
var errInvalidTarget = &fosite.RFC6749Error{ErrorField: "invalid_target", DescriptionField: "The requested resource is invalid, missing, unknown, or malformed.", CodeField: http.StatusBadRequest}

// repeatedParam names a parameter that appears more than once (in sorted order, so the answer is stable).
func repeatedParam(v url.Values) (string, bool) {
	var names []string
	for k, vs := range v {
		if len(vs) > 1 && k != "resource" && k != "audience" { // RFC 8707: one resource parameter per API
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return "", false
	}
	slices.Sort(names)
	return names[0], true
}

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
func (s *Service) authorizeError(w http.ResponseWriter, r *http.Request, rt *runtime, ar fosite.AuthorizeRequester, err error) {
	if isUnavailable(err) {
		s.log.Warn("authorize: store unavailable", "err", err)
		err = fosite.ErrTemporarilyUnavailable.WithHint("The service is briefly unavailable; try again.")
	}
	rfc := fosite.ErrorToRFC6749Error(err)
	if rfc.CodeField >= 500 && !errors.Is(err, fosite.ErrTemporarilyUnavailable) {
		s.log.Error("authorize failed", "error", rfc.ErrorField, "debug", rfc.DebugField)
	}
	if ar == nil || !ar.IsRedirectURIValid() {
		s.pages.RenderError(w, http.StatusBadRequest, page.Error{Title: "This sign-in link is not valid", Message: rfc.GetDescription()})
		return
	}
	rt.provider.WriteAuthorizeError(r.Context(), withIssuer(w, rt), ar, err)
}

// signedIn returns the browser's sign-in session and its user, or nils.
func (s *Service) signedIn(ctx context.Context, r *http.Request, rt *runtime) (*sso.Session, *users.User, error) {
	sess, u, _, err := s.signedInRated(ctx, r, rt, nil)
	return sess, u, err
}

// signedInRated is signedIn that also counts the signed-in user's request against a rate limit (rate:
// its kind, limit and window), in the round trip that reads the user (D44). limited answers it (nil when
// there is no signed-in user).
func (s *Service) signedInRated(ctx context.Context, r *http.Request, rt *runtime, rate *throttle.Rate) (_ *sso.Session, _ *users.User, limited *throttle.Queued, _ error) {
	token := readCookie(r, rt, sessionCookie)
	if token == "" {
		return nil, nil, nil, nil
	}
	sess, err := s.sessions.Get(ctx, token)
	if err != nil || sess == nil {
		return nil, nil, nil, err
	}
	var user func() (*users.User, error)
	_ = s.throttle.Pipelined(ctx, func(p redis.Pipeliner) error { // each answer carries its own error
		user = s.users.QueueByID(ctx, p, sess.UserID)
		if rate != nil {
			rate.Who = sess.UserID
			limited = s.throttle.Queue(ctx, p, *rate)
		}
		return nil
	})
	u, err := user()
	if err == nil && u.Disabled {
		err = users.ErrNotFound
	}
	if errors.Is(err, users.ErrNotFound) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return sess, u, limited, nil
}

// rateAllowed counts a request against a rate limit (auth.rateLimit, shared by the replicas) and, over
// it, answers 429 with Retry-After: the page for authorize, an OAuth error for token. The limit fails
// open when Redis does not answer: it protects availability, and every step behind it answers 503 then
// (or, like a new browser's sign-in page, needs no store).
func (s *Service) rateAllowed(w http.ResponseWriter, r *http.Request, rt *runtime, kind, who string, limit int) bool {
	wait, err := s.throttle.Allow(r.Context(), kind, who, limit, rt.cfg.Auth.RateLimit.Window.D())
	return s.rateAnswer(w, kind, wait, err)
}

// rateAnswer is rateAllowed for a rate limit counted already (wait, err: its answer).
func (s *Service) rateAnswer(w http.ResponseWriter, kind string, wait time.Duration, err error) bool {
	if err != nil {
		s.log.Warn("rate limit: store unavailable; not applied", "err", err)
		return true
	}
	if wait == 0 {
		return true
	}
	s.rateRefused(w, kind, wait)
	return false
}

// rateRefused answers a request over a rate limit of kind: 429 with Retry-After, the page for authorize,
// an OAuth error for token.
func (s *Service) rateRefused(w http.ResponseWriter, kind string, wait time.Duration) {
	msg := fmt.Sprintf("Too many requests. Try again in %d s.", int(wait/time.Second))
	w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
	s.metrics.rateLimited.WithLabelValues(kind).Inc()
	if strings.HasPrefix(kind, "token") {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": "temporarily_unavailable", "error_description": msg})
	} else {
		s.pages.RenderError(w, http.StatusTooManyRequests, page.Error{Title: "Try again later", Message: msg})
	}
}

// activeUser is the user with that ID, or ErrNotFound when it was deleted or is disabled: neither may
// use a session or a token any more.
func (s *Service) activeUser(ctx context.Context, id string) (*users.User, error) {
	u, err := s.users.ByID(ctx, id)
	if err == nil && u.Disabled {
		return nil, users.ErrNotFound
	}
	return u, err
}

func (s *Service) renderSignIn(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, status int, d page.SignIn) {
	d.CSRF = csrfToken(w, r, rt)
	d.Action = rt.basePath + "/oauth2/authorize?" + r.URL.RawQuery // host-relative: works under any host alias
	d.ClientName = cl.name
	if cl.account {
		d.ClientName = page.T(w, cl.name) // "your account", in the page's language
	}
	d.SelfSignup = rt.cfg.Auth.SelfSignup
	d.Passkey = passkeyOffer(rt, d.Passkey)
	d.ForgotURL = rt.basePath + "/account/forgot?" + url.Values{"client_id": {cl.GetID()}, "return": {d.Action}}.Encode()
	s.pages.RenderSignIn(page.WithLook(w, s.pageLook(r, rt, cl)), status, d, []string{originOf(r.URL.Query().Get("redirect_uri"))})
}

// unavailablePage answers a sign-in that could not be checked (store down, hashing pool full) with the
// page and a 503: the user may simply retry.
func (s *Service) unavailablePage(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, email string, err error) {
	s.metrics.signins.WithLabelValues(signinError).Inc()
	s.log.Warn("sign-in could not be checked", "err", err)
	w.Header().Set("Retry-After", "5")
	s.renderSignIn(w, r, rt, cl, http.StatusServiceUnavailable, page.SignIn{Email: email, Error: "Signing in is briefly unavailable. Please try again in a moment."})
}

// startSession follows a right password: the second step when the sign-in needs one (secondstep.go),
// else the session starts with the password.
func (s *Service) startSession(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, ar fosite.AuthorizeRequester, u *users.User) {
	if s.secondStep(w, r, rt, cl, ar, u) {
		return
	}
	s.openSession(w, r, rt, cl, ar, u, []string{acr.PWD})
}

// openSession sets a new sign-in session cookie for u signed in with amr (a new value at every sign-in,
// against session fixation) and answers the authorization request. The user's authorize rate limit is
// counted in the round trip that starts the session (D44).
func (s *Service) openSession(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, ar fosite.AuthorizeRequester, u *users.User, amr []string) {
	if s.unverified(w, r, rt, cl, u) { // no session for a sign-in the client refuses
		return
	}
	var rate *throttle.Rate
	if !isAccountClient(ar) {
		rl := rt.cfg.Auth.RateLimit
		rate = &throttle.Rate{Kind: "authorize-user", Who: u.ID, Limit: rl.PerUser, Window: rl.Window.D()}
	}
	now := time.Now().UTC()
	token, gen, wait, err := s.newSession(w, r, rt, u, amr, now, rate)
	if err != nil {
		s.unavailablePage(w, r, rt, cl, u.Email, err)
		return
	}
	if rate != nil && !s.rateAnswer(w, rate.Kind, wait, nil) {
		return
	}
	s.grantCode(w, r, rt, ar, u, now, token, gen, amr)
}

// isAccountClient: the request is the account page's own sign-in, which gets no code.
func isAccountClient(ar fosite.AuthorizeRequester) bool {
	cl, _ := ar.GetClient().(*client)
	return cl != nil && cl.account
}

// grantCode grants the request (the clients are first-party: no consent screen) and redirects back with
// the authorization code; the caller counted the user's authorize rate limit. gen is the user's
// sign-out generation the session saw: a sign-out everywhere since then (which may run at the same time
// as this request) refuses the code.
func (s *Service) grantCode(w http.ResponseWriter, r *http.Request, rt *runtime, ar fosite.AuthorizeRequester, u *users.User, authTime time.Time, session string, gen int64, amr []string) {
	if isAccountClient(ar) {
		s.answerAccountClient(w, r, rt, ar) // the account page: signed in, no code
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
	for _, a := range requested {
		ar.GrantAudience(a)
	}
	sess := userSession(u, ar.GetGrantedScopes(), ar.GetClient().GetID(), authTime, ar.GetRequestedAt())
	sess.IDClaims.AuthenticationMethodsReferences = amr
	sess.IDClaims.AuthenticationContextClassReference = acr.Claim(amr, requestedACR(ar))
	// The code, its PKCE challenge and its OpenID Connect request are written together, in one step; the
	// grant joins the user's index with its session (logout ends it) unless the user was signed out
	// everywhere since the session's sign-in.
	ctx, _ := s.store.BeginTX(store.WithOrigin(r.Context(), store.Origin{Session: sso.ID(session), Generation: gen}))
	resp, err := rt.provider.NewAuthorizeResponse(ctx, ar, sess)
	if err == nil {
		err = s.store.Commit(ctx)
	} else {
		_ = s.store.Rollback(ctx)
	}
	if errors.Is(err, store.ErrSignedOut) {
		// The session is older than a sign-out everywhere: it ends here too, and the person signs in again.
		_ = s.sessions.Delete(r.Context(), session)
		setCookie(w, rt, sessionCookie, "", -1)
		err = fosite.ErrLoginRequired.WithHint("The account was signed out everywhere since this sign-in; sign in again.")
	}
	if errors.Is(err, store.ErrSessionEnded) {
		// The session was signed out while this request ran.
		setCookie(w, rt, sessionCookie, "", -1)
		err = fosite.ErrLoginRequired.WithHint("This sign-in has ended; sign in again.")
	}
	if err != nil {
		s.authorizeError(w, r, rt, ar, err)
		return
	}
	rt.provider.WriteAuthorizeResponse(r.Context(), withIssuer(w, rt), ar, resp)
}

// userSession is the session every token of this sign-in carries.
func userSession(u *users.User, scopes fosite.Arguments, clientID string, authTime, requestedAt time.Time) *Session {
	sess := &Session{Subject: u.ID, Username: username(u, scopes)}
	idc := sess.IDTokenClaims()
	idc.Subject = u.ID
	idc.AuthTime = authTime.UTC()
	idc.RequestedAt = requestedAt.UTC()
	idc.Extra = identityClaims(u, scopes)
	sess.GetJWTClaims()
	sess.ATClaims.Subject = u.ID
	sess.ATClaims.Extra = map[string]interface{}{"client_id": clientID}
	return sess
}

// username is what introspection answers as username: the e-mail address, only when the grant has the
// email scope (a resource server learns no more about the person than the app was allowed to).
func username(u *users.User, scopes fosite.Arguments) string {
	if scopes.Has("email") {
		return u.Email
	}
	return ""
}

// identityClaims are the user's claims the granted scopes allow (OpenID Connect Core 5.4).
func identityClaims(u *users.User, scopes fosite.Arguments) map[string]interface{} {
	c := map[string]interface{}{}
	if scopes.Has("email") {
		c["email"] = u.Email
		c["email_verified"] = u.EmailVerified
	}
	if scopes.Has("profile") && u.Name != "" {
		c["name"] = u.Name
	}
	if scopes.Has(groupsScope) {
		// Always an array, empty when the user is in none: "no groups" said, not left to guess.
		c[groupsScope] = append([]string{}, u.Groups...)
	}
	return c
}

// groupsScope is the scope that grants the groups claim, and the claim's name (Dex's and Keycloak's).
const groupsScope = "groups"
