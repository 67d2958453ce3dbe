// Package testdex runs Dex (github.com/dexidp/dex, a real OpenID Connect provider) as a process for
// tests: an upstream of the auth service's federation tests beside internal/testupstream, not a mock.
// It runs with its password database as the one way to sign in (its own login page, bcrypt cost 10, the
// least Dex takes), one static client for the relying party under test, rotated refresh tokens, and its
// gRPC API, through which a test adds and deletes accounts and revokes refresh tokens as Dex's
// operators do. Its storage is an etcd of the test's own (Debian's etcd-server; see startEtcd for why
// not Dex's memory storage) (D81).
//
// Dex is built from the Go module proxy by `make deps-dex` (hack/install-dex.sh, cached as
// bin/dex-<version>); a test fails with that command when it is missing, and is skipped under
// `go test -short` (make test-fast).
//
// No port is guessed (D8): Dex's issuer URL is in its configuration, before it runs, so the issuer is a
// testproc.Relay on a port the kernel picked; Dex binds its web and gRPC listeners on 127.0.0.1:0 and
// logs the address it was given, not the port it got, so Start reads its two listening sockets from the
// kernel's table and tells them apart by asking each for the discovery document.
package testdex

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	dexapi "github.com/dexidp/dex/api/v2"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testwait"
)

// Version is the Dex release the tests run (hack/install-dex.sh builds it).
const Version = "v2.45.1"

// PasswordConnector is the connector id of Dex's password database ("local"): the second half of the
// subjects Dex issues for its accounts.
const PasswordConnector = "local"

// Client is the relying party Dex knows (its staticClients entry).
type Client struct {
	ID           string
	Secret       string
	RedirectURIs []string
}

// Account is one person in Dex's password database.
type Account struct {
	Email    string
	Password string
	// Username is the name claim (Dex's "username").
	Username string
	// UserID is the account's id at Dex (the first half of its subject); empty: derived from Email.
	UserID string
	// Static puts the account in the configuration's staticPasswords instead of creating it through
	// the API: only there does Dex keep Groups and EmailVerified, and such an account is read-only
	// (Delete fails).
	Static        bool
	Groups        []string
	EmailVerified *bool
}

// Dex is one running Dex.
type Dex struct {
	// Issuer is Dex's issuer URL (http://127.0.0.1:port/dex, the relay's port).
	Issuer string
	// GRPCAddr is its gRPC API's host:port (plain text, loopback).
	GRPCAddr string

	proc *testproc.Process
	api  dexapi.DexClient
}

// Binary returns the Dex executable: $DEX, or bin/dex-<Version>, which `make deps-dex` builds. It
// skips the test under -short.
func Binary(t testing.TB) string {
	t.Helper()
	return testproc.Tool{Env: "DEX", Cached: "dex-" + Version, Make: "deps-dex"}.Path(t)
}

