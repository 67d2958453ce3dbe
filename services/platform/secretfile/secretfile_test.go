package secretfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRead_TrimsTheTrailingNewline(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s")
	if err := os.WriteFile(p, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p)
	if err != nil || got != "s3cret" {
		t.Fatalf("Read = %q, %v; want s3cret", got, err)
	}
}

func TestRead_EmptyOrMissingFileIsAnError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(p, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err == nil {
		t.Error("an empty secret file was accepted")
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing secret file was accepted")
	}
}
