package reporoot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDir_FindsTheModuleRootFromAPackageFolder(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "internal", "reporoot", "reporoot.go")); err != nil {
		t.Fatalf("Dir() = %s, which does not hold this package: %v", dir, err)
	}
}

func TestDir_AnotherModulesGoModIsNotTheRoot(t *testing.T) {
	root, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	// A scratch module's go.mod (a tool build makes one under bin/) is not the root; outside the
	// repository there is none.
	scratch := filepath.Join(t.TempDir(), "scratch")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scratch, "go.mod"), []byte("module example.local/scratch\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if declares(filepath.Join(scratch, "go.mod")) {
		t.Fatal("another module's go.mod counted as ours")
	}
	if !declares(filepath.Join(root, "go.mod")) {
		t.Fatal("our go.mod not recognised")
	}
	t.Chdir(scratch)
	if _, err := Dir(); err == nil {
		t.Fatal("Dir() found a root above a folder outside the repository")
	}
}
