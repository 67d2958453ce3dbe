package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	formstore "github.com/formsservice/formsservice/services/forms/store"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/platform/config"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testredis"
)

// formsEnv is the environment the commands see: the store and the allowed origin.
func formsEnv(redisURL string) func(string) string {
	return func(k string) string {
		switch k {
		case "REDIS_URL":
			return redisURL
		case "FORMSSERVICE_ALLOWED_ORIGINS":
			return "https://www.example.com"
		}
		return ""
	}
}

// startFormsCommand runs `formsservice forms` as production does (its own process's run) and waits
// for /readyz.
func startFormsCommand(t *testing.T, redisURL string) string {
	t.Helper()
	return startCommand(t, "forms", formsEnv(redisURL))
}

// startCommand runs a serving command (forms, dev) on a loopback port the kernel picks, with getenv as its
// environment, stops it when the test ends, and returns its base URL once /readyz answers 200 (the dev
// server's: http://localhost:<port>, its issuer).
func startCommand(t *testing.T, name string, getenv func(string) string, args ...string) string {
	t.Helper()
	url, _, _ := startCommandStop(t, name, getenv, args...)
	return url
}

// startCommandStop is startCommand that also returns its logs and a function that stops it and waits
// until it has (the test's end calls it too; a second call does nothing).
func startCommandStop(t *testing.T, name string, getenv func(string) string, args ...string) (string, *testproc.Buffer, func()) {
	t.Helper()
	logs := &testproc.Buffer{Max: 1 << 20}
	logWriter, listening := testproc.WatchListening(logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{name, "--addr", "127.0.0.1:0"}, args...), getenv, strings.NewReader(""), io.Discard, logWriter)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s command: %v", name, err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("%s command did not stop", name)
			}
		})
	}
	t.Cleanup(stop)
	var addr string
	select {
	case addr = <-listening:
	case err := <-done:
		t.Fatalf("%s command exited before listening: %v\n%s", name, err, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("%s command reported no listening address\n%s", name, logs.String())
	}
	url := "http://" + addr
	if name == "dev" { // its issuer: localhost of the port 127.0.0.1 got (D74)
		url = "http://localhost:" + addr[strings.LastIndex(addr, ":")+1:]
	}
	testwait.Until(t, 10*time.Second, name+" command ready (Redis reachable)", func() error {
		select {
		case err := <-done:
			t.Fatalf("%s command exited: %v", name, err)
		default:
		}
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("readyz %d", resp.StatusCode)
		}
		return nil
	})
	return url, logs, stop
}

