package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/services/platform/config"
)

// Secret files readable by every user of the machine are warned about by key and file; one that every
// user can write stops the start-up, naming the key and the fix. The key is found however deep it is
// (a client's secretFile) and CA bundles are not secrets.
func TestCheckSecretFiles_WarnsOnReadableRefusesWritable(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := &config.Config{}
	cfg.Auth.SigningKeyFile = file("key.pem", 0o600)
	cfg.Auth.Clients = []config.OAuthClient{{ClientID: "a"}, {ClientID: "b", SecretFile: file("client-b", 0o644)}}
	cfg.Redis.CAFile = file("ca.pem", 0o644)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if err := checkSecretFiles(cfg, log); err != nil {
		t.Fatal(err)
	}
	if got := logs.String(); strings.Count(got, "level=WARN") != 1 || !strings.Contains(got, "key=auth.clients[1].secretFile") || !strings.Contains(got, "mode=-rw-r--r--") {
		t.Fatalf("warnings:\n%s", got)
	}
	cfg.Auth.SigningKeyFile = file("writable.pem", 0o666)
	err := checkSecretFiles(cfg, log)
	if err == nil || !strings.Contains(err.Error(), "auth.signingKeyFile") || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("a key file every user can write: %v", err)
	}
}

// The refusal stops the service before it serves anything.
func TestServe_WritableSigningKey_Refused(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(key, []byte("not read"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, 0o666); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte("redis: {url: redis://127.0.0.1:1}\nauth:\n  signingKeyFile: "+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"auth", "--addr", "127.0.0.1:0", "--config", cfgFile}, func(string) string { return "" },
		strings.NewReader(""), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "auth.signingKeyFile") {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
}
