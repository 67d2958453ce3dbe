// Package testupstream runs a real upstream OpenID provider for the federation tests (D58):
// test/upstream/op.mjs, panva's oidc-provider (OpenID Certified) under Node.js, on a loopback port the
// kernel picks. Its development login page takes any login name, which picks an account of the table
// the test gives; no password is checked. It issues refresh tokens (offline_access), rotated at each
// use; Run's Upstream removes an account or stops the provider, for the re-check tests (D78).
// hack/install-upstream.sh installs it (`make deps-upstream`).
package testupstream

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/reporoot"
	"github.com/formsservice/formsservice/internal/testproc"
)

// Client is a client registered at the upstream (our provider, as its relying party).
type Client struct {
	ID           string   `json:"client_id"`
	Secret       string   `json:"client_secret"`
	RedirectURIs []string `json:"redirect_uris"`
}

// Account is an upstream account's claims (sub is its login name).
type Account map[string]any

// Start runs the upstream with the clients and accounts (by login name) until the test ends, and
// returns its issuer URL. Under -short it skips; without the installed provider it fails with the
// command that installs it.
func Start(t testing.TB, clients []Client, accounts map[string]Account) string {
	t.Helper()
	return Run(t, clients, accounts).Issuer
}

// Upstream is a running upstream provider.
type Upstream struct {
	Issuer string
	proc   *testproc.Process
}

// Remove removes the account with that login name, as a provider whose person left does: its refresh
// tokens are refused from then on (invalid_grant).
func (u *Upstream) Remove(t testing.TB, login string) {
	t.Helper()
	res, err := http.Post(u.Issuer+"/__test/remove/"+url.PathEscape(login), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("removing %s upstream: %d", login, res.StatusCode)
	}
}

// Stop stops the upstream at once (SIGKILL: its kept-alive connections would hold a graceful stop)
// and waits until it has exited: it answers nothing from then on.
func (u *Upstream) Stop() { u.proc.Kill() }

// Run is Start that returns the running upstream.
func Run(t testing.TB, clients []Client, accounts map[string]Account) *Upstream {
	t.Helper()
	testproc.SkipShort(t, "the upstream OpenID provider (Node.js)")
	root, err := reporoot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "test", "upstream")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "oidc-provider")); err != nil {
		t.Fatalf("the upstream OpenID provider is not installed: run `make deps-upstream` (%v)", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (hack/install-upstream.sh needs it too): %v", err)
	}
	conf, _ := json.Marshal(map[string]any{"clients": clients, "accounts": accounts})
	cmd := exec.Command(node, filepath.Join(dir, "op.mjs"), string(conf))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "NODE_ENV=test"}
	p := testproc.StartCmd(t, cmd)
	return &Upstream{Issuer: "http://" + p.WaitListening(t, 30*time.Second), proc: p}
}
