package config

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzParse feeds arbitrary documents to the configuration parser every service and the operator use.
// Whatever the input: no panic (in Parse, ApplyDefaults or Validate), a parsed configuration survives
// a round trip through YAML unchanged (what the operator renders is what the services read), and
// Validate reports the same problems in the same order every time (a platform engineer fixing a
// ConfigMap sees a stable message). `go test -fuzz FuzzParse ./services/platform/config/` explores
// beyond the seeds; hack/test.sh runs it for a bounded time.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"",
		"{}",
		"publicURL: https://id.example.com\nlogLevel: info\nallowedOrigins: [https://www.example.com, 'https://*.example.com']\n" +
			"trustedProxies: [10.0.0.0/8]\nredis: {url: redis://redis:6379/0, timeout: 500ms}\n",
		"redis: {addrs: [r-0:6379, r-1:6379, r-2:6379], cluster: true, passwordFile: /var/run/secrets/redis/password}\n",
		"redis: {addrs: [s-0:26379], masterName: mymaster, db: 2, tls: true, username: app}\n",
		"forms:\n  rateLimitPerMinute: 0\n  delivery:\n    smtp: {addr: 'smtp:587', from: a@example.com, to: [team@example.com], startTLS: true, username: u, passwordFile: /p}\n" +
			"    webhook: {url: 'https://hooks.slack.com/services/T/B/X'}\n    timeout: 10s\n    retryAfter: 30s\n    maxRetryInterval: 15m\n",
		"auth:\n  issuer: https://id.example.com/\n  signingKeyFile: /keys/current.pem\n  previousSigningKeyFile: /keys/previous.pem\n" +
			"  accessTokenLifetime: 15m\n  refreshTokenLifetime: 720h\n  codeLifetime: 60\n  selfSignup: true\n" +
			"  passwordHash: {memoryKiB: 19456, iterations: 2, parallelism: 1, concurrency: 4}\n" +
			"  throttle: {accountFailures: 10, ipFailures: 50, window: 15m}\n" +
			"  clients:\n  - clientID: web\n    name: Web App\n    redirectURIs: [https://app.example.com/callback, http://localhost:3000/callback]\n" +
			"    postLogoutRedirectURIs: [https://app.example.com/]\n    scopes: [openid, email]\n    secretFile: /secrets/web\n",
		"health: {formsURL: 'http://forms:8080', authURL: 'http://auth:8080', warnAfter: 250ms, timeout: 1s, cacheFor: 2s,\n" +
			"  checks: {'redis:responseTime': {warnAfter: 100ms}, 'forms:readiness': {timeout: 3s}}}\n",
		`{"publicURL":"https://id.example.com","allowedOrigins":["https://a.example"],"redis":{"url":"redis://r:6379"}}`,
		"allowedOrigins: [http://*.example.com, 'https://exa mple.com', null]\nlogLevel: LOUD\n",
		"auth: {accessTokenLifetime: -1s, codeLifetime: -5, sessionLifetime: -1h, throttle: {window: -1m}, clients: [{clientID: x, redirectURIs: ['javascript:alert(1)']}, {clientID: x}]}\n",
		"redis: {url: 'redis://r', addrs: [a]}\nforms: {rateLimitPerMinute: -1}\n",
		"auth:\n  accessTokenLifetime: 1e300\n",
		"a: &a [*a]\n",
		"redis: {timeout: 9223372036854775807}\n",
		"allowedOrigins: !!binary aGVsbG8=\n",
		"? [complex, key]\n: value\n",
		"publicURL: \"\\u0000\\ud800\"\n",
		"logLevel: info\nlogLevel: debug\n",
		"auth: {clients: [{clientId: a, redirectURIS: [x]}]}\nallowedorigins: []\n",
		"health: {checks: {x: [1], y: {warnAfter: {a: b}}}}\nredis: 5\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		rendered, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("a parsed configuration does not render: %v", err)
		}
		again, err := Parse(rendered)
		if err != nil {
			t.Fatalf("the rendered configuration does not parse: %v\n%s", err, rendered)
		}
		if a, b := mustJSON(t, c), mustJSON(t, again); a != b {
			t.Fatalf("round trip changed the configuration:\n%s\n%s", a, b)
		}
		c.ApplyDefaults()
		first := errString(c.Validate())
		for range 3 {
			if again := errString(c.Validate()); again != first {
				t.Fatalf("Validate is not stable:\n%s\n---\n%s", first, again)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
