package auth_test

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/crewjam/saml"
	dsig "github.com/russellhaering/goxmldsig"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testsaml"
	"github.com/formsservice/formsservice/services/auth/audit"
)

// SAML single logout against the real crewjam IdP (D89): our LogoutRequest when the person logs out
// here and the IdP's answer at our SLO endpoint; the IdP's own LogoutRequest, which ends our sessions;
// and every refusal.

// samlSignedIn signs in through the IdP as login in b and returns the client's tokens.
func (f *samlFederated) samlSignedIn(b *browser, login string) tokens {
	f.t.Helper()
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

// samlMessage is the XML of the HTTP-Redirect binding's SAMLRequest or SAMLResponse in u.
func samlMessage(t testing.TB, u, param string) *etree.Element {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(pu.Query().Get(param))
	if err != nil {
		t.Fatalf("%s: %v", param, err)
	}
	b, err := io.ReadAll(flate.NewReader(bytes.NewReader(raw)))
	if err != nil {
		t.Fatal(err)
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(b); err != nil {
		t.Fatal(err)
	}
	return doc.Root()
}

func TestFederation_SAMLSingleLogout_SPInitiated(t *testing.T) {
	f := startSAML(t, []testsaml.User{{Login: "ada", Email: testEmail, Name: "Ada"}})
	md := newBrowser(t).get(f.base + "/oauth2/saml/corp/metadata")
	if !strings.Contains(md.body, `SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="`+f.base+`/oauth2/saml/corp/slo"`) {
		t.Fatalf("our metadata names no SingleLogoutService:\n%s", md.body)
	}
	b := newBrowser(t)
	tk := f.samlSignedIn(b, "ada")

	res := b.get(f.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.IDToken}, "post_logout_redirect_uri": {f.base + "/bye"}, "state": {"st-1"}}.Encode())
	to := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(to, f.idp.URL+"/slo?") {
		t.Fatalf("logout: %d %q, want a redirect to the IdP's SLO", res.StatusCode, to)
	}
	q, _ := url.Parse(to)
	if q.Query().Get("Signature") == "" || q.Query().Get("SigAlg") == "" || q.Query().Get("RelayState") == "" {
		t.Fatalf("the LogoutRequest is not signed, or has no RelayState: %s", to)
	}
	req := samlMessage(t, to, "SAMLRequest")
	if nid := req.FindElement("./NameID"); nid == nil || nid.Text() != testEmail {
		t.Fatalf("the LogoutRequest names no NameID %q", testEmail)
	}
	if si := req.FindElement("./SessionIndex"); si == nil || si.Text() == "" {
		t.Fatal("the LogoutRequest has no SessionIndex")
	}
	// Our session ended before the IdP was asked: the refresh token is revoked already.
	if rt := f.refresh(tk.RefreshToken); rt.status == http.StatusOK {
		t.Fatal("the grant survived the logout")
	}

	atIdP := b.get(to)
	back := atIdP.Header.Get("Location")
	if atIdP.StatusCode/100 != 3 || !strings.HasPrefix(back, f.base+"/oauth2/saml/corp/slo?") {
		t.Fatalf("the IdP's answer: %d %q\n%.500s", atIdP.StatusCode, back, atIdP.body)
	}
	done := b.get(back)
	if done.StatusCode != http.StatusSeeOther || done.Header.Get("Location") != f.base+"/bye?state=st-1" {
		t.Fatalf("after the IdP's LogoutResponse: %d %q\n%.500s", done.StatusCode, done.Header.Get("Location"), done.body)
	}
	// The IdP's session ended too: a new sign-in asks for the password again.
	page := b.get(f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
	start := b.get(f.base + connectorLink(t, page.body, "corp"))
	if idp := b.get(start.Header.Get("Location")); strings.Contains(idp.body, "SAMLResponseForm") || !strings.Contains(idp.body, `name="password"`) {
		t.Fatalf("the IdP's session survived the single logout:\n%.500s", idp.body)
	}

	// The LogoutResponse once more: its pending logout was taken.
	if again := b.get(back); again.StatusCode != http.StatusBadRequest {
		t.Fatalf("a replayed LogoutResponse: %d, want 400", again.StatusCode)
	}
}

// forger makes the IdP's logout messages with chosen fields, signed (HTTP-Redirect query signature)
// by key, or unsigned without one: crewjam's own SP code, its "IdP metadata" naming dest as the
// SingleLogoutService, so that the messages go to dest from issuer at the time at.
func (f *samlFederated) forger(key crypto.Signer, cert *x509.Certificate, issuer, dest string, at time.Time) *saml.ServiceProvider {
	sp := &saml.ServiceProvider{Key: key, Certificate: cert, EntityID: issuer, Clock: dsig.NewFakeClockAt(at),
		IDPMetadata: &saml.EntityDescriptor{IDPSSODescriptors: []saml.IDPSSODescriptor{{SSODescriptor: saml.SSODescriptor{
			SingleLogoutServices: []saml.Endpoint{{Binding: saml.HTTPRedirectBinding, Location: dest}}}}}}}
	if key != nil {
		sp.SignatureMethod = dsig.RSASHA256SignatureMethod
	}
	return sp
}

// to is u's query at our SLO endpoint (the forged message's Destination may name another place).
func (f *samlFederated) toSLO(u *url.URL) string {
	return f.base + "/oauth2/saml/corp/slo?" + u.RawQuery
}

// pendingSAMLLogout signs in as ada in a new browser and logs out: our LogoutRequest's RelayState and
// ID, waiting for the IdP's answer.
func (f *samlFederated) pendingSAMLLogout() (relay, requestID string) {
	f.t.Helper()
	b := newBrowser(f.t)
	tk := f.samlSignedIn(b, "ada")
	res := b.get(f.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.IDToken}, "post_logout_redirect_uri": {f.base + "/bye"}}.Encode())
	to, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || to.Query().Get("RelayState") == "" {
		f.t.Fatalf("logout: %d %q", res.StatusCode, to)
	}
	return to.Query().Get("RelayState"), samlMessage(f.t, to.String(), "SAMLRequest").SelectAttrValue("ID", "")
}

