// Package tests3 runs SeaweedFS (`weed mini`: master, volume server, filer and S3 gateway in one
// process), a real S3-compatible object store, for tests: on loopback, in a folder of the test's, with
// one access key, and stopped when the test ends.
//
// The binary is built from the Go module proxy by hack/install-seaweedfs.sh (cached as
// bin/weed-<version>); Start runs the script when it is missing. docs/architecture.md (D39) says why
// SeaweedFS (Apache 2.0; the MinIO server is AGPL).
package tests3

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
)

// Version is the SeaweedFS module version the tests run (hack/install-seaweedfs.sh builds it).
const Version = "v0.0.0-20261109003541-7506e5f91cd6"

// AccessKey and SecretKey are the one identity the server knows (an admin).
const (
	AccessKey = "formsservice-test"
	SecretKey = "formsservice-test-secret-key"
)

// Server is one `weed mini` process.
type Server struct {
	// Endpoint is the S3 endpoint, http://127.0.0.1:PORT.
	Endpoint string
	proc     *testproc.Process
}

// Env is the AWS_* environment that points a client at the server (objectstore.New reads it).
func (s *Server) Env() map[string]string {
	return map[string]string{"AWS_ENDPOINT_URL_S3": s.Endpoint, "AWS_ACCESS_KEY_ID": AccessKey,
		"AWS_SECRET_ACCESS_KEY": SecretKey, "AWS_REGION": "us-east-1"}
}

// Start runs a server with the given buckets created, and waits until its S3 gateway answers.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	dir := t.TempDir()
	cfg := map[string]any{"identities": []map[string]any{{
		"name":        "test",
		"credentials": []map[string]string{{"accessKey": AccessKey, "secretKey": SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}}
	b, _ := json.Marshal(cfg)
	s3cfg := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(s3cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// Each server of the process listens on a port and, by SeaweedFS's convention, gRPC on port+10000:
	// testredis.FreePort finds ports free at both.
	port := func() string { return strconv.Itoa(testredis.FreePort(t)) }
	s3Port := port()
	args := []string{"mini", "-dir=" + filepath.Join(dir, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + port(), "-volume.port=" + port(), "-filer.port=" + port(), "-s3.port=" + s3Port,
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false", "-master.telemetry=false",
		"-s3.config=" + s3cfg, "-filer.localSocket=" + filepath.Join(dir, "filer.sock"),
		"-s3.localSocket=" + filepath.Join(dir, "s3.sock")}
	if len(buckets) > 0 {
		args = append(args, "-bucket="+strings.Join(buckets, ","))
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	proc := testproc.Start(t, nil, Binary(t), args...)
	s := &Server{Endpoint: "http://127.0.0.1:" + s3Port, proc: proc}
	// Up when the gateway answers a request for the bucket (403 without a signature; 404 while the
	// bucket is not created yet, or a connection refused while the gateway starts).
	probe := s.Endpoint + "/"
	if len(buckets) > 0 {
		probe += buckets[0]
	}
	testwait.For(t, 2*time.Minute, "SeaweedFS's S3 gateway at "+s.Endpoint, func() bool {
		if exited, err := proc.Exited(); exited {
			t.Fatalf("weed mini exited (%v):\n%s", err, proc.Output())
		}
		res, err := probeClient.Head(probe)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusForbidden || res.StatusCode == http.StatusOK
	})
	return s
}

var probeClient = &http.Client{Timeout: 2 * time.Second}

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// Binary returns the weed executable: $SEAWEEDFS, or bin/weed-<Version>, built by
// hack/install-seaweedfs.sh when missing (once per test binary).
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SEAWEEDFS"); p != "" {
		return p
	}
	binaryOnce.Do(func() {
		root := moduleRoot()
		binaryPath = filepath.Join(root, "bin", "weed-"+Version)
		if _, err := os.Stat(binaryPath); err == nil {
			return
		}
		cmd := exec.Command(filepath.Join(root, "hack", "install-seaweedfs.sh"))
		cmd.Env = append(os.Environ(), "SEAWEEDFS_VERSION="+Version)
		out, err := cmd.CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("hack/install-seaweedfs.sh: %v\n%s", err, out)
			return
		}
		binaryPath = strings.TrimSpace(string(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:]))
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}
