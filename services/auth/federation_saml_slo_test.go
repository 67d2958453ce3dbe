package auth_test

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/beevik/etree"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testsaml"
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
func samlMessage(t *testing.T, u, param string) *etree.Element {
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

func TestFederation_SAMLSingleLogout_Refusals(t *testing.T) {
	f := startSAML(t, []testsaml.User{{Login: "ada", Email: testEmail, Name: "Ada"}})
	b := newBrowser(t)
	tk := f.samlSignedIn(b, "ada")
	res := b.get(f.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.IDToken}, "post_logout_redirect_uri": {f.base + "/bye"}}.Encode())
	atIdP := b.get(res.Header.Get("Location"))
	back, _ := url.Parse(atIdP.Header.Get("Location"))
	if !strings.HasPrefix(back.String(), f.base+"/oauth2/saml/corp/slo?") {
		t.Fatalf("the IdP's answer: %d %q", atIdP.StatusCode, back)
	}
	good := back.Query()
	slo := f.base + "/oauth2/saml/corp/slo?"
	for name, q := range map[string]url.Values{
		"unsigned":         {"SAMLResponse": {good.Get("SAMLResponse")}, "RelayState": {good.Get("RelayState")}},
		"another relay":    {"SAMLResponse": {good.Get("SAMLResponse")}, "RelayState": {"nope"}, "SigAlg": {good.Get("SigAlg")}, "Signature": {good.Get("Signature")}},
		"bad signature":    {"SAMLResponse": {good.Get("SAMLResponse")}, "RelayState": {good.Get("RelayState")}, "SigAlg": {good.Get("SigAlg")}, "Signature": {base64.StdEncoding.EncodeToString(make([]byte, 256))}},
		"nothing":          {},
		"both":             {"SAMLResponse": {"x"}, "SAMLRequest": {"y"}},
		"unsigned request": {"SAMLRequest": {good.Get("SAMLResponse")}},
	} {
		if got := newBrowser(t).get(slo + q.Encode()); got.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400\n%.300s", name, got.StatusCode, got.body)
		}
	}
	if got := newBrowser(t).get(f.base + "/oauth2/saml/other/slo?" + good.Encode()); got.StatusCode != http.StatusNotFound {
		t.Errorf("another connector: %d, want 404", got.StatusCode)
	}
	// An answer checked too late: the IssueInstant is stale (the IdP's answer, kept back 10 minutes).
	f.offset.Store(int64(10 * time.Minute))
	if got := newBrowser(t).get(back.String()); got.StatusCode != http.StatusBadRequest {
		t.Errorf("a stale LogoutResponse: %d, want 400", got.StatusCode)
	}
	f.offset.Store(0)
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
	// The same LogoutRequest again: replayed.
	if again := newBrowser(t).get(to); again.StatusCode != http.StatusBadRequest {
		t.Fatalf("a replayed LogoutRequest: %d, want 400", again.StatusCode)
	}
}