func otherKey(t testing.TB) (crypto.Signer, *x509.Certificate) {
	t.Helper()
	kf, cf := testsaml.KeyPair(t)
	pair, err := tls.LoadX509KeyPair(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	return pair.PrivateKey.(crypto.Signer), pair.Leaf
}

// Every LogoutResponse that fails a check is refused (400) and leads nowhere; the one that passes
// them all continues the logout.
func TestFederation_SAMLSingleLogout_ResponseRefusals(t *testing.T) {
	f := startSAML(t, []testsaml.User{{Login: "ada", Email: testEmail, Name: "Ada"}})
	idpKey := f.idp.Server.IDP.Key.(crypto.Signer)
	idpCert := f.idp.Server.IDP.Certificate
	issuer := f.idp.Server.IDP.MetadataURL.String()
	ours := f.base + "/oauth2/saml/corp/slo"
	key, cert := otherKey(t)
	success := saml.Status{StatusCode: saml.StatusCode{Value: saml.StatusSuccess}}
	for _, c := range []struct {
		name string
		make func(relay, id string) string
	}{
		{"unsigned", func(relay, id string) string {
			u, _ := f.forger(nil, nil, issuer, ours, time.Now()).MakeRedirectLogoutResponseWithStatus(id, relay, success)
			return f.toSLO(u)
		}},
		{"signed by another key", func(relay, id string) string {
			u, _ := f.forger(key, cert, issuer, ours, time.Now()).MakeRedirectLogoutResponseWithStatus(id, relay, success)
			return f.toSLO(u)
		}},
		{"wrong issuer", func(relay, id string) string {
			u, _ := f.forger(idpKey, idpCert, "https://evil.example/idp", ours, time.Now()).MakeRedirectLogoutResponseWithStatus(id, relay, success)
			return f.toSLO(u)
		}},
		{"wrong destination", func(relay, id string) string {
			u, _ := f.forger(idpKey, idpCert, issuer, f.base+"/oauth2/saml/other/slo", time.Now()).MakeRedirectLogoutResponseWithStatus(id, relay, success)
			return f.toSLO(u)
		}},
		{"wrong InResponseTo", func(relay, _ string) string {
			u, _ := f.forger(idpKey, idpCert, issuer, ours, time.Now()).MakeRedirectLogoutResponseWithStatus("id-another-request", relay, success)
			return f.toSLO(u)
		}},
		{"stale IssueInstant", func(relay, id string) string {
			u, _ := f.forger(idpKey, idpCert, issuer, ours, time.Now().Add(-10*time.Minute)).MakeRedirectLogoutResponseWithStatus(id, relay, success)
			return f.toSLO(u)
		}},
		{"not Success", func(relay, id string) string {
			u, _ := f.forger(idpKey, idpCert, issuer, ours, time.Now()).MakeRedirectLogoutResponseWithStatus(id, relay, saml.Status{StatusCode: saml.StatusCode{Value: saml.StatusResponder}})
			return f.toSLO(u)
		}},
		{"unknown RelayState", func(_, id string) string {
			u, _ := f.forger(idpKey, idpCert, issuer, ours, time.Now()).MakeRedirectLogoutResponseWithStatus(id, "not-a-pending-logout", success)
			return f.toSLO(u)
		}},
	} {
		relay, id := f.pendingSAMLLogout()
		if got := newBrowser(t).get(c.make(relay, id)); got.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400\n%.300s", c.name, got.StatusCode, got.body)
		}
	}
	for name, q := range map[string]string{"nothing": "", "both": "SAMLResponse=x&SAMLRequest=y", "twice": "SAMLResponse=x&SAMLResponse=y", "not base64": "SAMLResponse=%25%25&RelayState=x",
		"a RelayState longer than 80 bytes": "SAMLRequest=x&RelayState=" + strings.Repeat("r", 81)} {
		if got := newBrowser(t).get(ours + "?" + q); got.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, got.StatusCode)
		}
	}
	if got := newBrowser(t).get(f.base + "/oauth2/saml/other/slo?SAMLResponse=x"); got.StatusCode != http.StatusNotFound {
		t.Errorf("another connector: %d, want 404", got.StatusCode)
	}
	// The control: the same message, correct in every field, continues the logout.
	relay, id := f.pendingSAMLLogout()
	u, err := f.forger(idpKey, idpCert, issuer, ours, time.Now()).MakeRedirectLogoutResponseWithStatus(id, relay, success)
	if err != nil {
		t.Fatal(err)
	}
	if got := newBrowser(t).get(f.toSLO(u)); got.StatusCode != http.StatusSeeOther || got.Header.Get("Location") != f.base+"/bye" {
		t.Fatalf("a good LogoutResponse: %d %q\n%.300s", got.StatusCode, got.Header.Get("Location"), got.body)
	}
}

