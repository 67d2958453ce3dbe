//go:build !formsonly

package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// formsBinary is the forms-only build of this command (formsonly.go) that `formsservice forms` hands
// over to: the same command without the sign-in provider, the dev server and the tools, whose package
// initialisers and code would otherwise take some 10 MiB of the forms process's memory
// (docs/architecture.md, D31).
const formsBinary = "formsservice-forms"

// formsBinaryID is the Go build ID of the formsservice-forms built together with this binary;
// hack/build.sh sets it (-X). Empty in a plain `go build`, which then serves forms itself.
var formsBinaryID string

// handOffForms replaces this process with formsservice-forms when args run the forms service and the
// binary beside this one is the one built with it (same build ID: never an older or foreign file).
// Otherwise, or if exec fails, it returns and this process serves forms itself, as it always could.
func handOffForms(args []string) {
	if formsBinaryID == "" || len(args) == 0 || args[0] != "forms" {
		return
	}
	self, err := os.Executable()
	if err != nil {
		return
	}
	path := filepath.Join(filepath.Dir(self), formsBinary)
	if id, err := goBuildID(path); err != nil || id != formsBinaryID {
		return
	}
	err = syscall.Exec(path, append([]string{path}, args...), os.Environ()) // returns only on failure
	fmt.Fprintf(os.Stderr, "formsservice: serving forms in this process (exec %s: %v)\n", path, err)
}

// goBuildID reads the Go build ID of an ELF executable from its .note.go.buildid section (the value
// `go tool buildid` prints) without running it.
func goBuildID(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", errors.New("no Go build ID note")
	}
	note, err := s.Data()
	if err != nil {
		return "", err
	}
	// An ELF note: name size, description size, type (4: the Go build ID), the name "Go\0\0", the ID.
	if len(note) < 16 {
		return "", errors.New("short Go build ID note")
	}
	nameSize, idSize, typ := f.ByteOrder.Uint32(note), f.ByteOrder.Uint32(note[4:]), f.ByteOrder.Uint32(note[8:])
	if nameSize != 4 || typ != 4 || string(note[12:16]) != "Go\x00\x00" || uint64(idSize) > uint64(len(note)-16) {
		return "", errors.New("malformed Go build ID note")
	}
	return string(note[16 : 16+idSize]), nil
}
