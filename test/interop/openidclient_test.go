package interop_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/services/platform/config"
)

// TestOpenIDClient runs openid-client.mjs (panva's openid-client on Node) against the provider and
// plays the person's browser for it.
func TestOpenIDClient(t *testing.T) {
	node := nodeWith(t, "openid-client")
	app := listen(t)
	base := "http://" + app.Addr().String()
	const clientID, secret = "node-app", "node-app-secret-0123456789"
	p := startProvider(t, config.OAuthClient{
		ClientID: clientID, Name: "Node app", SecretFile: secretFile(t, secret),
		RedirectURIs: []string{base + "/callback"}, PostLogoutRedirectURIs: []string{base + "/signed-out"},
	})
	args, _ := json.Marshal(map[string]string{"issuer": p.Issuer, "clientId": clientID, "clientSecret": secret,
		"redirectUri": base + "/callback", "postLogoutUri": base + "/signed-out", "email": email})
	runNodeRP(t, newBrowser(t), node, "openid-client.mjs", string(args))
}

// nodeWith finds node and checks that the npm packages of package-lock.json are installed.
func nodeWith(t *testing.T, pkg string) string {
	t.Helper()
	testproc.SkipShort(t, "Node.js and "+pkg)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("no node on PATH: the interoperability matrix needs Node.js 20.19 or newer")
	}
	if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
		t.Fatalf("%s is not installed: run `make deps-interop` (npm ci in test/interop)", pkg)
	}
	return node
}

// runNodeRP runs a relying-party script and answers its requests to visit a URL with the browser.
func runNodeRP(t *testing.T, b *browser, node, script string, args ...string) {
	t.Helper()
	// A script that hangs (waiting for an answer that never comes) is killed rather than holding the run.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	done := false
	var steps []string
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		var msg struct {
			Step   string `json:"step"`
			Visit  string `json:"visit"`
			StopAt string `json:"stopAt"`
			Done   bool   `json:"done"`
		}
		if err := json.Unmarshal(lines.Bytes(), &msg); err != nil {
			t.Fatalf("%s wrote %q", script, lines.Text())
		}
		switch {
		case msg.Step != "":
			steps = append(steps, msg.Step)
			t.Log(script + ": " + msg.Step)
		case msg.Visit != "":
			u, pg := b.visit(msg.Visit, msg.StopAt)
			reply, _ := json.Marshal(map[string]any{"url": u.String(), "status": pg.Status})
			if _, err := stdin.Write(append(reply, '\n')); err != nil {
				t.Fatal(err)
			}
		case msg.Done:
			done = true
		}
	}
	stdin.Close()
	err := cmd.Wait()
	if err != nil || !done {
		last := "(none)"
		if len(steps) > 0 {
			last = steps[len(steps)-1]
		}
		t.Fatalf("%s failed at %q: %v (%v)\n%s", script, last, err, ctx.Err(), stderr.String())
	}
}