// Every LogoutRequest from the "IdP" that fails a check is refused (400) and ends no session; the one
// that passes them all ends the person's, once.
func TestFederation_SAMLSingleLogout_RequestRefusals(t *testing.T) {
	f := startSAML(t, []testsaml.User{{Login: "ada", Email: testEmail, Name: "Ada"}})
	tk := f.samlSignedIn(newBrowser(t), "ada")
	idpKey := f.idp.Server.IDP.Key.(crypto.Signer)
	idpCert := f.idp.Server.IDP.Certificate
	issuer := f.idp.Server.IDP.MetadataURL.String()
	ours := f.base + "/oauth2/saml/corp/slo"
	key, cert := otherKey(t)
	request := func(sp *saml.ServiceProvider, dest string, edit func(*saml.LogoutRequest)) string {
		t.Helper()
		req, err := sp.MakeLogoutRequest(dest, testEmail)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(req)
		}
		u, err := sp.RedirectLogoutRequestURL(req, "relay-1")
		if err != nil {
			t.Fatal(err)
		}
		return f.toSLO(u)
	}
	for name, u := range map[string]string{
		"unsigned":               request(f.forger(nil, nil, issuer, ours, time.Now()), ours, nil),
		"signed by another key":  request(f.forger(key, cert, issuer, ours, time.Now()), ours, nil),
		"wrong issuer":           request(f.forger(idpKey, idpCert, "https://evil.example/idp", ours, time.Now()), ours, nil),
		"wrong destination":      request(f.forger(idpKey, idpCert, issuer, ours, time.Now()), f.base+"/oauth2/saml/other/slo", nil),
		"stale IssueInstant":     request(f.forger(idpKey, idpCert, issuer, ours, time.Now().Add(-10*time.Minute)), ours, nil),
		"IssueInstant too early": request(f.forger(idpKey, idpCert, issuer, ours, time.Now().Add(2*time.Minute)), ours, nil),
		"expired":                request(f.forger(idpKey, idpCert, issuer, ours, time.Now()), ours, func(r *saml.LogoutRequest) { past := time.Now().Add(-5 * time.Minute); r.NotOnOrAfter = &past }),
	} {
		if got := newBrowser(t).get(u); got.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400\n%.300s", name, got.StatusCode, got.body)
		}
	}
	if rt := f.refresh(tk.RefreshToken); rt.status != http.StatusOK {
		t.Fatalf("a refused LogoutRequest ended the grant: %d %s", rt.status, rt.Error)
	} else {
		tk = rt
	}
	// Another SessionIndex than the sign-in's: nothing of ours ends.
	other := request(f.forger(idpKey, idpCert, issuer, ours, time.Now()), ours, func(r *saml.LogoutRequest) {
		saml.WithSessionIndex("not-this-session")(r)
	})
	if got := newBrowser(t).get(other); got.StatusCode != http.StatusSeeOther {
		t.Fatalf("a LogoutRequest for another IdP session: %d", got.StatusCode)
	}
	if rt := f.refresh(tk.RefreshToken); rt.status != http.StatusOK {
		t.Fatalf("a LogoutRequest for another IdP session ended the grant: %d %s", rt.status, rt.Error)
	} else {
		tk = rt
	}
	good := request(f.forger(idpKey, idpCert, issuer, ours, time.Now()), ours, nil)
	got := newBrowser(t).get(good)
	if got.StatusCode != http.StatusSeeOther || !strings.HasPrefix(got.Header.Get("Location"), f.idp.URL+"/slo?") {
		t.Fatalf("a good LogoutRequest: %d %q\n%.300s", got.StatusCode, got.Header.Get("Location"), got.body)
	}
	if rt := f.refresh(tk.RefreshToken); rt.status == http.StatusOK {
		t.Fatal("the grant survived the IdP's LogoutRequest")
	}
	if again := newBrowser(t).get(good); again.StatusCode != http.StatusBadRequest {
		t.Fatalf("a replayed LogoutRequest: %d, want 400", again.StatusCode)
	}
}

