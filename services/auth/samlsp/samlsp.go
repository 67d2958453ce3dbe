// Package samlsp is our service provider (SP) for one SAML 2.0 identity provider (a connector of type
// saml, D76): the IdP's metadata (fetched and refreshed, or read from a file), our SP metadata, the
// AuthnRequest of a sign-in (HTTP-Redirect binding, signed when the IdP wants it), and the check of
// the IdP's answer at the Assertion Consumer Service (HTTP-POST binding). crewjam/saml does every XML
// and signature check; this package sets it up strictly (a signed Response or signed assertions, the
// IdP's certificates from its metadata, our audience and ACS URL, InResponseTo the pending request's
// ID, no IdP-initiated sign-in, each assertion ID once, kept in Redis) and adds the stricter clock
// skew. It implements federation's Upstream: the ACS keeps the checked person in Redis under the trip's
// state, and Exchange takes it, in the same-site step that carries the browser's cookie.
package samlsp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/beevik/etree"
	"github.com/crewjam/saml"
	crewsp "github.com/crewjam/saml/samlsp"
	"github.com/redis/go-redis/v9"
	dsig "github.com/russellhaering/goxmldsig"

	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Errors callers tell apart (with upstream.ErrRefused and upstream.ErrUnreachable, which Exchange and
// AuthURL wrap as the OpenID connector's do).
var (
	// ErrAnswered: the trip has an answer already (a second POST to the ACS for it).
	ErrAnswered = errors.New("samlsp: this sign-in has an answer already")
	// ErrBinding: the ACS was posted something other than an HTTP-POST binding's SAMLResponse.
	ErrBinding = errors.New("samlsp: not an HTTP-POST SAMLResponse")
	// ErrStore: Redis did not answer.
	ErrStore = errors.New("samlsp: store unavailable")
)

// answerLifetime bounds how long a checked answer waits for the browser's same-site step (the trip
// itself lives federation.Lifetime).
const answerLifetime = 10 * time.Minute

// maxMetadata bounds the IdP's metadata (a federation's aggregate is far larger: name one IdP's).
const maxMetadata = 1 << 20

// Connector is our SP for one SAML connector, as one version of the configuration describes it.
type Connector struct {
	cfg     config.Connector
	issuer  string
	key     crypto.Signer
	cert    *x509.Certificate
	rdb     redis.UniversalClient
	client  *http.Client
	now     func() time.Time
	entity  string
	acs     url.URL
	slo     url.URL
	metaURL url.URL
	// metaCert is the certificate the IdP's metadata must be signed with (metadataCertificateFile; nil:
	// the metadata is taken as the URL or file gives it).
	metaCert *x509.Certificate

	mu      sync.Mutex
	idp     *saml.EntityDescriptor
	fetched time.Time
}

// Options are a connector's dependencies.
type Options struct {
	Issuer string // our issuer URL: the routes are below it
	Redis  redis.UniversalClient
	Client *http.Client // fetches the IdP's metadata (nil: 10 s timeout)
	Now    func() time.Time
}

// New reads our key and certificate for connector c (type saml); an error when they cannot be read or
// do not belong together.
func New(c config.Connector, o Options) (*Connector, error) {
	if c.SAML == nil {
		return nil, errors.New("samlsp: not a saml connector")
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	pair, err := tls.LoadX509KeyPair(c.SAML.CertificateFile, c.SAML.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("samlsp: our key and certificate: %w", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("samlsp: our key cannot sign")
	}
	k := &Connector{cfg: c, issuer: strings.TrimSuffix(o.Issuer, "/"), key: signer, cert: pair.Leaf, rdb: o.Redis, client: o.Client, now: o.Now}
	if k.cert == nil {
		if k.cert, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("samlsp: our certificate: %w", err)
		}
	}
	meta, err1 := url.Parse(k.issuer + config.SAMLMetadataPath(c.ID))
	acs, err2 := url.Parse(k.issuer + config.SAMLACSPath(c.ID))
	if err1 != nil || err2 != nil {
		return nil, errors.New("samlsp: the issuer is not a URL")
	}
	k.metaURL, k.acs = *meta, *acs
	if k.slo, err = sloURL(k.issuer, c.ID); err != nil {
		return nil, errors.New("samlsp: the issuer is not a URL")
	}
	k.entity = c.SAML.EntityID
	if k.entity == "" {
		k.entity = meta.String()
	}
	if f := c.SAML.MetadataCertificateFile; f != "" {
		if k.metaCert, err = readCertificate(f); err != nil {
			return nil, fmt.Errorf("samlsp: the IdP's metadata certificate: %w", err)
		}
	}
	return k, nil
}

// readCertificate is the first certificate of the PEM file f.
func readCertificate(f string) (*x509.Certificate, error) {
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			return nil, fmt.Errorf("%s holds no PEM certificate", f)
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// Config is the connector's configuration.
func (c *Connector) Config() config.Connector { return c.cfg }

// EntityID is our SP's entity ID; ACSURL our Assertion Consumer Service.
func (c *Connector) EntityID() string { return c.entity }
func (c *Connector) ACSURL() string   { return c.acs.String() }

// RequestID is the AuthnRequest ID of a trip whose nonce is nonce (an xs:ID must not start with a
// digit or '-', which a nonce may).
func RequestID(nonce string) string { return "id-" + nonce }

// sp is the service provider with the IdP's metadata, fetched again when it is older than the refresh
// period (an unreachable IdP keeps the last metadata, if any).
func (c *Connector) sp(ctx context.Context) (*saml.ServiceProvider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.idp == nil || (c.cfg.SAML.MetadataURL != "" && now.Sub(c.fetched) >= c.cfg.SAML.MetadataRefresh.D()) {
		idp, err := c.loadMetadata(ctx)
		switch {
		case err == nil:
			c.idp, c.fetched = idp, now
		case c.idp == nil:
			return nil, err
		default:
			c.fetched = now.Add(-c.cfg.SAML.MetadataRefresh.D() + time.Minute) // try again in a minute
		}
	}
	sp := c.base()
	sp.IDPMetadata = c.idp
	if sso := c.idp.IDPSSODescriptors; len(sso) > 0 && sso[0].WantAuthnRequestsSigned != nil && *sso[0].WantAuthnRequestsSigned {
		sp.SignatureMethod = c.signatureMethod() // the IdP's metadata asks for signed requests
	}
	return sp, nil
}

// base is our SP without the IdP: what our metadata says.
func (c *Connector) base() *saml.ServiceProvider {
	sp := &saml.ServiceProvider{
		EntityID:                         c.entity,
		Key:                              c.key,
		Certificate:                      c.cert,
		MetadataURL:                      c.metaURL,
		AcsURL:                           c.acs,
		AuthnNameIDFormat:                saml.NameIDFormat(config.SAMLNameIDFormat(c.cfg.SAML.NameIDFormat)),
		AssertionConsumerServiceBindings: []string{saml.HTTPPostBinding},
		AllowIDPInitiated:                false,
		RejectSHA1Signatures:             true,
		RejectUnknownConditions:          true,
		LimitRelayStateLength:            true,
		HTTPClient:                       c.client,
	}
	if c.cfg.SAML.SingleLogoutWanted() {
		// Our metadata names our SingleLogoutService (HTTP-Redirect), D89.
		sp.SloURL = c.slo
		sp.LogoutBindings = []string{saml.HTTPRedirectBinding}
	}
	if c.cfg.SAML.SignAuthnRequests {
		// Our metadata then says we sign them (AuthnRequestsSigned): an IdP that reads it refuses an
		// unsigned one.
		sp.SignatureMethod = c.signatureMethod()
	}
	return sp
}

func (c *Connector) signatureMethod() string {
	if _, ok := c.key.(*ecdsa.PrivateKey); ok {
		return dsig.ECDSASHA256SignatureMethod
	}
	return dsig.RSASHA256SignatureMethod
}

func (c *Connector) loadMetadata(ctx context.Context) (*saml.EntityDescriptor, error) {
	s := c.cfg.SAML
	if s.MetadataFile != "" {
		b, err := os.ReadFile(s.MetadataFile)
		if err != nil {
			return nil, fmt.Errorf("%w: the IdP's metadata file: %v", upstream.ErrUnreachable, err)
		}
		return c.parseMetadata(b, "the IdP's metadata file")
	}
	u, err := url.Parse(s.MetadataURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", upstream.ErrRefused, err)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", upstream.ErrRefused, err)
	}
	res, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: the IdP's metadata at %s: %v", upstream.ErrUnreachable, s.MetadataURL, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: the IdP's metadata at %s: %s", upstream.ErrUnreachable, s.MetadataURL, res.Status)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxMetadata+1))
	if err != nil {
		return nil, fmt.Errorf("%w: the IdP's metadata at %s: %v", upstream.ErrUnreachable, s.MetadataURL, err)
	}
	return c.parseMetadata(b, "the IdP's metadata at "+s.MetadataURL)
}

// parseMetadata reads the IdP's metadata b (from where), checking its signature first when the
// connector names the certificate it must be signed with.
func (c *Connector) parseMetadata(b []byte, where string) (*saml.EntityDescriptor, error) {
	if len(b) > maxMetadata {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", upstream.ErrRefused, where, maxMetadata)
	}
	if c.metaCert != nil {
		signed, err := c.verifyMetadata(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not signed with the configured metadataCertificateFile: %v", upstream.ErrRefused, where, err)
		}
		b = signed
	}
	idp, err := crewsp.ParseMetadata(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", upstream.ErrRefused, where, err)
	}
	return idp, nil
}

// verifyMetadata checks the enveloped XML signature over the root element of the metadata b
// (EntityDescriptor, or an aggregate's EntitiesDescriptor) against c.metaCert only, at our clock's
// time (the certificate must be valid then), and returns what the signature covers: nothing outside
// it is read, so no element wrapped around or beside the signed one counts (goxmldsig).
func (c *Connector) verifyMetadata(b []byte) ([]byte, error) {
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(b); err != nil || doc.Root() == nil {
		return nil, errors.New("not an XML document")
	}
	if err := notSHA1(doc.Root()); err != nil {
		return nil, err
	}
	vc := dsig.NewDefaultValidationContext(&dsig.MemoryX509CertificateStore{Roots: []*x509.Certificate{c.metaCert}})
	vc.Clock = dsig.NewFakeClockAt(c.now())
	signed, err := vc.Validate(doc.Root())
	if err != nil {
		return nil, err
	}
	out := etree.NewDocument()
	out.SetRoot(signed)
	return out.WriteToBytes()
}

// notSHA1 refuses a signature of root's whose SignatureMethod or any DigestMethod is SHA-1 based (as
// the assertions' are refused: RejectSHA1Signatures).
func notSHA1(root *etree.Element) error {
	for _, sig := range root.ChildElements() {
		if sig.Tag != "Signature" {
			continue
		}
		for _, m := range append(sig.FindElements(".//SignatureMethod"), sig.FindElements(".//DigestMethod")...) {
			if strings.HasSuffix(strings.ToLower(m.SelectAttrValue("Algorithm", "")), "sha1") {
				return errors.New("signed with SHA-1")
			}
		}
	}
	return nil
}

// Metadata is our SP's metadata: our entity ID, the ACS (HTTP-POST), our certificate (for signing,
// and for encryption when it is an RSA key: an IdP may encrypt its assertions to it), and that we want
// assertions signed. It needs no IdP.
func (c *Connector) Metadata() ([]byte, error) {
	sp := c.base()
	sp.Clock = dsig.NewFakeClockAt(c.now())
	md := sp.Metadata()
	// Our signing certificate is published whether or not we sign every request: an IdP that asks
	// for signed requests in its metadata gets them, and checks them with this certificate.
	for i := range md.SPSSODescriptors {
		d := &md.SPSSODescriptors[i]
		if !slices.ContainsFunc(d.KeyDescriptors, func(k saml.KeyDescriptor) bool { return k.Use == "signing" }) {
			d.KeyDescriptors = append(d.KeyDescriptors, saml.KeyDescriptor{Use: "signing", KeyInfo: saml.KeyInfo{X509Data: saml.X509Data{
				X509Certificates: []saml.X509Certificate{{Data: base64.StdEncoding.EncodeToString(c.cert.Raw)}}}}})
		}
	}
	b, err := xml.MarshalIndent(md, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), b...), nil
}

// AuthOrigin is the origin of the IdP's single sign-on service (HTTP-Redirect).
func (c *Connector) AuthOrigin(ctx context.Context) (string, error) {
	sp, err := c.sp(ctx)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(sp.GetSSOBindingLocation(saml.HTTPRedirectBinding))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%w: the IdP's metadata has no HTTP-Redirect single sign-on service", upstream.ErrRefused)
	}
	return u.Scheme + "://" + u.Host, nil
}