func formsPost(t *testing.T, url, path, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	req.Header.Set("Origin", "https://www.example.com")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func formsTool(t *testing.T, redisURL string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(t.Context(), args, formsEnv(redisURL), strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestFormsCommand_ServesAndExportAndForgetSeeWhatWasStored(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{AppendFsync: "no"}) // appendonly yes: what forms.durability process needs
	url := startFormsCommand(t, rs.URL())
	if code := formsPost(t, url, "/waitlist", `{"email":"Ada@Example.com","consent":true,"name":"Ada"}`); code != 201 {
		t.Fatalf("waitlist: %d", code)
	}
	if code := formsPost(t, url, "/waitlist", `{"email":"bob@example.com","consent":true}`); code != 201 {
		t.Fatalf("waitlist: %d", code)
	}
	if code := formsPost(t, url, "/contact", `{"name":"Ada","email":"ada@example.com","message":"Hello there, team."}`); code != 201 {
		t.Fatalf("contact: %d", code)
	}

	out, _, err := formsTool(t, rs.URL(), "export", "waitlist", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][0] != "ada@example.com" || rows[2][0] != "bob@example.com" {
		t.Fatalf("export waitlist csv: %v %v\n%s", rows, err, out)
	}
	out, _, err = formsTool(t, rs.URL(), "export", "--format", "jsonl", "contact")
	if err != nil || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"message":"Hello there, team."`) {
		t.Fatalf("export contact jsonl: %v\n%s", err, out)
	}
	file := filepath.Join(t.TempDir(), "out.jsonl")
	if _, _, err := formsTool(t, rs.URL(), "export", "waitlist", "--format", "jsonl", "-o", file); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("export file: %v %v", fi, err)
	}

	out, _, err = formsTool(t, rs.URL(), "forget", "--email", "ADA@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "erased ada@example.com: 1 waitlist entry, 1 contact message (") {
		t.Fatalf("forget said %q", out)
	}
	out, _, _ = formsTool(t, rs.URL(), "export", "waitlist", "--format", "jsonl")
	if strings.Contains(out, "ada@") || !strings.Contains(out, "bob@example.com") {
		t.Fatalf("after forget: %s", out)
	}
	out, _, _ = formsTool(t, rs.URL(), "forget", "--email", "ada@example.com")
	if !strings.HasPrefix(out, "erased ada@example.com: 0 waitlist entries, 0 contact messages") {
		t.Fatalf("second forget said %q", out)
	}
}

func TestFormsTools_BadUsage_Refused(t *testing.T) {
	rs := testredis.Start(t)
	for _, args := range [][]string{
		{"export"},
		{"export", "users"},
		{"export", "waitlist", "--format", "xml"},
		{"export", "waitlist", "contact"},
		{"forget"},
		{"forget", "--email", "not-an-address"},
	} {
		if _, _, err := formsTool(t, rs.URL(), args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"export", "waitlist"}, devEnv(t, nil), strings.NewReader(""), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Fatalf("without a store: %v", err)
	}
}

func TestDevServer_FormsWorkOnEmbeddedStoreWithoutRateLimit(t *testing.T) {
	url := startCommand(t, "dev", devEnv(t, nil))
	post := func(path, origin, body string) int {
		req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/waitlist", url, `{"email":"dev@example.com","consent":true}`); code != 201 {
		t.Fatalf("dev server did not accept a waitlist submission from its own origin: %d", code)
	}
	if code := post("/waitlist", "http://localhost:8080", `{"email":"DEV@example.com","consent":true}`); code != 200 {
		t.Fatalf("duplicate from the fixture origin: %d", code)
	}
	for i := range 70 { // above the production default of 60: the dev server has no rate limit
		if code := post("/contact", url, `{"name":"Dev","email":"dev@example.com","message":"Message number `+strconv.Itoa(i)+`"}`); code != 201 {
			t.Fatalf("contact %d: %d", i, code)
		}
	}
	if code := post("/contact", "https://elsewhere.example", `{}`); code != 403 {
		t.Fatalf("foreign origin: %d", code)
	}
}

// A declared form's submissions are exported by the form's id and erased by forget, whether or not the
// configuration in use declares the form.
func TestFormsTools_ExportAndForgetDeclaredForms(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{AppendFsync: "no"})
	rdb := rs.Client()
	st, err := formstore.New(rdb, formstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"Ada@Example.com", "bob@example.com"} {
		rec, _ := json.Marshal(formstore.FormRecord{Form: "demo", Fields: formstore.Values{{Name: "email", Value: addr}, {Name: "company", Value: "Acme"}},
			ReceivedAt: time.Now().UTC()})
		if r, err := st.AddSubmission(t.Context(), formstore.Submission{Form: "demo", Client: netip.MustParseAddr("127.0.0.1"), Record: rec},
			config.DurabilityProcess); err != nil || r.Outcome != formstore.Stored {
			t.Fatalf("%+v %v", r, err)
		}
	}
	out, _, err := formsTool(t, rs.URL(), "export", "demo")
	rows, _ := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 3 || strings.Join(rows[0], ",") != "id,received_at,email,company,additional,origin" || rows[1][2] != "Ada@Example.com" {
		t.Fatalf("export demo: %v\n%s", err, out)
	}
	if _, errOut, err := formsTool(t, rs.URL(), "export", "nope"); err == nil || !strings.Contains(errOut+err.Error(), "demo") {
		t.Errorf("an unknown form: %v %s", err, errOut)
	}
	out, _, err = formsTool(t, rs.URL(), "forget", "--email", "ada@example.com")
	if err != nil || !strings.Contains(out, ", 1 submission of form demo (") {
		t.Fatalf("forget said %q (%v)", out, err)
	}
	out, _, _ = formsTool(t, rs.URL(), "export", "demo", "--format", "jsonl")
	if strings.Contains(strings.ToLower(out), "ada@") || !strings.Contains(out, "bob@example.com") {
		t.Fatalf("after forget: %s", out)
	}
}