// Start runs Dex with the client and accounts until the test ends, and returns once its discovery
// document answers with its issuer and its API has created the accounts.
func Start(t testing.TB, client Client, accounts ...Account) *Dex {
	t.Helper()
	exe := Binary(t)
	// One folder for etcd's data and sockets and Dex's configuration; a short one, as the health check
	// dials etcd's socket by its full path, which must stay under 108 bytes (a test's TempDir can be
	// longer).
	dir, err := os.MkdirTemp("", "dex-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	etcd := startEtcd(t, dir)

	relay := testproc.NewRelay(t)
	d := &Dex{Issuer: "http://" + relay.Addr() + "/dex"}
	conf := filepath.Join(dir, "config.json")
	b, err := json.MarshalIndent(d.config(t, client, etcd, accounts), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "serve", conf)
	cmd.Dir = dir // where etcd's socket is (its URL names a relative path)
	d.proc = testproc.StartCmd(t, cmd)

	// Two TCP sockets: the web listener and the gRPC API. The one that serves the discovery document
	// with this issuer is the web listener.
	socks := d.proc.WaitListeningSockets(t, 2, 60*time.Second)
	web, grpcAddr := "", ""
	probe := &http.Client{Timeout: 2 * time.Second}
	testwait.Until(t, 30*time.Second, "Dex's discovery document", func() error {
		if exited, err := d.proc.Exited(); exited {
			t.Fatalf("dex exited: %v\n%s", err, d.proc.Output())
		}
		for i, addr := range socks {
			if issuerAt(probe, "http://"+addr+"/dex") == d.Issuer {
				web, grpcAddr = addr, socks[1-i]
				return nil
			}
		}
		return errors.New("neither listener serves the discovery document yet")
	})
	relay.To(web)
	// Readiness as a client sees it: the discovery document through the issuer URL.
	if got := issuerAt(probe, d.Issuer); got != d.Issuer {
		t.Fatalf("discovery at %s names the issuer %q", d.Issuer, got)
	}

	d.GRPCAddr = grpcAddr
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	d.api = dexapi.NewDexClient(conn)
	for _, a := range accounts {
		if !a.Static {
			d.Add(t, a)
		}
	}
	return d
}

// etcdSocket is etcd's client socket in its working folder. etcd's unix URLs take the host:port form
// and name a path relative to that folder; Dex, started in the same folder, dials the same one.
const etcdSocket = "etcd-client:0"

// startEtcd runs etcd (Debian's etcd-server) with its data and sockets in dir until the test ends,
// and returns once it answers /health. Dex's storage: its memory storage (and SQLite) hang at a
// refresh through the password database (Dex holds the storage's one lock, or its one connection,
// while the connector looks the account up: dexidp/dex issue 4209), and the refreshes are what the
// re-check tests need.
func startEtcd(t testing.TB, dir string) string {
	t.Helper()
	exe, err := exec.LookPath("etcd")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/etcd"); serr != nil {
			t.Fatalf("etcd is not installed (Dex's storage in internal/testdex): run `make deps-apt` (Debian's etcd-server)")
		}
		exe = "/usr/bin/etcd"
	}
	peer := "unix://etcd-peer:0"
	cmd := exec.Command(exe, "--name", "dex", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", "unix://"+etcdSocket, "--advertise-client-urls", "unix://"+etcdSocket,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "dex="+peer,
		"--log-level", "warn")
	cmd.Dir = dir
	proc := testproc.StartCmd(t, cmd)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", filepath.Join(dir, etcdSocket))
		}}}
	testwait.Until(t, 30*time.Second, "etcd's /health", func() error {
		if exited, err := proc.Exited(); exited {
			t.Fatalf("etcd exited: %v\n%s", err, proc.Output())
		}
		res, err := c.Get("http://etcd/health")
		if err != nil {
			return err
		}
		defer res.Body.Close()
		var h struct{ Health string }
		if err := json.NewDecoder(res.Body).Decode(&h); err != nil || h.Health != "true" {
			return fmt.Errorf("health %q (%v)", h.Health, err)
		}
		return nil
	})
	return "unix://" + etcdSocket
}

// issuerAt is the issuer named by the discovery document under base, or "" when none answers.
func issuerAt(c *http.Client, base string) string {
	res, err := c.Get(base + "/.well-known/openid-configuration")
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	var doc struct {
		Issuer string `json:"issuer"`
	}
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&doc) != nil {
		return ""
	}
	return doc.Issuer
}

