// Package tests3 runs the Versity S3 Gateway (versitygw), a real S3 server that serves a directory as
// buckets, for tests: on a loopback port the kernel picks, in a folder of the test's, with one access
// key, and stopped when the test ends.
//
// The binary is built from the Go module proxy by `make deps-s3` (hack/install-versitygw.sh, cached as
// bin/versitygw-<version>); a test fails with that command when it is missing, and is skipped under
// `go test -short` (make test-fast). docs/architecture.md (D39) says why this server.
package tests3

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testcerts"
	"github.com/formsservice/formsservice/internal/testproc"
)

// Version is the versitygw release the tests run (hack/install-versitygw.sh builds it).
const Version = "v1.8.0"

// AccessKey and SecretKey are the gateway's root user.
const (
	AccessKey = "formsservice-test"
	SecretKey = "formsservice-test-secret-key"
)

// Server is one versitygw process.
type Server struct {
	// Endpoint is the S3 endpoint, http://127.0.0.1:PORT.
	Endpoint string
	// Dir is the directory it serves: one folder per bucket, one file per object.
	Dir string
	// CAFile is the PEM file of the CA that signed the server's certificate (StartTLS only).
	CAFile string
	proc   *testproc.Process
}

// Env is the AWS_* environment that points a client at the server (objectstore.New reads it).
func (s *Server) Env() map[string]string {
	return map[string]string{"AWS_ENDPOINT_URL_S3": s.Endpoint, "AWS_ACCESS_KEY_ID": AccessKey,
		"AWS_SECRET_ACCESS_KEY": SecretKey, "AWS_REGION": "us-east-1"}
}

// Start runs a server with the given buckets, and returns once it listens.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	return start(t, t.TempDir(), nil, buckets)
}

// StartTLS runs a server that answers HTTPS only, with a certificate for 127.0.0.1 signed by a CA of
// the test's (a private S3 endpoint); CAFile is that CA's PEM file.
func StartTLS(t testing.TB, buckets ...string) *Server {
	t.Helper()
	dir := t.TempDir()
	testcerts.Write(t, dir, "tests3")
	s := start(t, dir, []string{"--cert", filepath.Join(dir, "server.pem"), "--key", filepath.Join(dir, "server-key.pem")}, buckets)
	s.Endpoint = "https://" + strings.TrimPrefix(s.Endpoint, "http://")
	s.CAFile = filepath.Join(dir, "ca.pem")
	return s
}

func start(t testing.TB, dir string, tlsArgs []string, buckets []string) *Server {
	t.Helper()
	data, meta := filepath.Join(dir, "data"), filepath.Join(dir, "meta")
	for _, d := range append([]string{meta}, bucketDirs(data, buckets)...) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Metadata in a sidecar folder, not in extended attributes, which a test's file system may lack.
	args := append([]string{"--access", AccessKey, "--secret", SecretKey, "--port", "127.0.0.1:0"}, tlsArgs...)
	proc := testproc.Start(t, nil, Binary(t), append(args, "posix", "--sidecar", meta, data)...)
	addrs := proc.WaitListeningSockets(t, 1, time.Minute)
	return &Server{Endpoint: "http://" + addrs[0], Dir: data, proc: proc}
}

// bucketDirs are the folders of the buckets: a bucket is a folder of the served directory.
func bucketDirs(data string, buckets []string) []string {
	out := []string{data}
	for _, b := range buckets {
		out = append(out, filepath.Join(data, b))
	}
	return out
}

// Binary returns the versitygw executable: $VERSITYGW, or bin/versitygw-<Version>, which `make deps-s3`
// builds. It skips the test under -short.
func Binary(t testing.TB) string {
	t.Helper()
	return testproc.Tool{Env: "VERSITYGW", Cached: "versitygw-" + Version, Make: "deps-s3"}.Path(t)
}
