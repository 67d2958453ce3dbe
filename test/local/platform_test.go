// Package local_test runs the whole platform the way a cluster runs it, on this machine: the forms, auth
// and health services as three separate `formsservice` processes with one configuration file (the
// format the operator renders into their ConfigMap) and a real redis-server. Then it runs the shared
// end-to-end checks, which test/e2e runs against a kind cluster: the forms contract, a full sign-in
// with headless Chromium, and GET /health.
package local_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/test/contract"
	"github.com/formsservice/formsservice/test/internal/repo"
	"github.com/formsservice/formsservice/test/signin"
)

const (
	origin   = "https://shop.example.com"
	clientID = "shop-web"
	email    = "ada@example.com"
	password = "correct horse battery staple"
)

// TestMain removes the formsservice binary the test builds.
func TestMain(m *testing.M) {
	code := m.Run()
	testproc.RemoveBuilds()
	os.Exit(code)
}

func TestPlatform_ThreeProcessesServeTheContract(t *testing.T) {
	exe := testproc.Build(t, "./cmd/formsservice")
	store := testredis.Start(t, testredis.Options{AppendFsync: "no"}) // appendonly yes, which the forms' default durability needs
	// The configuration names every service's address (the issuer, the peers health checks) before the
	// processes start on ports the kernel picks: relays the test listens on lead to them.
	relays := map[string]*testproc.Relay{"forms": testproc.NewRelay(t), "auth": testproc.NewRelay(t), "health": testproc.NewRelay(t)}
	formsAddr, authAddr, healthAddr := relays["forms"].Addr(), relays["auth"].Addr(), relays["health"].Addr()
	callback := signin.NewCallback(t)
	dir := t.TempDir()

	cfg := map[string]any{
		"publicURL":      "http://" + authAddr,
		"allowedOrigins": []string{origin},
		"redis":          map[string]any{"url": store.URL()},
		"auth": map[string]any{
			"signingKeyFile": writeSigningKey(t, dir),
			"clients": []map[string]any{{
				"clientID": clientID, "name": "Shop",
				"redirectURIs": []string{callback.RedirectURL},
				"scopes":       []string{"openid", "profile", "email", "offline_access"},
			}},
		},
		"health": map[string]any{"formsURL": "http://" + formsAddr, "authURL": "http://" + authAddr},
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}

	for name, relay := range relays {
		p := testproc.Start(t, nil, exe, name, "-addr", "127.0.0.1:0", "-config", cfgPath)
		relay.To(p.WaitListening(t, 30*time.Second))
		p.WaitReady(t, "http://"+relay.Addr()+"/readyz", 30*time.Second)
	}
	createUser(t, exe, cfgPath)

	t.Run("forms contract", contract.Forms{BaseURL: "http://" + formsAddr, Origin: origin}.Check)
	t.Run("sign-in with a real browser", func(t *testing.T) {
		signin.Flow{Issuer: "http://" + authAddr, ClientID: clientID, Callback: callback, Email: email, Password: password}.Run(t)
	})
	t.Run("health", func(t *testing.T) {
		contract.Health(t, "http://"+healthAddr, "redis:responseTime", "forms:readiness", "auth:readiness")
	})
}

// writeSigningKey writes a new EC P-256 key as PEM, as the operator's signing-key Secret holds it.
func writeSigningKey(t *testing.T, dir string) string {
	t.Helper()
	ks, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	pemKey, err := keys.EncodePEM(ks.Current.Private)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "signing-key.pem")
	if err := os.WriteFile(path, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// createUser makes the account with the operator's tool, as the README tells a platform team to.
func createUser(t *testing.T, exe, cfgPath string) {
	t.Helper()
	cmd := repo.Command(t, exe, "users", "create", "-config", cfgPath, "-email", email, "-name", "Ada Lovelace")
	cmd.Stdin = strings.NewReader(password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("formsservice users create: %v\n%s", err, out)
	}
}
