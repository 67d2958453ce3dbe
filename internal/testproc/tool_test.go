package testproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTool_Missing_SaysWhichMakeTargetInstallsIt(t *testing.T) {
	_, err := Tool{Env: "FORMSSERVICE_TEST_NO_SUCH_TOOL", Cached: "no-such-tool-v0.0.0", Make: "deps-nothing"}.find()
	if err == nil || !strings.Contains(err.Error(), "run `make deps-nothing`") || !strings.Contains(err.Error(), "FORMSSERVICE_TEST_NO_SUCH_TOOL") {
		t.Fatalf("got %v, want an error naming `make deps-nothing` and the variable", err)
	}
}

func TestTool_Env_WinsOverBin(t *testing.T) {
	t.Setenv("FORMSSERVICE_TEST_TOOL", "/some/where/tool")
	p, err := Tool{Env: "FORMSSERVICE_TEST_TOOL", Cached: "no-such-tool-v0.0.0", Make: "deps-nothing"}.find()
	if err != nil || p != "/some/where/tool" {
		t.Fatalf("got %q, %v", p, err)
	}
}

func TestScriptVersion_ReadsTheDefault(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "install-x.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nX_VERSION=${X_VERSION:-v1.2.3}\nY_VERSION=\"${Y_VERSION:-4.5.6}\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(moduleRoot(), script)
	if err != nil {
		t.Skip("the temporary folder is not reachable from the module root:", err)
	}
	for v, want := range map[string]string{"X_VERSION": "v1.2.3", "Y_VERSION": "4.5.6"} {
		if got, err := ScriptVersion(rel, v); err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", v, got, err, want)
		}
	}
	if _, err := ScriptVersion(rel, "Z_VERSION"); err == nil {
		t.Error("no error for a variable the script does not set")
	}
}