// AuthURL is the IdP's single sign-on URL with the AuthnRequest of trip s (ID RequestID(s.Nonce),
// RelayState s.State), signed (the HTTP-Redirect binding's query signature) when the IdP's metadata
// asks for it or the connector says signAuthnRequests. extra is not used: SAML has no
// login_hint.
func (c *Connector) AuthURL(ctx context.Context, s upstream.Start, _ map[string]string) (string, error) {
	sp, err := c.sp(ctx)
	if err != nil {
		return "", err
	}
	sp.Clock = dsig.NewFakeClockAt(c.now())
	loc := sp.GetSSOBindingLocation(saml.HTTPRedirectBinding)
	if loc == "" {
		return "", fmt.Errorf("%w: the IdP's metadata has no HTTP-Redirect single sign-on service", upstream.ErrRefused)
	}
	req, err := sp.MakeAuthenticationRequest(loc, saml.HTTPRedirectBinding, saml.HTTPPostBinding)
	if err != nil {
		return "", fmt.Errorf("%w: the AuthnRequest: %v", upstream.ErrRefused, err)
	}
	req.ID = RequestID(s.Nonce)
	u, err := req.Redirect(s.State, sp)
	if err != nil {
		return "", fmt.Errorf("%w: the AuthnRequest: %v", upstream.ErrRefused, err)
	}
	return u.String(), nil
}

