package auth_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/crewjam/saml"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testsaml"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Signing in through a real SAML 2.0 IdP (internal/testsaml: crewjam/saml's samlidp in process, no
// mock), over HTTP as a browser does it: the hosted page's button, the AuthnRequest to the IdP, its
// login page, its signed answer posted to our ACS, the same-site step to /oauth2/callback, and the
// code back to the client (D76).

// samlFederated is a provider with one SAML connector, "corp", offered to the test client, and the
// IdP that has registered us from our metadata URL.
type samlFederated struct {
	*provider
	idp    *testsaml.IdP
	offset atomic.Int64 // added to the service's clock (an injected clock for expiry)
}

func startSAML(t *testing.T, idpUsers []testsaml.User) *samlFederated {
	return startSAMLAt(t, "127.0.0.1", idpUsers)
}

// startSAMLAt is startSAML with the IdP's URLs at host ("localhost": another site than ours).
func startSAMLAt(t *testing.T, idpHost string, idpUsers []testsaml.User) *samlFederated {
	t.Helper()
	f := &samlFederated{}
	f.provider = startProvider(t, setup{now: func() time.Time { return time.Now().Add(time.Duration(f.offset.Load())) }})
	f.idp = testsaml.StartAt(t, idpHost, idpUsers)
	key, cert := testsaml.KeyPair(t)
	yes := true
	c := config.Connector{ID: "corp", Name: "Corp", Type: config.TypeSAML, TrustEmailVerified: &yes, SAML: &config.SAMLConnector{
		MetadataURL: f.idp.MetadataURL, KeyFile: key, CertificateFile: cert,
		Attributes: config.SAMLAttributes{Email: "mail", Name: "cn", Groups: "eduPersonAffiliation"}}}
	f.setConnector(t, c)
	f.idp.RegisterSP(t, "formsservice", f.base+"/oauth2/saml/corp/metadata")
	return f
}

// setConnector makes c the provider's only connector (a reload).
func (f *samlFederated) setConnector(t *testing.T, c config.Connector) {
	t.Helper()
	next := *f.cfg
	next.Auth.Connectors = []config.Connector{c}
	next.Auth.Clients = slices.Clone(f.cfg.Auth.Clients)
	next.Auth.Clients[0].Connectors = []string{c.ID}
	next.ApplyDefaults()
	if err := next.Validate(); err != nil {
		t.Fatal(err)
	}
	f.live.c.Store(&next)
	f.cfg = &next
}

var samlInputRe = regexp.MustCompile(`<input type="hidden" name="(SAMLResponse|RelayState)" value="([^"]*)"`)
var samlActionRe = regexp.MustCompile(`<form method="post" action="([^"]+)" id="SAMLResponseForm">`)

// idpAnswer starts a sign-in at the hosted page in b, chooses the SAML button, signs in at the IdP as
// login, and returns the IdP's answer: the form its page would post to our ACS (not posted yet).
func (f *samlFederated) idpAnswer(b *browser, login string) (acs string, form url.Values) {
	f.t.Helper()
	return f.idpAnswerWith(b, login, oauth2.GenerateVerifier())
}

// postACS posts the IdP's answer to our ACS from b (as the IdP's page does: a cross-site POST, so no
// cookie of ours would go with it in a browser) and, when the ACS sends the browser on, follows to
// the callback in b. It returns the ACS's answer and the callback's (zero when there was none).
func (f *samlFederated) postACS(b *browser, acs string, form url.Values) (atACS, atCallback response) {
	f.t.Helper()
	atACS = b.postForm(acs, form, "Origin", f.idp.URL)
	if atACS.StatusCode != http.StatusSeeOther {
		return atACS, response{}
	}
	loc := atACS.Header.Get("Location")
	if !strings.HasPrefix(loc, f.base+"/oauth2/callback?state=") {
		f.t.Fatalf("the ACS sent the browser to %q", loc)
	}
	return atACS, b.get(loc)
}

// signInVia signs in through the IdP as login in a new browser and returns the callback's answer.
func (f *samlFederated) signInVia(login string) response {
	f.t.Helper()
	b := newBrowser(f.t)
	acs, form := f.idpAnswer(b, login)
	_, res := f.postACS(b, acs, form)
	return res
}

// tokensVia signs in through the IdP as login and returns the client's tokens.
func (f *samlFederated) tokensVia(login string) tokens {
	f.t.Helper()
	b := newBrowser(f.t)
	verifier := oauth2.GenerateVerifier()
	acs, form := f.idpAnswerWith(b, login, verifier)
	_, res := f.postACS(b, acs, form)
	code, _ := codeFrom(f.t, res, f.redirect)
	tk := f.exchange(code, verifier)
	if tk.status != http.StatusOK {
		f.t.Fatalf("exchange: %d %s", tk.status, tk.Error)
	}
	return tk
}

func (f *samlFederated) idpAnswerWith(b *browser, login, verifier string) (string, url.Values) {
	f.t.Helper()
	page := b.get(f.authorizeURL("state-0123456789", verifier))
	if page.StatusCode != http.StatusOK {
		f.t.Fatalf("authorize page: %d\n%.500s", page.StatusCode, page.body)
	}
	start := b.get(f.base + connectorLink(f.t, page.body, "corp"))
	if start.StatusCode != http.StatusSeeOther || !strings.HasPrefix(start.Header.Get("Location"), f.idp.URL+"/sso?") {
		f.t.Fatalf("the button: %d %s, want a redirect to the IdP\n%.500s", start.StatusCode, start.Header.Get("Location"), start.body)
	}
	next := b.get(start.Header.Get("Location"))
	if next.StatusCode == http.StatusOK && strings.Contains(next.body, "SAMLResponseForm") {
		// The IdP knows this browser already (its session cookie): it answers at once.
		return f.answerForm(next)
	}
	fields := url.Values{"user": {login}, "password": {testsaml.Password}}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)"`).FindAllStringSubmatch(next.body, -1) {
		fields.Set(m[1], html.UnescapeString(m[2]))
	}
	action := regexp.MustCompile(`<form method="post" action="([^"]+)"`).FindStringSubmatch(next.body)
	if action == nil {
		f.t.Fatalf("the IdP's login page: %d\n%.800s", next.StatusCode, next.body)
	}
	u, _ := next.Request.URL.Parse(html.UnescapeString(action[1]))
	return f.answerForm(b.postForm(u.String(), fields))
}

