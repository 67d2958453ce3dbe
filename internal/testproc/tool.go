package testproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A Tool is a program the tests run beside the code (Mailpit, versitygw…): built from the module
// proxy by a script under hack/ and cached in bin/.
type Tool struct {
	// Env names a variable that, when set, is the executable to use instead.
	Env string
	// Cached is its name in bin/ ("mailpit-v1.33.1").
	Cached string
	// Script builds it when missing and prints its path on its last line ("hack/install-mailpit.sh"),
	// run with ScriptEnv added to the environment.
	Script    string
	ScriptEnv []string
}

var (
	toolMu    sync.Mutex
	toolPaths = map[string]string{}
)

// Path returns the tool's executable, building it once per test binary when bin/ lacks it.
func (tl Tool) Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(tl.Env); tl.Env != "" && p != "" {
		return p
	}
	toolMu.Lock()
	defer toolMu.Unlock()
	if p, ok := toolPaths[tl.Cached]; ok {
		return p
	}
	root := moduleRoot()
	path := filepath.Join(root, "bin", tl.Cached)
	if _, err := os.Stat(path); err != nil {
		cmd := exec.Command(filepath.Join(root, tl.Script))
		cmd.Env = append(os.Environ(), tl.ScriptEnv...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatal(fmt.Errorf("%s: %v\n%s", tl.Script, err, out))
		}
		path = strings.TrimSpace(string(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:]))
	}
	toolPaths[tl.Cached] = path
	return path
}