// answer is what the ACS keeps for the same-site step: the person, or why the answer was refused.
type answer struct {
	Identity *upstream.Identity `json:"i,omitempty"`
	Refused  string             `json:"r,omitempty"`
}

func answerKey(state string) string { return "auth:fed:saml:{" + state + "}" }

// Accept checks the IdP's answer posted to the ACS (r's form parsed) for the trip whose AuthnRequest
// was requestID and whose state is state, and keeps its outcome for Exchange: the person, or the
// refusal. It returns the refusal too (for the log), ErrAnswered for a trip answered before, and
// ErrStore when Redis fails.
func (c *Connector) Accept(ctx context.Context, r *http.Request, requestID, state string) error {
	id, refusal := c.check(ctx, r, requestID)
	if errors.Is(refusal, ErrStore) {
		return refusal
	}
	a := answer{Identity: id}
	if refusal != nil {
		a.Refused = Reason(refusal)
	}
	b, _ := json.Marshal(a)
	ok, err := c.rdb.SetNX(ctx, answerKey(state), b, answerLifetime).Result()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	if !ok {
		return ErrAnswered
	}
	return refusal
}

// check runs the library's checks and ours, and maps the assertion to the person.
func (c *Connector) check(ctx context.Context, r *http.Request, requestID string) (*upstream.Identity, error) {
	if r.PostForm.Get("SAMLResponse") == "" || r.PostForm.Has("SAMLart") || r.PostForm.Has("SigAlg") || r.PostForm.Has("Signature") {
		return nil, fmt.Errorf("%w: %w", upstream.ErrRefused, ErrBinding)
	}
	sp, err := c.sp(ctx)
	if err != nil {
		return nil, err
	}
	now := c.now()
	sp.Clock = dsig.NewFakeClockAt(now)
	replays := &replayCache{ctx: ctx, rdb: c.rdb, conn: c.cfg.ID, now: now}
	sp.ReplayCache = replays
	raw, err := base64.StdEncoding.DecodeString(r.PostForm.Get("SAMLResponse"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w: not base64", upstream.ErrRefused, saml.ErrMalformedMessage)
	}
	// The Destination must be our ACS URL itself (not whatever URL the request was routed to).
	assertion, err := sp.ParseXMLResponse(raw, []string{requestID}, c.acs)
	if replays.err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, replays.err)
	}
	if err != nil {
		var ire *saml.InvalidResponseError
		if errors.As(err, &ire) && ire.PrivateErr != nil {
			err = ire.PrivateErr
		}
		return nil, fmt.Errorf("%w: %w", upstream.ErrRefused, err)
	}
	if err := c.checkTimes(assertion, now); err != nil {
		return nil, fmt.Errorf("%w: %w", upstream.ErrRefused, err)
	}
	return c.identity(assertion)
}