func (f *samlFederated) answerForm(answer response) (string, url.Values) {
	f.t.Helper()
	m := samlActionRe.FindStringSubmatch(answer.body)
	if answer.StatusCode != http.StatusOK || m == nil {
		f.t.Fatalf("the IdP's answer: %d\n%.800s", answer.StatusCode, answer.body)
	}
	form := url.Values{}
	for _, in := range samlInputRe.FindAllStringSubmatch(answer.body, -1) {
		form.Set(in[1], html.UnescapeString(in[2]))
	}
	return html.UnescapeString(m[1]), form
}

// stripSignatures removes every XML signature from the answer's SAMLResponse: an unsigned answer.
func stripSignatures(t *testing.T, form url.Values) url.Values {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(form.Get("SAMLResponse"))
	if err != nil {
		t.Fatal(err)
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sig := range doc.FindElements("//Signature") {
		sig.Parent().RemoveChild(sig)
		n++
	}
	if n == 0 {
		t.Fatal("the IdP's answer carried no signature to strip")
	}
	out, _ := doc.WriteToBytes()
	if bytes.Contains(out, []byte("SignatureValue")) {
		t.Fatal("a signature is left")
	}
	next := url.Values{"RelayState": {form.Get("RelayState")}, "SAMLResponse": {base64.StdEncoding.EncodeToString(out)}}
	return next
}

func TestFederation_SAML(t *testing.T) {
	f := startSAML(t, []testsaml.User{
		{Login: "newcomer", Email: "newcomer@example.com", Name: "New Comer", Groups: []string{"staff", "sales"}},
		{Login: "ada", Email: testEmail, Name: "Ada at the IdP"},
		{Login: "owner", Email: "owner@example.com", Name: "Not linked"},
	})
	ctx := context.Background()
	us := f.svc.Users()

	t.Run("our metadata names our entity ID, our ACS and our certificate", func(t *testing.T) {
		res := newBrowser(t).get(f.base + "/oauth2/saml/corp/metadata")
		for _, want := range []string{`entityID="` + f.base + `/oauth2/saml/corp/metadata"`, `Location="` + f.base + `/oauth2/saml/corp/acs"`,
			`WantAssertionsSigned="true"`, "X509Certificate", saml.HTTPPostBinding} {
			if res.StatusCode != http.StatusOK || !strings.Contains(res.body, want) {
				t.Fatalf("metadata: %d, no %q in\n%.1500s", res.StatusCode, want, res.body)
			}
		}
		if other := newBrowser(t).get(f.base + "/oauth2/saml/nope/metadata"); other.StatusCode != http.StatusNotFound {
			t.Fatalf("an unknown connector's metadata: %d, want 404", other.StatusCode)
		}
	})

	t.Run("a new person gets an account just in time, linked, with the IdP's groups", func(t *testing.T) {
		tk := f.tokensVia("newcomer")
		c := idClaims(t, tk.IDToken)
		u, err := us.ByEmail(ctx, "newcomer@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if c["sub"] != u.ID || !u.EmailVerified || u.Name != "New Comer" || u.Hash != "" {
			t.Fatalf("claims %v, account %+v", c, u)
		}
		if !slices.Equal(u.Groups, []string{"corp:sales", "corp:staff"}) {
			t.Fatalf("groups %v, want [corp:sales corp:staff]", u.Groups)
		}
		if amr, _ := c["amr"].([]any); len(amr) != 1 || amr[0] != "fed" {
			t.Fatalf("amr %v, want [fed]", c["amr"])
		}
		ids, err := us.Identities(ctx, u.ID)
		if err != nil || len(ids) != 1 || ids[0].Connector != "corp" || ids[0].Subject != "newcomer@example.com" {
			t.Fatalf("identities %+v, %v", ids, err)
		}
		// The audit trail names the connector and how the account was found.
		if !slices.ContainsFunc(trail(t, f.provider), func(e audit.Event) bool {
			return e.Kind == audit.SignInConnector && e.Outcome == audit.Success && e.User == u.ID && e.Detail["connector"] == "corp" && e.Detail["account"] == "created"
		}) {
			t.Fatal("no signin.connector event for corp, account created")
		}
		// The next sign-in finds the link: the same account.
		if again := idClaims(t, f.tokensVia("newcomer").IDToken); again["sub"] != u.ID {
			t.Fatalf("second sign-in is %v, want %s", again["sub"], u.ID)
		}
	})

	t.Run("the IdP's address links the existing account when the connector trusts it", func(t *testing.T) {
		id := f.user(testEmail, testPassword)
		if c := idClaims(t, f.tokensVia("ada").IDToken); c["sub"] != id {
			t.Fatalf("signed in as %v, want the existing account %s", c["sub"], id)
		}
		if u, err := us.ByIdentity(ctx, "corp", testEmail); err != nil || u.ID != id {
			t.Fatalf("identity links to %+v, %v", u, err)
		}
	})

	t.Run("without trustEmailVerified an existing account is not linked: 409", func(t *testing.T) {
		owner := f.user("owner@example.com", testPassword)
		before := *f.cfg
		c := f.cfg.Auth.Connectors[0]
		no := false
		c.TrustEmailVerified = &no
		f.setConnector(t, c)
		defer func() { f.live.c.Store(&before); f.cfg = &before }()
		res := f.signInVia("owner")
		if res.StatusCode != http.StatusConflict || !strings.Contains(html.UnescapeString(res.body), "link Corp on your account page") {
			t.Fatalf("want 409 and the way to link, got %d\n%.800s", res.StatusCode, res.body)
		}
		if ids, _ := us.Identities(ctx, owner); len(ids) != 0 {
			t.Fatalf("the owner's account has identities %+v", ids)
		}
	})

	refused := func(t *testing.T, res response) {
		t.Helper()
		if res.StatusCode != http.StatusBadGateway || !strings.Contains(res.body, "did not work") || strings.Contains(res.Header.Get("Location"), "code=") {
			t.Fatalf("want the sign-in page saying it did not work (502), got %d %s\n%.600s", res.StatusCode, res.Header.Get("Location"), res.body)
		}
	}

	t.Run("an unsigned answer is refused; a signed unencrypted one is taken", func(t *testing.T) {
		// The IdP's assertions are encrypted to our certificate (our metadata offers it); without it
		// they come in plain text, signed, and the test can strip the signatures.
		metadata := f.base + "/oauth2/saml/corp/metadata"
		f.idp.RegisterSPPlaintext(t, "formsservice", metadata)
		defer f.idp.RegisterSP(t, "formsservice", metadata)
		b := newBrowser(t)
		acs, form := f.idpAnswer(b, "newcomer")
		if raw, _ := base64.StdEncoding.DecodeString(form.Get("SAMLResponse")); bytes.Contains(raw, []byte("EncryptedAssertion")) {
			t.Fatal("the IdP still encrypts")
		}
		_, res := f.postACS(b, acs, stripSignatures(t, form))
		refused(t, res)
		b = newBrowser(t)
		acs, form = f.idpAnswer(b, "newcomer")
		if _, res := f.postACS(b, acs, form); res.StatusCode != http.StatusSeeOther || !strings.Contains(res.Header.Get("Location"), "code=") {
			t.Fatalf("a signed plain-text answer: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
	})

	t.Run("an answer for another audience is refused", func(t *testing.T) {
		f.idp.Tamper(func(a *saml.Assertion) {
			a.Conditions.AudienceRestrictions = []saml.AudienceRestriction{{Audience: saml.Audience{Value: "https://other-sp.example.com"}}}
		})
		defer f.idp.Tamper(nil)
		b := newBrowser(t)
		acs, form := f.idpAnswer(b, "newcomer")
		_, res := f.postACS(b, acs, form)
		refused(t, res)
	})

	t.Run("an answer to another AuthnRequest is refused", func(t *testing.T) {
		f.idp.Tamper(func(a *saml.Assertion) {
			for i := range a.Subject.SubjectConfirmations {
				a.Subject.SubjectConfirmations[i].SubjectConfirmationData.InResponseTo = "id-someone-elses-request"
			}
		})
		defer f.idp.Tamper(nil)
		b := newBrowser(t)
		acs, form := f.idpAnswer(b, "newcomer")
		_, res := f.postACS(b, acs, form)
		refused(t, res)
	})

	t.Run("an expired answer is refused", func(t *testing.T) {
		b := newBrowser(t)
		acs, form := f.idpAnswer(b, "newcomer")
		f.offset.Store(int64(5 * time.Minute)) // it arrives five minutes later by our clock
		defer f.offset.Store(0)
		_, res := f.postACS(b, acs, form)
		refused(t, res)
	})

	t.Run("an answer is taken once: posted again, it is refused", func(t *testing.T) {
		b := newBrowser(t)
		acs, form := f.idpAnswer(b, "newcomer")
		first, _ := f.postACS(b, acs, form)
		if first.StatusCode != http.StatusSeeOther {
			t.Fatalf("first post: %d", first.StatusCode)
		}
		again, _ := f.postACS(newBrowser(t), acs, form)
		if again.StatusCode != http.StatusBadRequest || !strings.Contains(again.body, "cannot go on") {
			t.Fatalf("the same answer again: %d\n%.500s", again.StatusCode, again.body)
		}
	})

	t.Run("an answer no sign-in here asked for (IdP-initiated) is refused", func(t *testing.T) {
		b := newBrowser(t)
		acs, form := f.idpAnswer(b, "newcomer")
		form.Del("RelayState")
		res, _ := f.postACS(b, acs, form)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, "start signing in from the app") {
			t.Fatalf("an unsolicited answer: %d\n%.500s", res.StatusCode, res.body)
		}
		req, _ := http.NewRequest(http.MethodPost, acs, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept-Language", "de")
		if de := newBrowser(t).do(req); !strings.Contains(de.body, "Bitte beginnen Sie die Anmeldung in der App") {
			t.Fatalf("the German page: %d\n%.500s", de.StatusCode, de.body)
		}
	})

	t.Run("another browser's answer goes no further than the ACS", func(t *testing.T) {
		acs, form := f.idpAnswer(newBrowser(t), "newcomer")
		_, res := f.postACS(newBrowser(t), acs, form) // an attacker's answer, pushed into a victim's browser
		if res.StatusCode != http.StatusBadRequest || strings.Contains(res.Header.Get("Location"), "code=") {
			t.Fatalf("another browser's answer: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
	})

	t.Run("garbage at the ACS is a clear 400, never a 500", func(t *testing.T) {
		b := newBrowser(t)
		acs, form := f.idpAnswer(b, "newcomer")
		form.Set("SAMLResponse", "not base64 at all <xml>")
		_, res := f.postACS(b, acs, form)
		refused(t, res)
		for _, body := range []url.Values{{}, {"RelayState": {"x"}}, {"SAMLResponse": {"PD94"}, "RelayState": {strings.Repeat("r", 500)}}} {
			if res := newBrowser(t).postForm(acs, body); res.StatusCode != http.StatusBadRequest {
				t.Fatalf("%v: %d", body, res.StatusCode)
			}
		}
		if res := newBrowser(t).postForm(f.base+"/oauth2/saml/nope/acs", form); res.StatusCode != http.StatusNotFound {
			t.Fatalf("an unknown connector's ACS: %d", res.StatusCode)
		}
	})

	t.Run("a disabled account cannot sign in through the IdP", func(t *testing.T) {
		if _, err := us.SetDisabled(ctx, "newcomer@example.com", true); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = us.SetDisabled(ctx, "newcomer@example.com", false) }()
		res := f.signInVia("newcomer")
		if res.StatusCode != http.StatusForbidden || strings.Contains(res.Header.Get("Location"), "code=") {
			t.Fatalf("want 403 for a disabled account, got %d %s", res.StatusCode, res.Header.Get("Location"))
		}
	})

	t.Run("requireMFA still applies", func(t *testing.T) {
		before := *f.cfg
		next := *f.cfg
		next.Auth.Clients = slices.Clone(f.cfg.Auth.Clients)
		next.Auth.Clients[0].RequireMFA = true
		f.live.c.Store(&next)
		defer f.live.c.Store(&before)
		res := f.signInVia("newcomer")
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/account/totp?") {
			t.Fatalf("want the set-up of a second factor, got %d %s", res.StatusCode, loc)
		}
	})

	if _, err := us.ByIdentity(ctx, "corp", "owner@example.com"); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("owner was linked: %v", err)
	}
}
