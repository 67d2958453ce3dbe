package main

import (
	"bytes"
	"context"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"

	"github.com/formsservice/formsservice/internal/testproc"
)

// usersCmd runs `formsservice users ...` against a store, with stdin.
func usersCmd(t *testing.T, redisURL, configFile, stdin string, args ...string) (string, error) {
	t.Helper()
	env := map[string]string{"REDIS_URL": redisURL, "FORMSSERVICE_CONFIG": configFile}
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"users"}, args...), func(k string) string { return env[k] },
		strings.NewReader(stdin), &out, &errOut)
	if err != nil && !errors.Is(err, errUsage) {
		return out.String() + errOut.String(), err
	}
	return out.String() + errOut.String(), err
}

func TestUsersCommand_CreateListSetPasswordSignoutDisableDelete(t *testing.T) {
	srv := testredis.Start(t)
	// A cheap hash keeps the test fast; the command reads the same configuration as the service.
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := usersCmd(t, srv.URL(), cfg, "first password\n", "create", "-email", "Ada@Example.com", "-name", "Ada")
	if err != nil || !strings.Contains(out, "created ada@example.com") {
		t.Fatalf("create: %v %s", err, out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "other password\n", "create", "-email", "ada@example.com"); err == nil {
		t.Fatalf("duplicate create succeeded: %s", out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "create", "-email", "grace@example.com"); err == nil || !strings.Contains(err.Error(), "stdin") {
		t.Fatalf("create without a password: %v %s", err, out)
	}
	out, err = usersCmd(t, srv.URL(), cfg, "", "list")
	if err != nil || !strings.Contains(out, "\tada@example.com\tAda\t") {
		t.Fatalf("list: %v %q", err, out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "second password\n", "set-password", "-email", "ada@example.com"); err != nil ||
		!strings.Contains(out, "ended 0 sign-in session(s), revoked 0 grant(s)") {
		t.Fatalf("set-password: %v %s", err, out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "signout", "-email", "ada@example.com"); err != nil || !strings.Contains(out, "signed out ada@example.com") {
		t.Fatalf("signout: %v %s", err, out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "disable", "-email", "ada@example.com"); err != nil || !strings.Contains(out, "disabled and signed out ada@example.com") {
		t.Fatalf("disable: %v %s", err, out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "enable", "-email", "ada@example.com"); err != nil || !strings.Contains(out, "enabled ada@example.com") {
		t.Fatalf("enable: %v %s", err, out)
	}
	out, err = usersCmd(t, srv.URL(), cfg, "", "delete", "-email", "ADA@example.com")
	if err != nil || !strings.Contains(out, "deleted ada@example.com") {
		t.Fatalf("delete: %v %s", err, out)
	}
	if out, _ := usersCmd(t, srv.URL(), cfg, "", "list", "-json"); strings.Contains(out, "ada@") {
		t.Fatalf("deleted user listed: %s", out)
	}
	if _, err := usersCmd(t, srv.URL(), cfg, "", "frobnicate"); !errors.Is(err, errUsage) {
		t.Fatalf("unknown subcommand: %v", err)
	}
}

func TestAuthCommand_WithoutSigningKey_Refuses(t *testing.T) {
	srv := testredis.Start(t)
	env := map[string]string{"REDIS_URL": srv.URL(), "FORMSSERVICE_PUBLIC_URL": "https://id.example.test"}
	var out bytes.Buffer
	err := run(context.Background(), []string{"auth", "-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &out)
	if err == nil || !strings.Contains(err.Error(), "signingKeyFile") {
		t.Fatalf("auth without a signing key: %v", err)
	}
}

// TestDevServer_DemoClientAndUserSignIn: `formsservice dev` has the demo client and the demo user of
// docs/architecture.md (D5), on an ephemeral key, so that the SDK's browser tests can sign in with nothing configured.
func TestDevServer_DemoClientAndUserSignIn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testproc.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"dev", "-addr", "127.0.0.1:0"}, devEnv(t, nil), strings.NewReader(""), io.Discard, logs)
	}()
	t.Cleanup(func() { cancel(); <-done })
	urlRe := regexp.MustCompile(`"msg":"dev server ready"[^\n]*"url":"(http://[^"]+)"`)
	var base string
	testwait.For(t, 30*time.Second, "the dev server's ready line", func() bool {
		if m := urlRe.FindStringSubmatch(logs.String()); m != nil {
			base = m[1]
		}
		return base != ""
	})
	if !strings.Contains(logs.String(), "ephemeral signing key") {
		t.Error("the dev server must say that it generated an ephemeral key")
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	verifier := oauth2.GenerateVerifier()
	conf := &oauth2.Config{ClientID: config.DevClientID, RedirectURL: base + "/demo/callback", Scopes: []string{"openid", "email"},
		Endpoint: oauth2.Endpoint{AuthURL: base + "/oauth2/authorize", TokenURL: base + "/oauth2/token", AuthStyle: oauth2.AuthStyleInParams}}
	res, err := c.Get(conf.AuthCodeURL("state-dev-0001", oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	action := regexp.MustCompile(`<form method="post" action="([^"]+)">`).FindStringSubmatch(string(page))
	csrf := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(string(page))
	if res.StatusCode != http.StatusOK || action == nil || csrf == nil {
		t.Fatalf("sign-in page: %d", res.StatusCode)
	}
	res, err = c.PostForm(base+html.UnescapeString(action[1]), url.Values{"csrf_token": {csrf[1]}, "action": {"signin"},
		"email": {config.DevEmail}, "password": {config.DevPassword}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || loc.Query().Get("code") == "" {
		t.Fatalf("demo user sign-in: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	tok, err := conf.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil || tok.Extra("id_token") == nil {
		t.Fatalf("exchange: %v", err)
	}
}

// The dev server seals TOTP secrets with a key of its own only over its in-memory store, and only when
// the configuration names none: over REDIS_URL a key made at every start would lock every second factor
// out at the next one.
func TestDevMFAKey_OnlyOverTheEmbeddedStore(t *testing.T) {
	none, file := &config.Config{}, &config.Config{}
	file.Auth.MFA.SecretKeyFile = "/run/secrets/mfa-key"
	for _, c := range []struct {
		name string
		d    deps
		cfg  *config.Config
		want bool
	}{
		{"dev, embedded store", deps{Dev: true, EmbeddedStore: true}, none, true},
		{"dev over REDIS_URL", deps{Dev: true}, none, false},
		{"dev with a key file", deps{Dev: true, EmbeddedStore: true}, file, false},
		{"a production service", deps{}, none, false},
	} {
		got := devMFAKey(c.d, c.cfg)
		if (got != nil) != c.want || got != nil && len(got) != 32 {
			t.Errorf("%s: %d bytes, want a 32-byte key: %v", c.name, len(got), c.want)
		}
	}
	a, b := devMFAKey(deps{Dev: true, EmbeddedStore: true}, none), devMFAKey(deps{Dev: true, EmbeddedStore: true}, none)
	if string(a) == string(b) {
		t.Error("two dev keys are the same: not random")
	}
}
