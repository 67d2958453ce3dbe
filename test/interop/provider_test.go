// Package interop_test is the interoperability matrix: each test is one widely used third-party relying
// party (the library itself, at a pinned version) taken through the whole lifecycle against the
// provider — discovery, authorization code + PKCE through the hosted sign-in page, ID-token validation
// by the library, userinfo, refresh with rotation, revocation (after which the token no longer renews)
// and RP-initiated logout back to the post-logout URI — plus the library's error paths (a wrong PKCE
// verifier, a foreign redirect URI). Where a library refuses an answer of ours, the provider is wrong
// until the RFC says otherwise. The versions are pinned in go.mod and test/interop/package-lock.json;
// docs/auth.md has the table. Everything runs on loopback.
package interop_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/server"
)

const (
	email    = "ada@example.com"
	password = "correct horse battery staple"
	userName = "Ada Lovelace"
)

// cheapHash keeps sign-ins fast in tests; production uses the OWASP default.
var cheapHash = config.PasswordHash{MemoryKiB: 64, Iterations: 1, Parallelism: 1}

// provider is the auth service on a loopback port (bound at port 0) with a real redis-server behind
// it and one account, email/password.
type provider struct {
	Issuer string
	svc    *auth.Service
}

// listen reserves a loopback address for a relying party's redirect URI or origin before the
// provider that registers it starts.
func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// secretFile writes a confidential client's secret where the configuration reads it from.
func secretFile(t *testing.T, secret string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(path, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func startProvider(t *testing.T, clients ...config.OAuthClient) *provider {
	t.Helper()
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ks, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	issuer := "http://" + ln.Addr().String()
	cfg := &config.Config{PublicURL: issuer, Auth: config.Auth{Clients: clients, PasswordHash: cheapHash}}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	metrics := server.NewMetrics()
	svc, err := auth.New(auth.Options{Config: config.Static{C: cfg}, Redis: rdb, Logger: log, Keys: ks, Registerer: metrics.Registry})
	if err != nil {
		t.Fatal(err)
	}
	app := server.New(server.Options{Logger: log, Metrics: metrics}, svc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = app.Serve(ctx, server.ServeOptions{Listener: ln, ShutdownTimeout: 5 * time.Second})
	}()
	t.Cleanup(func() { cancel(); <-done })
	if _, err := svc.Users().Create(context.Background(), email, userName, password); err != nil {
		t.Fatal(err)
	}
	return &provider{Issuer: issuer, svc: svc}
}
