package testproc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// A Tool is a program the tests run beside the code (Mailpit, versitygw…): built from the module
// proxy by a script under hack/ (a make target runs it) and cached in bin/ under a name that carries its
// version. A test never builds one: that took minutes in the middle of `go test` and hid the cost. A
// missing tool fails the test with the make target that installs it.
type Tool struct {
	// Env names a variable that, when set, is the executable to use instead.
	Env string
	// Cached is its name in bin/ ("mailpit-v1.33.1").
	Cached string
	// Make is the make target that installs it ("deps-mail").
	Make string
}

// Path returns the tool's executable. Under `go test -short` (make test-fast) it skips the test: a test
// that runs a tool is not a unit test, whatever the machine has installed.
func (tl Tool) Path(t testing.TB) string {
	t.Helper()
	SkipShort(t, tl.Cached)
	p, err := tl.find()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// find is $Env, else bin/Cached, else an error that names the make target.
func (tl Tool) find() (string, error) {
	if p := os.Getenv(tl.Env); tl.Env != "" && p != "" {
		return p, nil
	}
	path := filepath.Join(moduleRoot(), "bin", tl.Cached)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s is not installed (%s): run `make %s` (or `make test`, which installs every tool)%s",
			tl.Cached, path, tl.Make, tl.envHint())
	}
	return path, nil
}

func (tl Tool) envHint() string {
	if tl.Env == "" {
		return ""
	}
	return ", or set " + tl.Env + " to an executable"
}

// SkipShort skips the test under `go test -short` (make test-fast), saying what it needs: the helpers
// that start a browser, a tool, a control plane or a cluster call it, so that a new test using them
// stays out of the fast tier by itself.
func SkipShort(t testing.TB, needs string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: not run under -short (make test-fast); make test runs it", needs)
	}
}

// ScriptVersion reads the version a hack/ install script builds by default (the NAME=${NAME:-v1.2.3}
// line), so that a test can check that its package asks for the same one.
func ScriptVersion(script, variable string) (string, error) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(), script))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(variable) + `="?\$\{` + regexp.QuoteMeta(variable) + `:-([^}]+)\}"?`).FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s sets no default %s", script, variable)
	}
	return string(m[1]), nil
}