// checkTimes applies our clock skew, stricter than the library's three minutes, to the assertion's
// times (the library has checked each is present and valid with its own skew, and that the assertion
// was issued at most 90 s ago, MaxIssueDelay): an IdP's clock may be ahead of ours by the skew at
// most, and an assertion's NotOnOrAfter may pass by the skew at most.
func (c *Connector) checkTimes(a *saml.Assertion, now time.Time) error {
	skew := c.cfg.SAML.ClockSkew.D()
	if now.Add(skew).Before(a.IssueInstant) {
		return fmt.Errorf("%w: IssueInstant %s", saml.ErrNotYetValid, a.IssueInstant)
	}
	if cd := a.Conditions; cd != nil {
		if !cd.NotBefore.IsZero() && now.Add(skew).Before(cd.NotBefore) {
			return fmt.Errorf("%w: NotBefore %s", saml.ErrNotYetValid, cd.NotBefore)
		}
		if !cd.NotOnOrAfter.IsZero() && !now.Add(-skew).Before(cd.NotOnOrAfter) {
			return fmt.Errorf("%w: NotOnOrAfter %s", saml.ErrExpired, cd.NotOnOrAfter)
		}
	}
	if a.Subject != nil {
		for _, sc := range a.Subject.SubjectConfirmations {
			if d := sc.SubjectConfirmationData; d != nil && !d.NotOnOrAfter.IsZero() && !now.Add(-skew).Before(d.NotOnOrAfter) {
				return fmt.Errorf("%w: SubjectConfirmationData NotOnOrAfter %s", saml.ErrExpired, d.NotOnOrAfter)
			}
		}
	}
	return nil
}