func TestFederation_SAMLSingleLogout_IdPInitiated(t *testing.T) {
	f := startSAML(t, []testsaml.User{{Login: "ada", Email: testEmail, Name: "Ada"}, {Login: "bob", Email: "bob@example.com", Name: "Bob"}})
	b := newBrowser(t)
	tk := f.samlSignedIn(b, "ada")
	other := f.samlSignedIn(newBrowser(t), "bob")

	// The person logs out at the IdP: it sends our SLO its LogoutRequest through the browser.
	res := b.get(f.idp.URL + "/logout")
	to := res.Header.Get("Location")
	if res.StatusCode/100 != 3 || !strings.HasPrefix(to, f.base+"/oauth2/saml/corp/slo?") {
		t.Fatalf("the IdP's logout: %d %q\n%.500s", res.StatusCode, to, res.body)
	}
	ours := b.get(to)
	answer := ours.Header.Get("Location")
	if ours.StatusCode != http.StatusSeeOther || !strings.HasPrefix(answer, f.idp.URL+"/slo?") {
		t.Fatalf("our SLO: %d %q\n%.500s", ours.StatusCode, answer, ours.body)
	}
	if u, _ := url.Parse(answer); u.Query().Get("Signature") == "" {
		t.Fatal("our LogoutResponse is not signed")
	}
	if st := samlMessage(t, answer, "SAMLResponse").FindElement("./Status/StatusCode"); st == nil || !strings.HasSuffix(st.SelectAttrValue("Value", ""), ":Success") {
		t.Fatal("our LogoutResponse is no Success")
	}
	if rt := f.refresh(tk.RefreshToken); rt.status == http.StatusOK {
		t.Fatal("the person's grant survived the IdP's logout")
	}
	if rt := f.refresh(other.RefreshToken); rt.status != http.StatusOK {
		t.Fatalf("another person's grant ended: %d %s", rt.status, rt.Error)
	}
	if fin := b.get(answer); fin.StatusCode != http.StatusOK {
		t.Fatalf("the IdP took our LogoutResponse: %d\n%.500s", fin.StatusCode, fin.body)
	}
	ada, err := f.svc.Users().ByEmail(context.Background(), testEmail)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(trail(t, f.provider), func(e audit.Event) bool {
		return e.Kind == audit.Logout && e.Outcome == audit.Success && e.User == ada.ID && e.Detail["initiator"] == "idp" && e.Detail["connector"] == "corp"
	}) {
		t.Error("no logout event for the person the IdP signed out")
	}
	// The same LogoutRequest again: replayed.
	if again := newBrowser(t).get(to); again.StatusCode != http.StatusBadRequest {
		t.Fatalf("a replayed LogoutRequest: %d, want 400", again.StatusCode)
	}
}

