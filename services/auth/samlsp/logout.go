package samlsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/crewjam/saml"
	dsig "github.com/russellhaering/goxmldsig"

	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Single logout (D89): our SingleLogoutService takes, by the HTTP-Redirect binding, the IdP's
// LogoutResponse to a LogoutRequest of ours and the IdP's own LogoutRequests. crewjam/saml checks each
// (signature by the IdP's metadata certificates, Destination our SLO URL, Issuer the IdP, IssueInstant,
// InResponseTo, each request ID once in Redis); we add the stricter clock skew.

// Principal is what single logout needs of a sign-in's assertion: its NameID as the IdP wrote it and
// the IdP's session index. It is kept sealed with our session (package federation).
type Principal struct {
	NameID          string `json:"n"`
	Format          string `json:"f,omitempty"`
	NameQualifier   string `json:"q,omitempty"`
	SPNameQualifier string `json:"s,omitempty"`
	SessionIndex    string `json:"i,omitempty"`
}

// principal is the Principal of the checked assertion a, as Identity.Logout carries it ("" without a
// NameID).
func principal(a *saml.Assertion) string {
	if a.Subject == nil || a.Subject.NameID == nil || a.Subject.NameID.Value == "" {
		return ""
	}
	n := a.Subject.NameID
	p := Principal{NameID: n.Value, Format: n.Format, NameQualifier: n.NameQualifier, SPNameQualifier: n.SPNameQualifier}
	for _, s := range a.AuthnStatements {
		if s.SessionIndex != "" {
			p.SessionIndex = s.SessionIndex
			break
		}
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// ParsePrincipal reads what Identity.Logout carried.
func ParsePrincipal(s string) (Principal, error) {
	var p Principal
	if err := json.Unmarshal([]byte(s), &p); err != nil || p.NameID == "" {
		return Principal{}, errors.New("samlsp: not a principal")
	}
	return p, nil
}

// SLOURL is our SingleLogoutService.
func (c *Connector) SLOURL() string { return c.slo.String() }

// SingleLogout says whether a sign-out here goes on at the IdP: the connector does not say
// singleLogout: false and the IdP's metadata names an HTTP-Redirect SingleLogoutService.
func (c *Connector) SingleLogout(ctx context.Context) bool {
	if !c.cfg.SAML.SingleLogoutWanted() {
		return false
	}
	sp, err := c.sp(ctx)
	return err == nil && sp.GetSLOBindingLocation(saml.HTTPRedirectBinding) != ""
}

// logoutSP is the service provider for logout messages: our SLO URL, our signature on what we send,
// our clock, the replay cache.
func (c *Connector) logoutSP(ctx context.Context) (*saml.ServiceProvider, *replayCache, error) {
	sp, err := c.sp(ctx)
	if err != nil {
		return nil, nil, err
	}
	now := c.now()
	sp.Clock = dsig.NewFakeClockAt(now)
	sp.SignatureMethod = c.signatureMethod() // every logout message of ours is signed
	replays := &replayCache{ctx: ctx, rdb: c.rdb, conn: c.cfg.ID, now: now}
	sp.ReplayCache = replays
	return sp, replays, nil
}

// LogoutRequestURL is the IdP's SingleLogoutService with our signed LogoutRequest (HTTP-Redirect
// binding, a query signature) for the principal p, and the request's ID (the answer's InResponseTo).
func (c *Connector) LogoutRequestURL(ctx context.Context, p Principal, relayState string) (to, requestID string, err error) {
	sp, _, err := c.logoutSP(ctx)
	if err != nil {
		return "", "", err
	}
	loc := sp.GetSLOBindingLocation(saml.HTTPRedirectBinding)
	if loc == "" {
		return "", "", fmt.Errorf("%w: the IdP's metadata has no HTTP-Redirect single logout service", upstream.ErrRefused)
	}
	req, err := sp.MakeLogoutRequest(loc, p.NameID, saml.WithSessionIndex(p.SessionIndex))
	if err != nil {
		return "", "", fmt.Errorf("%w: the LogoutRequest: %v", upstream.ErrRefused, err)
	}
	// The NameID exactly as the assertion carried it (the library would write our defaults).
	req.NameID = &saml.NameID{Value: p.NameID, Format: p.Format, NameQualifier: p.NameQualifier, SPNameQualifier: p.SPNameQualifier}
	u, err := sp.RedirectLogoutRequestURL(req, relayState)
	if err != nil {
		return "", "", fmt.Errorf("%w: the LogoutRequest: %v", upstream.ErrRefused, err)
	}
	return u.String(), req.ID, nil
}

// CheckLogoutResponse checks the IdP's LogoutResponse in r's query: signed by the IdP, to our SLO
// URL, from the IdP, recent, Success, and in response to requestID.
func (c *Connector) CheckLogoutResponse(ctx context.Context, r *http.Request, requestID string) error {
	if r.URL.Query().Get("SAMLResponse") == "" {
		return fmt.Errorf("%w: %w", upstream.ErrRefused, ErrBinding)
	}
	sp, _, err := c.logoutSP(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.ParseLogoutResponse(r, []string{requestID}); err != nil {
		return fmt.Errorf("%w: %w", upstream.ErrRefused, private(err))
	}
	return nil
}

// CheckLogoutRequest checks the IdP's LogoutRequest in r's query: signed by the IdP, to our SLO URL,
// from the IdP, issued within our clock skew, not expired, its ID never seen before (Redis). ErrStore:
// Redis did not answer.
func (c *Connector) CheckLogoutRequest(ctx context.Context, r *http.Request) (*saml.LogoutRequest, error) {
	if r.URL.Query().Get("SAMLRequest") == "" {
		return nil, fmt.Errorf("%w: %w", upstream.ErrRefused, ErrBinding)
	}
	sp, replays, err := c.logoutSP(ctx)
	if err != nil {
		return nil, err
	}
	req, err := sp.ValidateLogoutRequest(r)
	if replays.err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, replays.err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", upstream.ErrRefused, private(err))
	}
	if now := c.now(); now.Add(c.cfg.SAML.ClockSkew.D()).Before(req.IssueInstant) {
		return nil, fmt.Errorf("%w: %w: IssueInstant %s", upstream.ErrRefused, saml.ErrNotYetValid, req.IssueInstant)
	}
	if req.NameID == nil || req.NameID.Value == "" {
		return nil, fmt.Errorf("%w: %w: the LogoutRequest names no NameID", upstream.ErrRefused, saml.ErrMissingElement)
	}
	return req, nil
}

// LogoutResponseURL is the IdP's SingleLogoutService with our signed LogoutResponse to its request
// requestID (HTTP-Redirect binding): Success, or Responder when ok is false (our store failed).
func (c *Connector) LogoutResponseURL(ctx context.Context, requestID, relayState string, ok bool) (string, error) {
	sp, _, err := c.logoutSP(ctx)
	if err != nil {
		return "", err
	}
	if sp.GetSLOBindingLocation(saml.HTTPRedirectBinding) == "" {
		return "", fmt.Errorf("%w: the IdP's metadata has no HTTP-Redirect single logout service", upstream.ErrRefused)
	}
	status := saml.Status{StatusCode: saml.StatusCode{Value: saml.StatusSuccess}}
	if !ok {
		status = saml.Status{StatusCode: saml.StatusCode{Value: saml.StatusResponder}}
	}
	u, err := sp.MakeRedirectLogoutResponseWithStatus(requestID, relayState, status)
	if err != nil {
		return "", fmt.Errorf("%w: the LogoutResponse: %v", upstream.ErrRefused, err)
	}
	return u.String(), nil
}

// private is the library's reason behind its generic InvalidResponseError.
func private(err error) error {
	var ire *saml.InvalidResponseError
	if errors.As(err, &ire) && ire.PrivateErr != nil {
		return ire.PrivateErr
	}
	return err
}

// sloURL is our SingleLogoutService for connector id below issuer.
func sloURL(issuer, id string) (url.URL, error) {
	u, err := url.Parse(issuer + config.SAMLSLOPath(id))
	if err != nil {
		return url.URL{}, err
	}
	return *u, nil
}
