package cluster

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// Impersonator is a plain-HTTP proxy in front of the API server that sends every request as one
// ServiceAccount (Kubernetes impersonation, with the admin's credentials) and records each request the
// API server forbids. A process pointed at its kubeconfig gets exactly that ServiceAccount's permissions.
type Impersonator struct {
	// KubeConfig is a kubeconfig file that reaches the API server through the proxy.
	KubeConfig string

	mu        sync.Mutex
	forbidden []string
	requests  int
	log       []Request
}

// Request is one request that went through the proxy.
type Request struct {
	Method string
	// Path is the URL path, e.g. /api/v1/namespaces/shop/secrets/shop-signing-key.
	Path string
	// Query is the raw query (watch=true, labelSelector=...).
	Query  string
	Status int
}

// ImpersonateServiceAccount starts a proxy that acts as system:serviceaccount:<namespace>:<name>, with the
// groups the API server gives every ServiceAccount. It stops when the test ends.
func (c *Cluster) ImpersonateServiceAccount(t testing.TB, namespace, name string) *Impersonator {
	t.Helper()
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	im := &Impersonator{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     transport,
		FlushInterval: -1, // watches stream
		ModifyResponse: func(resp *http.Response) error {
			im.mu.Lock()
			defer im.mu.Unlock()
			im.requests++
			im.log = append(im.log, Request{Method: resp.Request.Method, Path: resp.Request.URL.Path, Query: resp.Request.URL.RawQuery, Status: resp.StatusCode})
			if resp.StatusCode != http.StatusForbidden {
				return nil
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			im.forbidden = append(im.forbidden, fmt.Sprintf("%s %s: %s", resp.Request.Method, resp.Request.URL.RequestURI(), body))
			return nil
		},
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)

	im.KubeConfig = filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: envtest
  cluster:
    server: %s
contexts:
- name: impersonated
  context:
    cluster: envtest
    user: impersonated
current-context: impersonated
users:
- name: impersonated
  user: {}
`, srv.URL)
	if err := os.WriteFile(im.KubeConfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return im
}

// Forbidden lists the requests the API server refused with 403 so far.
func (im *Impersonator) Forbidden() []string {
	im.mu.Lock()
	defer im.mu.Unlock()
	return append([]string(nil), im.forbidden...)
}

// Requests counts the requests that went through so far.
func (im *Impersonator) Requests() int {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.requests
}

// Log lists every request that went through so far.
func (im *Impersonator) Log() []Request {
	im.mu.Lock()
	defer im.mu.Unlock()
	return append([]Request(nil), im.log...)
}
