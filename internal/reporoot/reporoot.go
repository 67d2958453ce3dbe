// Package reporoot finds the repository's root (the folder of the module's go.mod) from the working
// directory, which `go test` sets to the package's folder. The test helpers used to take it from
// runtime.Caller, which names the source file's path as compiled: under -trimpath (make test builds
// that way, so that a clone in any folder shares Go's build cache) that is a module path, not a folder.
package reporoot

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Module is the module whose go.mod marks the root.
const Module = "github.com/formsservice/formsservice"

// Dir is the nearest folder at or above the working directory whose go.mod declares Module. A go.mod of
// another module on the way (a scratch module of a tool build) is passed over.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if declares(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of " + Module + " at or above the working directory")
		}
		dir = parent
	}
}

// declares says whether the go.mod at path is Module's.
func declares(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == Module
		}
	}
	return false
}
