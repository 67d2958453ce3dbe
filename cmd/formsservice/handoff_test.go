package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testredis"
)

// The forms-only build links the forms service and what serving it needs, and not the sign-in provider
// (fosite and the OpenTelemetry, gRPC and protobuf code it brings; go-jose: a client's keys are checked in config by their JSON alone), the dev server or the tools: their
// package initialisers and code are what made the forms process twice the size of a plain Fiber one
// (docs/architecture.md, D31).
func TestFormsOnlyBuild_LeavesOutTheSignInProviderAndTheDevServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "formsonly", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/formsservice/formsservice/services/forms") {
		t.Fatalf("the forms-only build does not link services/forms:\n%s", out)
	}
	for _, dep := range deps {
		for _, unwanted := range []string{"github.com/ory/", "github.com/go-jose/", "go.opentelemetry.io/", "google.golang.org/grpc", "github.com/go-webauthn/",
			"github.com/alicebob/miniredis", "github.com/formsservice/formsservice/services/auth", "github.com/formsservice/formsservice/services/demo",
			"github.com/formsservice/formsservice/services/health", "github.com/formsservice/formsservice/services/platform/mail/devmail"} {
			if strings.HasPrefix(dep, unwanted) {
				t.Errorf("the forms-only build links %s", dep)
			}
		}
	}
}

// `formsservice forms` runs as the formsservice-forms built with it (hack/build.sh), and serves forms
// itself when the binary beside it is any other file: never an older or foreign build.
func TestFormsCommand_HandsOverToTheFormsBinaryBuiltWithIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the hand-over reads ELF build IDs and /proc")
	}
	testproc.SkipShort(t, "hack/build.sh") // builds both binaries
	dir := t.TempDir()
	build := exec.Command(filepath.Join("..", "..", "hack", "build.sh"), dir)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("hack/build.sh: %v\n%s", err, out)
	}
	full, forms := filepath.Join(dir, "formsservice"), filepath.Join(dir, formsBinary)
	want, err := exec.Command("go", "tool", "buildid", forms).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := goBuildID(forms); err != nil || got != strings.TrimSpace(string(want)) {
		t.Fatalf("goBuildID = %q, %v; go tool buildid says %q", got, err, want)
	}
	rs := testredis.Start(t, testredis.Options{AppendFsync: "no"}) // appendonly yes: what forms.durability process needs

	// serveForms starts `formsservice forms`, checks that it takes a submission, and returns the
	// executable of the process that serves.
	serveForms := func() string {
		p := testproc.Start(t, []string{"REDIS_URL=" + rs.URL(), "FORMSSERVICE_ALLOWED_ORIGINS=https://www.example.com"},
			full, "forms", "-addr", "127.0.0.1:0")
		url := "http://" + p.WaitListening(t, 30*time.Second)
		p.WaitReady(t, url+"/readyz", 30*time.Second)
		exe, err := os.Readlink("/proc/" + strconv.Itoa(p.Pid()) + "/exe")
		if err != nil {
			t.Fatal(err)
		}
		if code := formsPost(t, url, "/waitlist", `{"email":"ada+`+strconv.Itoa(p.Pid())+`@example.com","consent":true}`); code != 201 {
			t.Fatalf("waitlist from %s: %d\n%s", exe, code, p.Output())
		}
		p.Stop()
		return exe
	}
	if exe := serveForms(); exe != forms {
		t.Fatalf("formsservice forms runs as %s, want %s", exe, forms)
	}

	// Another binary in its place (here a copy of formsservice: a different build ID) is not run.
	if err := os.Remove(forms); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(full, forms); err != nil {
		t.Fatal(err)
	}
	if exe := serveForms(); exe != full {
		t.Fatalf("with a foreign %s beside it, formsservice forms runs as %s, want itself", formsBinary, exe)
	}
}
