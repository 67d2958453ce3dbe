package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testwait"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testproc.RemoveBuilds()
	os.Exit(code)
}

// devEnv is an environment with a state folder of the test's own (so that a dev server a person runs on
// this machine, or another test's, is never found), plus vars.
func devEnv(t *testing.T, vars map[string]string) func(string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	return func(k string) string {
		if k == "FORMSSERVICE_DEV_STATE_DIR" {
			return dir
		}
		return vars[k]
	}
}

// runTool runs one command with getenv and returns its stdout and stderr.
func runTool(t *testing.T, getenv func(string) string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(t.Context(), args, getenv, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

// The issue: `users list` next to a running `make run` said "no store configured"; the embedded store's
// address had to be copied out of a log line.
func TestDevServer_ToolsFindItsStoreUntilItStops(t *testing.T) {
	env := devEnv(t, nil)
	url, logs, stop := startCommandStop(t, "dev", env)
	out, errOut, err := runTool(t, env, "users", "list")
	if err != nil || !strings.Contains(out, "\tdemo@example.com\tDemo User\t") {
		t.Fatalf("users list next to the dev server: %v\n%s%s", err, out, errOut)
	}
	if !strings.HasPrefix(errOut, "using the store of the dev server at "+url+" (REDIS_URL=redis://127.0.0.1:") {
		t.Errorf("the tool does not say whose store it uses: %q", errOut)
	}
	var ready map[string]any
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"dev server ready"`) {
			json.Unmarshal([]byte(l), &ready) //nolint:errcheck // checked below
		}
	}
	state, _ := ready["state_file"].(string)
	if ready["url"] != url || ready["embedded_store"] != true || state == "" || !strings.HasPrefix(ready["redis_url"].(string), "redis://127.0.0.1:") {
		t.Fatalf("the ready line: %v", ready)
	}
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file %s: %v %v", state, fi, err)
	}

	stop()
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state file outlived the dev server: %v", err)
	}
	if _, _, err := runTool(t, env, "users", "list"); err == nil || !strings.Contains(err.Error(), "no store configured") {
		t.Errorf("after the dev server stopped: %v", err)
	}
}

// writeState puts a state file where a dev server would, for pid.
func writeState(t *testing.T, getenv func(string) string, s devState, pid int) string {
	t.Helper()
	path, _, err := writeDevState(getenv, s)
	if err != nil {
		t.Fatal(err)
	}
	s.PID = pid
	b, _ := json.Marshal(s)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFindDevState_StaleFilesRemoved_SeveralServersNeedAChoice(t *testing.T) {
	env := devEnv(t, nil)
	if s, err := findDevState(env); s != nil || err != nil {
		t.Fatalf("no folder yet: %v %v", s, err)
	}
	// a dev server that was killed: its process is gone
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := writeState(t, env, devState{URL: "http://127.0.0.1:9999", RedisURL: "redis://127.0.0.1:1"}, gone.Process.Pid)
	if s, err := findDevState(env); s != nil || err != nil {
		t.Fatalf("a dead server's state was used: %v %v", s, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale state file was left: %v", err)
	}

	writeState(t, env, devState{URL: "http://localhost:41234", RedisURL: "redis://127.0.0.1:2"}, os.Getpid())
	writeState(t, env, devState{URL: "http://localhost:41235", RedisURL: "redis://127.0.0.1:3"}, os.Getpid())
	_, err := findDevState(env)
	if err == nil || !strings.Contains(err.Error(), "several dev servers run: http://localhost:41234 (REDIS_URL=redis://127.0.0.1:2), http://localhost:41235") {
		t.Fatalf("two dev servers, neither the default: %v", err)
	}
	// The default address, 127.0.0.1:8080, is announced as http://localhost:8080 (D74); so is an ADDR
	// on another loopback name.
	writeState(t, env, devState{URL: "http://localhost:8080", RedisURL: "redis://127.0.0.1:4"}, os.Getpid())
	if s, err := findDevState(env); err != nil || s.RedisURL != "redis://127.0.0.1:4" {
		t.Fatalf("with one on the default address: %v %v", s, err)
	}
	for addr, redisURL := range map[string]string{"[::1]:41235": "redis://127.0.0.1:3", "localhost:41234": "redis://127.0.0.1:2"} {
		if s, err := findDevState(devEnv2(env, map[string]string{"ADDR": addr})); err != nil || s.RedisURL != redisURL {
			t.Errorf("ADDR=%s: %v %v, want the store %s", addr, s, err, redisURL)
		}
	}
}

// devEnv2 is env with vars set over it.
func devEnv2(env func(string) string, vars map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return env(k)
	}
}

// A state folder others can write to could hold a file that points the tools at someone else's store.
func TestDevState_FolderOpenToOthers_NeitherWrittenNorRead(t *testing.T) {
	env := devEnv(t, nil)
	dir := devStateDir(env)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeState(t, env, devState{URL: "http://127.0.0.1:8080", RedisURL: "redis://127.0.0.1:4"}, os.Getpid())
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if s, _ := findDevState(env); s != nil {
		t.Errorf("read a state file from a folder open to everyone: %+v", s)
	}
	if _, _, err := writeDevState(env, devState{URL: "http://127.0.0.1:8081"}); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Errorf("wrote into a folder open to everyone: %v", err)
	}
}

// A dead store is named, with its address and where the address came from, once; go-redis's own lines
// ("redis: ... pool.go: ... failed to dial") never reach the terminal. The binary runs as its own
// process because go-redis writes to the process's stderr, not to run's.
func TestTools_DeadStore_ReportedOnceAsUnreachableWithItsAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	bin := testproc.Build(t, "./cmd/formsservice")
	for _, args := range [][]string{{"users", "list"}, {"export", "waitlist"}, {"deliveries", "list"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"REDIS_URL=redis://" + dead + "/0", "FORMSSERVICE_DEV_STATE_DIR=" + t.TempDir()}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		want := "formsservice: the store at redis://" + dead + "/0 is unreachable: dial tcp " + dead + ": connect: connection refused (it comes from REDIS_URL: is that Redis running?)\n"
		if err == nil || stderr.String() != want || stdout.Len() != 0 {
			t.Errorf("%v: %v\nstdout %q\nstderr %q\nwant   %q", args, err, stdout.String(), stderr.String(), want)
		}
	}
}

func TestDevServer_TextLogs_BannerSaysWhatIsWhere(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "my-app.yaml")
	if err := os.WriteFile(cfg, []byte("allowedOrigins: [http://localhost:3000]\nauth:\n  clients:\n  - clientID: my-app\n    redirectURIs: [http://localhost:3000/callback]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs testproc.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"dev", "--addr", "127.0.0.1:0", "--log-format", "text", "--config", cfg}, devEnv(t, nil), strings.NewReader(""), io.Discard, &logs)
	}()
	urlRe := regexp.MustCompile(`formsservice dev is ready: forms, auth and health on (http://\S+)\n`)
	var url string
	testwait.For(t, 30*time.Second, "the banner", func() bool {
		if m := urlRe.FindStringSubmatch(logs.String()); m != nil {
			url = m[1]
		}
		return url != "" && strings.Contains(logs.String(), "Ctrl+C")
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{
		"formsservice dev is ready: forms, auth and health on " + url + "\n",
		"  demo          " + url + "/demo/",
		"  console       " + url + "/console/  (users, audit trail, clients; the dev user is an admin)\n",
		"  dev user      demo@example.com / demo-password  (in the group formsservice-admins)\n",
		"  passkeys      " + url + "/account/passkeys  (add one once signed in",
		"  config        " + cfg + " (reloaded when you save it)\n",
		"    origins     http://localhost:3000\n",
		"    clients     my-app\n",
		"  store         REDIS_URL=redis://127.0.0.1:",
		"(embedded, in memory: lost on exit)",
		"find this store by themselves",
		" INF ", // the logs themselves are text lines too
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the text output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `{"time"`) || strings.Contains(out, "\x1b[") {
		t.Errorf("JSON lines or colours in text output to a file:\n%s", out)
	}
}

// --log-format auto (the default) writes text to a terminal and JSON to anything else; the JSON case is
// every other test here, which reads the "dev server ready" line.
func TestDevServer_OnATerminal_WritesTextWithColour(t *testing.T) {
	master, tty := openPTY(t)
	var out testproc.Buffer
	go io.Copy(&out, master) //nolint:errcheck // ends when the test closes the terminal
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"dev", "--addr", "127.0.0.1:0"}, devEnv(t, nil), strings.NewReader(""), io.Discard, tty)
	}()
	testwait.For(t, 30*time.Second, "the banner on the terminal", func() bool {
		return strings.Contains(out.String(), "formsservice dev is ready")
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, `"msg":`) || !strings.Contains(s, "\x1b[") {
		t.Errorf("a terminal got JSON or no colour:\n%q", s)
	}
}

// openPTY opens a pseudo-terminal: the end a program writes to (tty) and the end that reads it.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

func TestDevServer_Root_LeadsToTheDemo_ProductionHasNoSuchPage(t *testing.T) {
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	url := startCommand(t, "dev", devEnv(t, nil))
	res, err := noFollow.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/demo/" {
		t.Errorf("dev GET /: %d %q, want 302 to /demo/", res.StatusCode, res.Header.Get("Location"))
	}
}

// On the dev server a refused form post is explained in the log at info (services/platform/refusal):
// the answer is the contract's, the log line names what was sent and what is allowed.
func TestDevServer_RefusedOrigin_ExplainedInTheLog(t *testing.T) {
	url, logs, _ := startCommandStop(t, "dev", devEnv(t, nil))
	req, _ := http.NewRequest(http.MethodPost, url+"/waitlist", strings.NewReader(`{"email":"ada@example.com","consent":true}`))
	req.Header.Set("Origin", "http://localhost:5173")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 403 || string(body) != `{"status":"error"}` {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	testwait.For(t, 5*time.Second, "the refusal's log line", func() bool {
		for l := range strings.SplitSeq(logs.String(), "\n") {
			if strings.Contains(l, `"level":"INFO"`) && strings.Contains(l, `"reason":"origin_not_allowed"`) &&
				strings.Contains(l, `"origin":"http://localhost:5173"`) && strings.Contains(l, `"allowed":["http://localhost:8080"`) {
				return true
			}
		}
		return false
	})
}
