package samlsp_test

import (
	"context"
	"encoding/base64"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewjam/saml"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testsaml"
	"github.com/formsservice/formsservice/services/auth/samlsp"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// sp is our SP for a real IdP (internal/testsaml), its metadata served at its URL so the IdP can
// register it, on a real Redis.
type sp struct {
	conn *samlsp.Connector
	idp  *testsaml.IdP
	rdb  redis.UniversalClient
}

func startSP(t testing.TB, now func() time.Time, mutateIdP func(*testsaml.IdP)) *sp {
	t.Helper()
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	idp := testsaml.Start(t, []testsaml.User{{Login: "ada", Email: "ada@example.com", Name: "Ada", Groups: []string{"staff"}}})
	if mutateIdP != nil {
		mutateIdP(idp)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	key, cert := testsaml.KeyPair(t)
	c := config.Connector{ID: "corp", Type: config.TypeSAML, SAML: &config.SAMLConnector{MetadataURL: idp.MetadataURL, KeyFile: key, CertificateFile: cert,
		Attributes: config.SAMLAttributes{Email: "mail", Name: "cn", Groups: "eduPersonAffiliation"}}}
	cfg := config.Config{PublicURL: issuer, Auth: config.Auth{Connectors: []config.Connector{c}}}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	conn, err := samlsp.New(cfg.Auth.Connectors[0], samlsp.Options{Issuer: issuer, Redis: rdb, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := conn.Metadata()
		if err != nil || r.URL.Path != config.SAMLMetadataPath("corp") {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	idp.RegisterSP(t, "formsservice", issuer+config.SAMLMetadataPath("corp"))
	return &sp{conn: conn, idp: idp, rdb: rdb}
}

var hiddenRe = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)"`)

// answer signs in at the IdP for the AuthnRequest at authURL and returns the form its page posts to
// our ACS.
func answer(t testing.TB, authURL string) url.Values {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	res, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(res)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the IdP's login page: %d %s", res.StatusCode, body)
	}
	fields := url.Values{"user": {"ada"}, "password": {testsaml.Password}}
	for _, m := range hiddenRe.FindAllStringSubmatch(body, -1) {
		fields.Set(m[1], html.UnescapeString(m[2]))
	}
	action := regexp.MustCompile(`<form method="post" action="([^"]+)"`).FindStringSubmatch(body)
	res, err = c.PostForm(html.UnescapeString(action[1]), fields)
	if err != nil {
		t.Fatal(err)
	}
	body = readAll(res)
	form := url.Values{}
	for _, m := range hiddenRe.FindAllStringSubmatch(body, -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if form.Get("SAMLResponse") == "" {
		t.Fatalf("the IdP's answer: %d %s", res.StatusCode, body)
	}
	return form
}

func readAll(res *http.Response) string {
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

func acsRequest(form url.Values) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, "http://sp.invalid/acs", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	_ = r.ParseForm()
	return r
}

// Each assertion is taken once, on every replica: the same answer posted for a second trip (the
// pending request the same, so InResponseTo still matches) is refused by the replay check in Redis.
func TestAccept_AssertionReplayRefused(t *testing.T) {
	s := startSP(t, nil, nil)
	ctx := context.Background()
	start := upstream.NewStart()
	to, err := s.conn.AuthURL(ctx, start, nil)
	if err != nil {
		t.Fatal(err)
	}
	form := answer(t, to)
	if err := s.conn.Accept(ctx, acsRequest(form), samlsp.RequestID(start.Nonce), "state-one"); err != nil {
		t.Fatalf("the IdP's answer: %v", err)
	}
	id, err := s.conn.Exchange(ctx, upstream.Start{State: "state-one"}, "", "")
	if err != nil || id.Subject != "ada@example.com" || id.Email != "ada@example.com" || id.Name != "Ada" || len(id.Groups) != 1 || id.Groups[0] != "staff" {
		t.Fatalf("identity %+v, %v", id, err)
	}
	err = s.conn.Accept(ctx, acsRequest(form), samlsp.RequestID(start.Nonce), "state-two")
	if !errors.Is(err, saml.ErrAssertionReplayed) || samlsp.Reason(err) != "replayed" {
		t.Fatalf("the same assertion again: %v, want it refused as replayed", err)
	}
	if _, err := s.conn.Exchange(ctx, upstream.Start{State: "state-two"}, "", ""); !errors.Is(err, upstream.ErrRefused) {
		t.Fatalf("the replayed answer's trip: %v, want refused", err)
	}
	if n, _ := s.rdb.Keys(ctx, "auth:saml:{corp}:assertion:*").Result(); len(n) != 1 {
		t.Fatalf("replay keys %v", n)
	}
	if ttl := s.rdb.TTL(ctx, mustKey(t, s.rdb, ctx)).Val(); ttl <= 0 || ttl > 5*time.Minute {
		t.Fatalf("the replay key lives %s: until the assertion expires", ttl)
	}
}

func mustKey(t *testing.T, rdb redis.UniversalClient, ctx context.Context) string {
	keys, err := rdb.Keys(ctx, "auth:saml:{corp}:assertion:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatal("no replay key")
	}
	return keys[0]
}

// An IdP whose metadata wants signed AuthnRequests gets them signed (the HTTP-Redirect binding's
// query signature), and its check of the signature passes: it shows its login page. Otherwise they
// go unsigned.
func TestAuthURL_SignedWhenTheIdPWantsIt(t *testing.T) {
	ctx := context.Background()
	plain := startSP(t, nil, nil)
	to, err := plain.conn.AuthURL(ctx, upstream.NewStart(), nil)
	if err != nil || strings.Contains(to, "Signature=") {
		t.Fatalf("an IdP that does not ask: %s, %v", to, err)
	}
	signing := startSP(t, nil, func(p *testsaml.IdP) { p.Server.IDP.WantAuthnRequestsSigned = true })
	to, err = signing.conn.AuthURL(ctx, upstream.NewStart(), nil)
	if err != nil || !strings.Contains(to, "SigAlg=") || !strings.Contains(to, "Signature=") {
		t.Fatalf("an IdP that asks: %s, %v", to, err)
	}
	res, err := http.Get(to)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(res); res.StatusCode != http.StatusOK || !strings.Contains(body, `name="password"`) {
		t.Fatalf("the IdP refused our signed request: %d %s", res.StatusCode, body)
	}
	u, _ := url.Parse(to)
	q := u.Query()
	q.Set("Signature", base64.StdEncoding.EncodeToString([]byte("not our signature")))
	u.RawQuery = q.Encode()
	if res, _ := http.Get(u.String()); res.StatusCode == http.StatusOK {
		t.Fatal("the IdP took a request with a forged signature: the check above proves nothing")
	}
}

// Our own clock skew is stricter than the library's three minutes: an answer from an IdP whose clock is
// two minutes ahead of ours is refused as not yet valid (the library alone takes it), and one within
// the skew is taken.
func TestAccept_OurClockSkew(t *testing.T) {
	var offset atomic.Int64
	s := startSP(t, func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		behind time.Duration
		reason string
	}{{2 * time.Minute, "not_yet_valid"}, {20 * time.Second, ""}} {
		offset.Store(0)
		start := upstream.NewStart()
		to, err := s.conn.AuthURL(ctx, start, nil)
		if err != nil {
			t.Fatal(err)
		}
		form := answer(t, to)
		offset.Store(int64(-tc.behind))
		err = s.conn.Accept(ctx, acsRequest(form), samlsp.RequestID(start.Nonce), "state-"+tc.behind.String())
		if got := samlsp.Reason(err); (err == nil) != (tc.reason == "") || (err != nil && got != tc.reason) {
			t.Fatalf("our clock %s behind: %v (%s), want %q", tc.behind, err, got, tc.reason)
		}
	}
}

// Whatever is posted to the ACS, the check answers with an error or (for the real answer only) the
// person: never a panic, never a hang. The corpus is in testdata/fuzz/FuzzACS.
func FuzzACS(f *testing.F) {
	s := startSP(f, nil, nil)
	ctx := context.Background()
	start := upstream.NewStart()
	to, err := s.conn.AuthURL(ctx, start, nil)
	if err != nil {
		f.Fatal(err)
	}
	real, err := base64.StdEncoding.DecodeString(answer(f, to).Get("SAMLResponse"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add([]byte(`<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="x" Version="2.0"/>`))
	f.Fuzz(func(t *testing.T, xml []byte) {
		form := url.Values{"SAMLResponse": {base64.StdEncoding.EncodeToString(xml)}, "RelayState": {"s"}}
		state := "fuzz-" + base64.RawURLEncoding.EncodeToString([]byte(time.Now().String()))
		err := s.conn.Accept(ctx, acsRequest(form), samlsp.RequestID(start.Nonce), state)
		if err == nil && string(xml) != string(real) {
			t.Fatalf("an altered answer was taken:\n%s", xml)
		}
	})
}