// identity maps the checked assertion to the person by the connector's attributes.
func (c *Connector) identity(a *saml.Assertion) (*upstream.Identity, error) {
	attrs := c.cfg.SAML.Attributes
	id := &upstream.Identity{Issuer: c.idpEntity(a), Logout: principal(a)}
	if a.Subject != nil && a.Subject.NameID != nil {
		if f := a.Subject.NameID.Format; attrs.Subject == "" && f == string(saml.TransientNameIDFormat) {
			return nil, fmt.Errorf("%w: a transient NameID is no stable subject: name an attribute in saml.attributes.subject", upstream.ErrRefused)
		}
		id.Subject = a.Subject.NameID.Value
	}
	if attrs.Subject != "" {
		id.Subject = first(values(a, attrs.Subject))
	}
	if id.Subject == "" || len(id.Subject) > 512 {
		return nil, fmt.Errorf("%w: the assertion has no subject (NameID or %q), or a longer one than 512 bytes", upstream.ErrRefused, attrs.Subject)
	}
	id.Email = strings.TrimSpace(first(values(a, attrs.Email)))
	// SAML says nothing of verification: a connector whose IdP is the organisation's directory is
	// trusted to give the person's own address (trustEmailVerified), as Dex's SAML connector does.
	id.EmailVerified = id.Email != "" && c.cfg.Trusts()
	id.Name = first(values(a, attrs.Name))
	if attrs.Groups != "" {
		id.Groups = values(a, attrs.Groups)
	}
	for _, s := range a.AuthnStatements {
		if s.AuthnContext.AuthnContextClassRef != nil && s.AuthnContext.AuthnContextClassRef.Value != "" {
			id.AMR = append(id.AMR, s.AuthnContext.AuthnContextClassRef.Value)
		}
	}
	return id, nil
}

