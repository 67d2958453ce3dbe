// Package testcluster starts a real kube-apiserver and etcd (envtest) with the FormsService CRD installed,
// for the operator's tests. The binaries come from hack/envtest-assets.sh (`make deps-envtest`, run by
// `make test`), which builds them from the Go module proxy and caches them under bin/k8s/<version>.
// Under `go test -short` (make test-fast) the control plane does not start: a TestMain calls SkipSuite
// first, and Start fails for a caller that did not.
package testcluster

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// KubeVersion is the kube-apiserver version hack/envtest-assets.sh builds by default.
const KubeVersion = "1.37.1"

// Cluster is a running control plane.
type Cluster struct {
	Env    *envtest.Environment
	Config *rest.Config
	Scheme *runtime.Scheme
	Root   string // the module root
}

// Start starts kube-apiserver and etcd with the CRDs of config/crd/bases and the Gateway API's
// (GatewayAPICRDs) installed.
func Start() (*Cluster, error) {
	if short() {
		return nil, errors.New("envtest does not start under go test -short (make test-fast): " +
			"call testcluster.SkipSuite first in the TestMain, or skip the test under testing.Short()")
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	assets, err := Assets(root)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	gatewayCRDs, err := GatewayAPICRDs(root)
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     append([]string{filepath.Join(root, "config", "crd", "bases")}, gatewayCRDs...),
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		// kube-apiserver takes 5–10 s to be ready on an idle machine of two cores, more when other
		// builds share them; envtest's default (20 s) fails a loaded run for nothing.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	// envtest's /24 holds 254 Services; controllers/scale creates three or four per FormsService, for a
	// thousand of them.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	return &Cluster{Env: env, Config: cfg, Scheme: scheme, Root: root}, nil
}

// SkipSuite is the first call of a TestMain whose suite starts the control plane: under `go test -short`
// (make test-fast) it says on stdout that the suite is skipped and returns true, and the TestMain returns
// 0 without running the tests.
func SkipSuite() bool {
	if !short() {
		return false
	}
	fmt.Println("skipped: this suite starts kube-apiserver and etcd (envtest), which -short (make test-fast) leaves out; make test runs it")
	return true
}

// short reports `go test -short`, from a TestMain too (which runs before the flags are parsed).
func short() bool {
	f := flag.Lookup("test.short")
	if f == nil {
		return false
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	return f.Value.String() == "true"
}

// Stop stops the control plane.
func (c *Cluster) Stop() error { return c.Env.Stop() }

// Assets finds the folder holding kube-apiserver and etcd: $KUBEBUILDER_ASSETS, else the cache that
// hack/envtest-assets.sh fills. Missing binaries are an error that says how to get them, never a skip.
func Assets(root string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(root, "bin", "k8s", KubeVersion)
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("envtest needs %s in %s: run `make deps-envtest` (or `make test`, which runs it); "+
				"it builds kube-apiserver from the Go module proxy and caches it under bin/k8s/", b, dir)
		}
	}
	return dir, nil
}

// GatewayAPICRDs are the CRD files of the Gateway API's standard channel that the operator's HTTPRoutes
// need (GatewayClass, Gateway, HTTPRoute, ReferenceGrant), taken from the sigs.k8s.io/gateway-api Go
// module at the version go.mod pins: the Go toolchain has it in its module cache (downloading it through
// the module proxy when missing), so no other download is needed.
func GatewayAPICRDs(root string) ([]string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("finding the sigs.k8s.io/gateway-api module: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" {
		return nil, errors.New("the sigs.k8s.io/gateway-api module is not downloaded: run `go mod download`")
	}
	dir := filepath.Join(mod, "config", "crd", "standard")
	var files []string
	for _, kind := range []string{"gatewayclasses", "gateways", "httproutes", "referencegrants"} {
		f := filepath.Join(dir, "gateway.networking.k8s.io_"+kind+".yaml")
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("the Gateway API module lacks its %s CRD: %w", kind, err)
		}
		files = append(files, f)
	}
	return files, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// WriteCounter counts the write requests (POST, PUT, PATCH, DELETE) sent through a rest.Config. It keeps
// them all: Reset only moves the point Writes counts from, so Len and Since still see the whole run.
type WriteCounter struct {
	mu     sync.Mutex
	writes []string
	from   int // Writes starts here (the last Reset)
}

// Counting returns a copy of cfg whose requests are counted by the returned WriteCounter. It wraps any
// transport cfg already had (rest.Config.Wrap), so counters can be stacked.
func Counting(cfg *rest.Config) (*rest.Config, *WriteCounter) {
	c := &WriteCounter{}
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			switch req.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
				c.mu.Lock()
				c.writes = append(c.writes, req.Method+" "+req.URL.Path)
				c.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return out, c
}

// Reset makes Writes count from now.
func (c *WriteCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.from = len(c.writes)
}

// Writes returns the writes counted since the last Reset, as "METHOD path".
func (c *WriteCounter) Writes() []string {
	return c.Since(c.mark())
}

func (c *WriteCounter) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.from
}

// Len is how many writes were sent in the whole run, Resets regardless.
func (c *WriteCounter) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.writes)
}

// Since returns the writes sent after the first n of the run.
func (c *WriteCounter) Since(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes[n:]...)
}

// Request is one request sent to the API server.
type Request struct {
	Method string
	Path   string
	// Watch marks a watch (a long-running GET); List a GET of a collection.
	Watch, List bool
}

// Read reports a GET that is not a watch (a get or a list).
func (r Request) Read() bool { return r.Method == http.MethodGet && !r.Watch }

// Write reports a POST, PUT, PATCH or DELETE.
func (r Request) Write() bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

func (r Request) String() string { return r.Method + " " + r.Path }

// RequestLog records every request sent through a rest.Config: reads, watches and writes.
type RequestLog struct {
	mu   sync.Mutex
	reqs []Request
}

// Recording returns a copy of cfg whose requests are recorded by the returned RequestLog. Like Counting,
// it wraps any transport cfg already had.
func Recording(cfg *rest.Config) (*rest.Config, *RequestLog) {
	l := &RequestLog{}
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			r := Request{Method: req.Method, Path: req.URL.Path, Watch: req.URL.Query().Get("watch") == "true"}
			// A namespaced collection is /api/v1/namespaces/<ns>/<resource>, a cluster-wide one
			// /api/v1/<resource> or /apis/<group>/<version>/<resource>; a named object has one more part.
			parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
			n := len(parts)
			if parts[0] == "apis" {
				n-- // the group
			}
			r.List = req.Method == http.MethodGet && !r.Watch && (n == 3 || (n == 5 && parts[len(parts)-3] == "namespaces"))
			l.mu.Lock()
			l.reqs = append(l.reqs, r)
			l.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return out, l
}

// Len is how many requests were recorded.
func (l *RequestLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// Since returns the requests after the first n.
func (l *RequestLog) Since(n int) []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.reqs[n:]...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Kustomize builds a kustomization folder (relative to the module root) the way `kubectl apply -k`
// does, and returns its objects.
func (c *Cluster) Kustomize(dir string) ([]*unstructured.Unstructured, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(c.Root, dir))
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}