// config is Dex's configuration file (JSON is YAML).
func (d *Dex) config(t testing.TB, client Client, etcd string, accounts []Account) map[string]any {
	var static []map[string]any
	for _, a := range accounts {
		if !a.Static {
			continue
		}
		p := map[string]any{"email": a.Email, "hash": string(hash(t, a.Password)), "username": a.Username,
			"userID": a.userID(), "groups": a.Groups}
		if a.EmailVerified != nil {
			p["emailVerified"] = *a.EmailVerified
		}
		static = append(static, p)
	}
	return map[string]any{
		"issuer":  d.Issuer,
		"storage": map[string]any{"type": "etcd", "config": map[string]any{"endpoints": []string{etcd}}},
		"web":     map[string]any{"http": "127.0.0.1:0"},
		"grpc":    map[string]any{"addr": "127.0.0.1:0"},
		"logger":  map[string]any{"level": "debug", "format": "json"},
		// Rotated refresh tokens, and no grace for a used one: a client that keeps an old one is refused.
		"expiry": map[string]any{"refreshTokens": map[string]any{"reuseInterval": "0s"}},
		"oauth2": map[string]any{
			"skipApprovalScreen": true,
			// Dex's default allows the implicit and password grants too; the relying party uses neither.
			"grantTypes":    []string{"authorization_code", "refresh_token"},
			"responseTypes": []string{"code"},
		},
		"staticClients": []map[string]any{{
			"id": client.ID, "secret": client.Secret, "name": client.ID, "redirectURIs": client.RedirectURIs,
		}},
		"enablePasswordDB": true,
		"staticPasswords":  static,
	}
}

func (a Account) userID() string {
	if a.UserID != "" {
		return a.UserID
	}
	return "id-" + a.Email
}

// hash is a bcrypt hash at cost 10: Dex refuses a lower cost at login.
func hash(t testing.TB, password string) []byte {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), 10)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (d *Dex) ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Add creates an account through Dex's API (CreatePassword); Static is ignored.
func (d *Dex) Add(t testing.TB, a Account) {
	t.Helper()
	res, err := d.api.CreatePassword(d.ctx(t), &dexapi.CreatePasswordReq{Password: &dexapi.Password{
		Email: a.Email, Hash: hash(t, a.Password), Username: a.Username, UserId: a.userID()}})
	if err != nil || res.AlreadyExists {
		t.Fatalf("creating %s at Dex: %v (already exists: %v)", a.Email, err, res.GetAlreadyExists())
	}
}

// Delete deletes the account with that address through Dex's API (DeletePassword), as an operator
// whose person left does: Dex's refresh of a grant of that account fails from then on.
func (d *Dex) Delete(t testing.TB, email string) {
	t.Helper()
	res, err := d.api.DeletePassword(d.ctx(t), &dexapi.DeletePasswordReq{Email: email})
	if err != nil || res.NotFound {
		t.Fatalf("deleting %s at Dex: %v (not found: %v)", email, err, res.GetNotFound())
	}
}

// Exists says whether Dex's API lists an account with that address.
func (d *Dex) Exists(t testing.TB, email string) bool {
	t.Helper()
	res, err := d.api.ListPasswords(d.ctx(t), &dexapi.ListPasswordReq{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Passwords {
		if p.Email == email {
			return true
		}
	}
	return false
}

// RevokeRefresh revokes the refresh tokens Dex issued to clientID for the account (RevokeRefresh, by
// the account's user id and the password connector), as an operator who signs a person out does.
func (d *Dex) RevokeRefresh(t testing.TB, a Account, clientID string) {
	t.Helper()
	// Dex's API names the account by the subject of its ID tokens.
	res, err := d.api.RevokeRefresh(d.ctx(t), &dexapi.RevokeRefreshReq{UserId: Subject(a), ClientId: clientID})
	if err != nil || res.NotFound {
		t.Fatalf("revoking %s's refresh tokens at Dex: %v (not found: %v)", a.Email, err, res.GetNotFound())
	}
}

// Subject is the sub claim Dex issues for the account: its user id and connector id as Dex encodes them,
// the protobuf message IDTokenSubject{user_id = 1, conn_id = 2} in unpadded base64url.
func Subject(a Account) string {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, a.userID())
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, PasswordConnector)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Stop kills Dex and waits until it has exited.
func (d *Dex) Stop() { d.proc.Kill() }
