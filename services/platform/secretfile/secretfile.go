// Package secretfile reads a secret mounted as a file (a Kubernetes Secret key, a Docker secret): the
// whole file, with the trailing newline that editors and `echo` add trimmed away.
package secretfile

import (
	"fmt"
	"os"
	"strings"
)

// Read returns the file's content without surrounding white space. An empty file is an error: a secret
// that is silently empty (a wrong key name in a Secret) would otherwise authenticate nothing, or anyone.
func Read(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("secret file %s is empty", path)
	}
	return s, nil
}

// Exposure says whether other users of the machine (neither the file's owner nor its group) can read
// or write the file. A secret is for the service's user and, on Kubernetes, its group (the operator
// mounts Secrets with mode 0440 and the pod's fsGroup).
func Exposure(path string) (readable, writable bool, mode os.FileMode, err error) {
	fi, err := os.Stat(path) // follows the symbolic links of a Secret volume to the file itself
	if err != nil {
		return false, false, 0, fmt.Errorf("secret file: %w", err)
	}
	mode = fi.Mode().Perm()
	return mode&0o004 != 0, mode&0o002 != 0, mode, nil
}
