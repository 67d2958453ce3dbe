package auth_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	vErrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/services/auth/admin"
	platformconfig "github.com/formsservice/formsservice/services/platform/config"
)

// The admin API's tests: every exchange goes through adminAPI.call, which checks the request and the
// answer against the OpenAPI 3.1 document (services/auth/admin/openapi.yaml) with libopenapi-validator,
// so that the document and the API cannot drift apart unnoticed.

// The admin API's machine clients: ops may do everything, reader may read accounts, auditor the trail.
const (
	opsClient     = "ops"
	readerClient  = "reader"
	auditorClient = "auditor"
	formsClient   = "formsbot"
)

var (
	apiValidatorOnce sync.Once
	apiValidator     validator.Validator
	apiValidatorErr  error
)

// openAPI is the validator of the document, built once.
func openAPI(t testing.TB) validator.Validator {
	t.Helper()
	apiValidatorOnce.Do(func() {
		doc, err := libopenapi.NewDocument(admin.Document)
		if err != nil {
			apiValidatorErr = err
			return
		}
		v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
		if len(errs) > 0 {
			apiValidatorErr = fmt.Errorf("%v", errs)
			return
		}
		apiValidator = v
	})
	if apiValidatorErr != nil {
		t.Fatalf("the OpenAPI document: %v", apiValidatorErr)
	}
	return apiValidator
}

// adminProvider is a provider whose clients may call the admin API.
type adminProvider struct {
	*provider
	mail *testmail.Server
}

func startAdminProvider(t *testing.T, withMail bool) *adminProvider {
	t.Helper()
	return startAdminProviderOn(t, withMail, nil)
}

// startAdminProviderOn is startAdminProvider on the store rdb (nil: a new redis-server); more changes
// the configuration further.
func startAdminProviderOn(t *testing.T, withMail bool, rdb redis.UniversalClient, more ...func(*platformconfig.Config)) *adminProvider {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(robotSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	s := setup{rdb: rdb, mutate: func(c *platformconfig.Config) {
		aud := []string{c.PublicURL + "/admin"}
		app := &c.Auth.Clients[0]
		app.Scopes = []string{"openid", "profile", "email", "offline_access", "users:read", "users:write", "forms:read", "forms:write"}
		app.Audiences = append(aud, testAPI)
		machine := func(id string, scopes ...string) platformconfig.OAuthClient {
			return platformconfig.OAuthClient{ClientID: id, SecretFile: secret, GrantTypes: []string{"client_credentials"}, Scopes: scopes, Audiences: aud}
		}
		c.Auth.Clients = append(c.Auth.Clients,
			machine(opsClient, "users:read", "users:write", "audit:read"),
			machine(readerClient, "users:read"),
			machine(auditorClient, "audit:read"),
			machine(formsClient, "forms:read", "forms:write"),
		)
		for _, m := range more {
			m(c)
		}
	}}
	var mp *testmail.Server
	if withMail {
		mp = testmail.Start(t, testmail.Options{})
		s.mail = mp
	}
	return &adminProvider{provider: startProvider(t, s), mail: mp}
}

// token is a client_credentials access token of the machine client id for the admin API with scope.
func (p *adminProvider) token(id, scope string) string {
	p.t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}, "resource": {p.base + "/admin"}}
	req, _ := http.NewRequest(http.MethodPost, p.base+"/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, robotSecret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	var a tokenAnswer
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil || a.AccessToken == "" {
		p.t.Fatalf("token for %s (%s): %d %v %+v", id, scope, res.StatusCode, err, a)
	}
	return a.AccessToken
}

// apiCall is one request to the admin API.
type apiCall struct {
	method, path, token string
	body                string // JSON unless contentType says otherwise
	contentType         string
	// badRequest: the request breaks the document on purpose (no token, a field it does not have, a
	// limit out of range); the validator must refuse it too. Every other request must pass it.
	badRequest bool
	// export: a 200 is an export's rows (an array or lines), not one JSON object.
	export bool
}

// apiAnswer is the API's answer.
type apiAnswer struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// validated counts the exchanges checked against the document (TestAdminAPI_ValidatesEveryExchange).
var validated atomic.Int64

// api sends c and checks request and answer against the document.
func (p *adminProvider) api(c apiCall) apiAnswer {
	p.t.Helper()
	newReq := func() *http.Request {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req, err := http.NewRequest(c.method, p.base+c.path, body)
		if err != nil {
			p.t.Fatal(err)
		}
		if c.body != "" {
			ct := c.contentType
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		return req
	}
	res, err := http.DefaultClient.Do(newReq())
	if err != nil {
		p.t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	a := apiAnswer{status: res.StatusCode, header: res.Header, raw: raw}
	if len(raw) > 0 && strings.Contains(res.Header.Get("Content-Type"), "json") && !(c.export && res.StatusCode == http.StatusOK) {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			p.t.Fatalf("%s %s: %d answered no JSON object: %q", c.method, c.path, res.StatusCode, raw)
		}
	}

	v := openAPI(p.t)
	req := newReq()
	res.Body = io.NopCloser(bytes.NewReader(raw))
	if ok, errs := v.ValidateHttpResponse(req, res); !ok {
		p.t.Errorf("%s %s → %d: the answer breaks the OpenAPI document:%s\n%s", c.method, c.path, res.StatusCode, describe(errs), raw)
	}
	ok, errs := v.ValidateHttpRequest(newReq())
	switch {
	case !ok && !c.badRequest:
		p.t.Errorf("%s %s: the request breaks the OpenAPI document:%s", c.method, c.path, describe(errs))
	case ok && c.badRequest:
		p.t.Errorf("%s %s: a request sent as bad passes the OpenAPI document (it should describe what the API refuses)", c.method, c.path)
	}
	validated.Add(1)
	return a
}

func describe(errs []*vErrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  %s: %s", e.Message, e.Reason)
		for _, s := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    %s at %s", s.Reason, s.FieldPath)
		}
	}
	return b.String()
}

// problemOf fails unless a is an RFC 9457 problem with status; it returns its errors member.
func problemOf(t *testing.T, name string, a apiAnswer, status int) map[string]any {
	t.Helper()
	if a.status != status || a.header.Get("Content-Type") != "application/problem+json" || a.body["status"] != float64(status) ||
		a.body["title"] != http.StatusText(status) || a.body["type"] != "about:blank" {
		t.Errorf("%s: %d %s %s; want an RFC 9457 problem with status %d", name, a.status, a.header.Get("Content-Type"), a.raw, status)
	}
	fields, _ := a.body["errors"].(map[string]any)
	return fields
}

// The document is a valid OpenAPI 3.1 document, served without a token, byte for byte the checked-in
// file.
func TestAdminAPI_DocumentValidAndServed(t *testing.T) {
	doc, err := libopenapi.NewDocument(admin.Document)
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("version %s, want 3.1.0", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		t.Fatalf("the document is not valid OpenAPI:%s", describe(verrs))
	}
	p := startAdminProvider(t, false)
	a := p.api(apiCall{method: http.MethodGet, path: "/admin/v1/openapi.yaml"})
	if a.status != http.StatusOK || !bytes.Equal(a.raw, admin.Document) || a.header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("GET openapi.yaml: %d %s", a.status, a.header.Get("Content-Type"))
	}
	checked, err := os.ReadFile("admin/openapi.yaml")
	if err != nil || !bytes.Equal(checked, admin.Document) {
		t.Fatalf("the embedded document is not the checked-in file: %v", err)
	}
}
