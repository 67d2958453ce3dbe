package signin

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/directory"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Signing in through a connector of type ldap (D75). Its button leads, like any connector's, to the
// authorization request with connector_id; for a directory that shows this page, whose form posts the
// username and password back to the same request with action=ldap (CSRF-checked as every form here).
// The attempt counts against the same throttle budgets as the password form, keyed by the connector and
// the username (the directory's account is not an address here), before the directory is asked
// (federation.CheckLogin).

// directoryPage is the page of ldap connectors, with only what it uses: the web kit (the page), the
// federation kit that asks the directory, the throttle, the audit trail and the sign-in counter. A
// sign-in it accepts goes on in Handler.connectorSignedIn.
type directoryPage struct {
	web        *web.Kit
	federation *federation.Kit
	throttle   *throttle.Limiter
	audit      *audit.Recorder
	log        *slog.Logger
	counted    func(result string)
}

// directoryAttempt is what the page needs of one sign-in attempt: the request and its answer, the
// checked client, the client's address as rate limits count it, and the ldap connector it offers.
type directoryAttempt struct {
	w         http.ResponseWriter
	r         *http.Request
	rt        *realm.Realm
	cl        *realm.Client
	clientKey string
	c         config.Connector
}

// directoryOf is a's ldap connector, when its authorization request names one its client offers.
func directoryOf(a *attempt) (directoryAttempt, bool) {
	id := a.ar.GetRequestForm().Get("connector_id")
	c, ok := a.rt.Config.Auth.ConnectorByID(id)
	if !ok || c.Type != config.TypeLDAP || !offersConnector(a.cl, id) {
		return directoryAttempt{}, false
	}
	return directoryAttempt{w: a.w, r: a.r, rt: a.rt, cl: a.cl, clientKey: a.clientKey, c: c}, true
}

// show writes the username and password page of the attempt's connector.
func (p *directoryPage) show(d directoryAttempt, status int, username, msg string) {
	back := d.r.URL.Query()
	back.Del("connector_id")
	name := d.cl.Name
	if d.cl.Account {
		name = page.T(d.w, d.cl.Name)
	}
	pd := page.DirectorySignIn{
		Action: d.rt.BasePath + "/oauth2/authorize?" + d.r.URL.RawQuery, CSRF: web.CSRFToken(d.w, d.r, d.rt), ClientName: name,
		Name: d.c.Name, Prompt: d.c.LDAP.UsernamePrompt, Username: username, Error: msg,
		BackURL: d.rt.BasePath + "/oauth2/authorize?" + back.Encode(),
	}
	p.web.Pages.RenderDirectorySignIn(page.WithLook(d.w, web.PageLook(d.r, d.rt, d.cl)), status, pd, []string{realm.OriginOf(d.r.URL.Query().Get("redirect_uri"))})
}

// signIn is the page's action=ldap: the throttle and the directory's check. It returns the directory
// and the person it vouched for, for the sign-in to go on; nil when it answered (a refusal, a wait, the
// directory down).
func (p *directoryPage) signIn(d directoryAttempt) (*directory.Connector, *upstream.Identity) {
	ctx := d.r.Context()
	username := federation.Username(d.r.PostForm.Get("username"))
	checked, err := p.federation.CheckLogin(ctx, d.rt, p.throttle, signon.Limits(d.rt),
		federation.Login{Connector: d.c.ID, Username: username, Password: d.r.PostForm.Get("password"), ClientKey: d.clientKey})
	switch {
	case errors.Is(err, directory.ErrBadCredentials):
		p.wrong(d, username, checked)
	case err != nil:
		p.unavailable(d, username, err)
	case checked.Refusal != nil:
		p.throttled(d, username, checked.Refusal)
	default:
		return checked.Dir, checked.Identity
	}
	return nil, nil
}

// throttled answers a sign-in the throttle refused before the directory was asked.
func (p *directoryPage) throttled(d directoryAttempt, username string, refusal *throttle.Refusal) {
	p.counted(signinThrottled)
	p.audit.Record(d.r.Context(), audit.Event{Kind: audit.SignInConnector, Outcome: audit.Failure, Reason: "throttled", Client: d.cl.GetID(),
		Detail: map[string]string{"connector": d.c.ID, "budget": refusal.Budget}})
	web.RetryAfter(d.w, refusal.Wait)
	lead := "Too many failed sign-ins."
	if !refusal.Locked {
		lead = "Please wait a moment after a failed sign-in."
	}
	p.show(d, http.StatusTooManyRequests, username, web.WaitMessage(lead, refusal.Wait))
}

// wrong answers a username or password the directory refused (one message for both).
func (p *directoryPage) wrong(d directoryAttempt, username string, checked federation.Checked) {
	ctx := d.r.Context()
	p.counted(signinBadCredentials)
	msg, status := "Wrong username or password.", http.StatusUnauthorized
	if checked.Wait > 0 {
		msg = web.WaitMessage(msg, checked.Wait)
		web.RetryAfter(d.w, checked.Wait)
	}
	if len(checked.UsedUp) > 0 {
		status = http.StatusTooManyRequests
		p.audit.Record(ctx, signon.LockoutEvent(d.cl.GetID(), nil, checked.UsedUp, checked.Wait, "unknown"))
	}
	p.audit.Record(ctx, audit.Event{Kind: audit.SignInConnector, Outcome: audit.Failure, Reason: "bad_credentials", Client: d.cl.GetID(),
		Detail: map[string]string{"connector": d.c.ID}})
	p.show(d, status, username, msg)
}

// unavailable answers a sign-in the directory (or our store) could not check: 503, try again.
func (p *directoryPage) unavailable(d directoryAttempt, username string, err error) {
	reason, msg := "unavailable", "Signing in is briefly unavailable. Please try again in a moment."
	switch {
	case errors.Is(err, upstream.ErrUnreachable):
		reason, msg = "unreachable", fmt.Sprintf("%s did not answer. Please try again in a moment, or sign in another way.", d.c.Name)
	case errors.Is(err, upstream.ErrRefused):
		reason, msg = "refused", fmt.Sprintf("Signing in with %s did not work. Please try again, or sign in another way.", d.c.Name)
	}
	// err never holds the password: the directory's errors name the DN and the server's answer.
	p.log.Warn("sign-in through a directory failed", "connector", d.c.ID, "err", err)
	p.counted(signinConnectorRefused)
	p.audit.Record(d.r.Context(), audit.Event{Kind: audit.SignInConnector, Outcome: audit.Failure, Reason: reason, Client: d.cl.GetID(),
		Detail: map[string]string{"connector": d.c.ID}})
	d.w.Header().Set("Retry-After", "5")
	p.show(d, http.StatusServiceUnavailable, username, msg)
}