// With singleLogout: false, or an IdP whose metadata names no SingleLogoutService, logout ends here as
// it always did: straight to the client, the IdP's session untouched; our metadata names no SLO
// when it is off, and our SLO endpoint answers 404.
func TestFederation_SAMLSingleLogout_OffOrNotOffered(t *testing.T) {
	f := startSAML(t, []testsaml.User{{Login: "ada", Email: testEmail, Name: "Ada"}})
	logsOutHere := func(name string) {
		t.Helper()
		b := newBrowser(t)
		tk := f.samlSignedIn(b, "ada")
		res := b.get(f.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.IDToken}, "post_logout_redirect_uri": {f.base + "/bye"}, "state": {"s"}}.Encode())
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != f.base+"/bye?state=s" {
			t.Fatalf("%s: logout %d %q, want the client's return address", name, res.StatusCode, res.Header.Get("Location"))
		}
		if rt := f.refresh(tk.RefreshToken); rt.status == http.StatusOK {
			t.Fatalf("%s: the grant survived the logout", name)
		}
	}

	// An IdP whose metadata names no SingleLogoutService (the metadata as a file, its SLO taken out).
	md := newBrowser(t).get(f.idp.MetadataURL)
	doc := etree.NewDocument()
	if err := doc.ReadFromString(md.body); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range doc.FindElements("//SingleLogoutService") {
		e.Parent().RemoveChild(e)
		n++
	}
	if n == 0 {
		t.Fatal("the IdP's metadata names no SingleLogoutService to take out")
	}
	file := filepath.Join(t.TempDir(), "idp.xml")
	if err := doc.WriteToFile(file); err != nil {
		t.Fatal(err)
	}
	c := f.cfg.Auth.Connectors[0]
	s := *c.SAML
	s.MetadataURL, s.MetadataFile = "", file
	c.SAML = &s
	f.setConnector(t, c)
	logsOutHere("no SLO at the IdP")

	// singleLogout: false.
	off := false
	s.MetadataURL, s.MetadataFile, s.SingleLogout = f.idp.MetadataURL, "", &off
	c.SAML = &s
	f.setConnector(t, c)
	logsOutHere("singleLogout: false")
	if md := newBrowser(t).get(f.base + "/oauth2/saml/corp/metadata"); strings.Contains(md.body, "SingleLogoutService") {
		t.Fatalf("our metadata names a SingleLogoutService with singleLogout: false:\n%s", md.body)
	}
	if got := newBrowser(t).get(f.base + "/oauth2/saml/corp/slo?SAMLRequest=x"); got.StatusCode != http.StatusNotFound {
		t.Fatalf("our SLO with singleLogout: false: %d, want 404", got.StatusCode)
	}
}

// "Sign out" of this browser on the account page goes on at the IdP too, and its answer shows our
// signed-out page (D89).
func TestFederation_SAMLSingleLogout_FromTheAccountPage(t *testing.T) {
	f := startSAML(t, []testsaml.User{{Login: "ada", Email: testEmail, Name: "Ada"}})
	b := newBrowser(t)
	tk := f.samlSignedIn(b, "ada")
	acct := b.follow(f.base, f.base+"/account")
	sum := sha256.Sum256([]byte(sessionCookieValue(b, f.base)))
	current := base64.RawURLEncoding.EncodeToString(sum[:])
	if acct.StatusCode != http.StatusOK || !strings.Contains(acct.body, `name="session" value="`+current+`"`) {
		t.Fatalf("the account page: %d\n%.500s", acct.StatusCode, acct.body)
	}
	csrf := forms(t, f.base, acct.body)[0].fields.Get("csrf_token")
	res := b.postForm(f.base+"/account/sessions/end", url.Values{"session": {current}, "csrf_token": {csrf}})
	to := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(to, f.idp.URL+"/slo?") {
		t.Fatalf("signing this browser out: %d %q, want the IdP's SLO", res.StatusCode, to)
	}
	if rt := f.refresh(tk.RefreshToken); rt.status == http.StatusOK {
		t.Fatal("the grant survived the sign-out")
	}
	back := b.get(to).Header.Get("Location")
	if done := b.get(back); done.StatusCode != http.StatusOK || !strings.Contains(done.body, "You are signed out") {
		t.Fatalf("after the IdP's answer: %d\n%.500s", done.StatusCode, done.body)
	}
}
