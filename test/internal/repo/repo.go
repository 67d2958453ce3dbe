// Package repo finds the repository's root and the tools `make test` installs under bin/, for the tests
// in test/. A missing tool fails the test with the command that installs it; only -short (make test-fast)
// skips a test that needs one.
package repo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/reporoot"
	"github.com/formsservice/formsservice/internal/testproc"
)

// Root is the folder holding the module's go.mod, found upward from the working directory.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := reporoot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Path joins elements onto the repository root.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	return filepath.Join(append([]string{Root(t)}, elem...)...)
}

// Tool returns bin/<name>, failing the test with the install command when it is missing.
func Tool(t testing.TB, name, installedBy string) string {
	t.Helper()
	testproc.SkipShort(t, name)
	p := Path(t, "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run `%s` (`make test` installs every tool)", p, installedBy)
	}
	return p
}

// Run runs a command from the repository root and returns its combined output, failing the test on a
// non-zero exit.
func Run(t testing.TB, env []string, name string, args ...string) string {
	t.Helper()
	out, err := Output(t, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return out
}

// Command prepares a command that runs from the repository root.
func Command(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = Root(t)
	return cmd
}

// Output runs a command from the repository root and returns its combined output and error.
func Output(t testing.TB, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = Root(t)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
