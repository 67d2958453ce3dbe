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