func (c *Connector) idpEntity(a *saml.Assertion) string {
	return a.Issuer.Value
}

// values are the values of the attribute named name (its Name or FriendlyName).
func values(a *saml.Assertion, name string) []string {
	var out []string
	for _, st := range a.AttributeStatements {
		for _, at := range st.Attributes {
			if at.Name != name && at.FriendlyName != name {
				continue
			}
			for _, v := range at.Values {
				if v.Value != "" {
					out = append(out, v.Value)
				}
			}
		}
	}
	return out
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// Exchange takes (once) the answer the ACS kept for trip s: the person, or the refusal. code and iss
// are not used (the same-site step carries only the state).
func (c *Connector) Exchange(ctx context.Context, s upstream.Start, _, _ string) (*upstream.Identity, error) {
	b, err := c.rdb.GetDel(ctx, answerKey(s.State)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: the IdP's answer did not come, or was taken", upstream.ErrRefused)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	var a answer
	if err := json.Unmarshal(b, &a); err != nil || (a.Identity == nil && a.Refused == "") {
		return nil, fmt.Errorf("%w: the kept answer is unreadable", upstream.ErrRefused)
	}
	if a.Refused != "" {
		return nil, Refusal{Reason: a.Refused}
	}
	return a.Identity, nil
}

// Refusal is Exchange's error for an answer the ACS refused: Reason says why (Reason's words). It is
// an upstream.ErrRefused.
type Refusal struct{ Reason string }

func (r Refusal) Error() string { return "samlsp: the IdP's answer was refused: " + r.Reason }
func (r Refusal) Unwrap() error { return upstream.ErrRefused }

// Reason is a short word for why an answer was refused (the audit trail's and the log's; never shown
// as it is to the person).
func Reason(err error) string {
	for _, r := range []struct {
		err  error
		word string
	}{
		{ErrBinding, "binding"},
		{saml.ErrAssertionReplayed, "replayed"},
		{saml.ErrInvalidSignature, "signature"},
		{saml.ErrUntrustedCertificate, "signature"},
		{saml.ErrCertificateNotValidNow, "certificate"},
		{saml.ErrAudienceMismatch, "audience"},
		{saml.ErrDestinationMismatch, "destination"},
		{saml.ErrRequestIDMismatch, "in_response_to"},
		{saml.ErrIssuerMismatch, "issuer"},
		{saml.ErrExpired, "expired"},
		{saml.ErrNotYetValid, "not_yet_valid"},
		{saml.ErrMalformedMessage, "malformed"},
		{saml.ErrMissingElement, "malformed"},
		{upstream.ErrUnreachable, "unreachable"},
	} {
		if errors.Is(err, r.err) {
			return r.word
		}
	}
	var bad saml.ErrBadStatus
	if errors.As(err, &bad) {
		return "status"
	}
	return "refused"
}

// replayCache remembers each accepted assertion's ID in Redis until it expires (SET NX): a second
// answer with the same assertion is refused on every replica.
type replayCache struct {
	ctx  context.Context
	rdb  redis.UniversalClient
	conn string
	now  time.Time
	err  error // Redis failed (the answer is refused, and the caller says unavailable)
}

func (c *replayCache) Consume(assertionID string, expiresAt time.Time) error {
	sum := sha256.Sum256([]byte(assertionID))
	ttl := max(expiresAt.Sub(c.now), time.Second)
	ok, err := c.rdb.SetNX(c.ctx, "auth:saml:{"+c.conn+"}:assertion:"+hex.EncodeToString(sum[:]), 1, ttl).Result()
	if err != nil {
		c.err = err
		return err
	}
	if !ok {
		return saml.ErrAssertionReplayed
	}
	return nil
}
