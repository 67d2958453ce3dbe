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

func TestExposure_OthersBitsOnly(t *testing.T) {
	dir := t.TempDir()
	for mode, want := range map[os.FileMode][2]bool{
		0o600: {false, false}, 0o440: {false, false}, 0o640: {false, false},
		0o644: {true, false}, 0o444: {true, false}, 0o666: {true, true}, 0o602: {false, true},
	} {
		p := filepath.Join(dir, mode.String())
		if err := os.WriteFile(p, []byte("s"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // WriteFile's mode passes through the umask
			t.Fatal(err)
		}
		// Through a symbolic link, as in a Kubernetes Secret volume.
		link := p + ".link"
		if err := os.Symlink(p, link); err != nil {
			t.Fatal(err)
		}
		r, w, got, err := Exposure(link)
		if err != nil || r != want[0] || w != want[1] || got != mode {
			t.Errorf("%v: readable %v writable %v mode %v err %v; want %v", mode, r, w, got, err, want)
		}
	}
	if _, _, _, err := Exposure(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file has no exposure error")
	}
}
