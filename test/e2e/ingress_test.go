//go:build e2e

package e2e_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/formsservice/formsservice/test/contract"
	"github.com/formsservice/formsservice/test/internal/cluster"
)

// The FormsService's public host names in the test. .test is reserved (RFC 2606): no resolver knows
// them, so the Go clients dial the ingress for them themselves and Chromium gets a host-resolver rule.
const (
	ingressHost      = "id.acme.e2e.test"
	ingressFormsHost = "forms.acme.e2e.test"
	ingressTLSSecret = "acme-e2e-tls"
)

// ingress is the way in through the cluster's ingress controller, when the script that runs the test
// started one (hack/node-cluster/e2e.sh: Traefik, see hack/node-cluster/traefik.yaml):
//
//	FORMSSERVICE_E2E_INGRESS          host:port the controller's TLS entry point listens on (loopback)
//	FORMSSERVICE_E2E_INGRESS_CLASS    its IngressClass
//	FORMSSERVICE_E2E_INGRESS_PROXIES  the network its connections to the pods come from (trustedProxies)
//
// The test makes a throwaway CA and a certificate for the hosts, stores it in the TLS Secret the
// FormsService's ingress section names, and points the issuer at https://<host>:<port>.
type ingress struct {
	addr    string // where the Go clients and Chromium connect for the hosts
	port    string // the port in the public URL (the entry point's)
	class   string
	proxies string
	roots   *x509.CertPool
	certPEM []byte
	keyPEM  []byte
	spki    string // base64 SHA-256 of the certificate's public key, for Chromium
}

// ingressFromEnv returns nil when no ingress controller runs (make e2e-kind): the test then reaches
// everything through port-forwards only.
func ingressFromEnv(t *testing.T) *ingress {
	t.Helper()
	addr := os.Getenv("FORMSSERVICE_E2E_INGRESS")
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("FORMSSERVICE_E2E_INGRESS = %q: %v", addr, err)
	}
	in := &ingress{addr: addr, port: port, class: os.Getenv("FORMSSERVICE_E2E_INGRESS_CLASS"),
		proxies: os.Getenv("FORMSSERVICE_E2E_INGRESS_PROXIES")}
	if in.class == "" || in.proxies == "" {
		t.Fatal("FORMSSERVICE_E2E_INGRESS needs FORMSSERVICE_E2E_INGRESS_CLASS and FORMSSERVICE_E2E_INGRESS_PROXIES")
	}
	in.issueCertificate(t)
	return in
}

// issuer is the platform's public URL through the ingress.
func (in *ingress) issuer() string { return "https://" + net.JoinHostPort(ingressHost, in.port) }

func (in *ingress) formsURL() string { return "https://" + net.JoinHostPort(ingressFormsHost, in.port) }

// issueCertificate makes a CA that lives as long as the test and a server certificate for both hosts.
func (in *ingress) issueCertificate(t *testing.T) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "formsservice e2e ingress CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ingressHost},
		DNSNames:  []string{ingressHost, ingressFormsHost},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	spkiDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spkiDER)
	in.roots = x509.NewCertPool()
	in.roots.AddCert(ca)
	// The chain the ingress serves: the certificate, then the CA (which the clients hold already).
	in.certPEM = append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})...)
	in.keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	in.spki = base64.StdEncoding.EncodeToString(sum[:])
}

// createSecret stores the certificate in the TLS Secret the FormsService's ingress section names.
func (in *ingress) createSecret(t *testing.T, k *kind) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ingressTLSSecret, Namespace: appNS},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: in.certPEM, corev1.TLSPrivateKeyKey: in.keyPEM},
	}
	if err := k.client.Create(context.Background(), s); err != nil {
		t.Fatalf("the ingress TLS Secret: %v", err)
	}
}

// patch routes the FormsService through this ingress: its class, the two hosts with the test's
// certificate, the issuer with the entry point's port, and the controller's network as trusted proxies.
func (in *ingress) patch(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	for field, v := range map[string]any{
		"ingress": map[string]any{"className": in.class, "host": ingressHost, "formsHost": ingressFormsHost,
			"tlsSecretName": ingressTLSSecret},
		"trustedProxies": []any{in.proxies},
	} {
		if err := unstructured.SetNestedField(u.Object, v, "spec", field); err != nil {
			t.Fatal(err)
		}
	}
}

// client is a Go client that trusts the test's CA and dials the ingress for the test's hosts, from
// the given loopback address (so that each client is a client address of its own to the rate limits).
func (in *ingress) client(from netip.Addr) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: from.AsSlice()}}
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: in.roots, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err == nil && strings.HasSuffix(host, ".e2e.test") && port == in.port {
				addr = in.addr
			}
			return d.DialContext(ctx, network, addr)
		},
	}}
}

// browserFlags make Chromium resolve the issuer's host to the ingress and accept the test's
// certificate: by its public key only (not --ignore-certificate-errors, which would accept any).
func (in *ingress) browserFlags(t *testing.T) map[string]any {
	t.Helper()
	host, _, err := net.SplitHostPort(in.addr)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{
		"host-resolver-rules":                 fmt.Sprintf("MAP %s %s, MAP %s %s", ingressHost, host, ingressFormsHost, host),
		"ignore-certificate-errors-spki-list": in.spki,
	}
}

// waitServed waits until the controller has taken the Ingress up and routes only to auth pods that
// serve the issuer: discovery through it announces the issuer servedInARow times in a row (before
// that, it answers 404 for an unknown route, its default certificate fails the TLS check, or an auth pod
// of the previous revision that is still in the controller's endpoints announces the old issuer).
// The controller balances round-robin, so a run of answers covers every auth pod it knows.
func (in *ingress) waitServed(t *testing.T, timeout time.Duration) {
	t.Helper()
	const servedInARow = 12
	hc := in.client(netip.MustParseAddr("127.0.0.1"))
	what := fmt.Sprintf("discovery through the ingress to announce issuer %s %d times in a row", in.issuer(), servedInARow)
	cluster.Eventually(t, timeout, what, func() (bool, string) {
		for range servedInARow {
			if ok, answer := announces(hc, in.issuer(), in.issuer()); !ok {
				return false, answer
			}
		}
		return true, ""
	})
}

// checkClientAddress shows that the forms service counts a client behind the ingress by the client's
// own address (the X-Forwarded-For entry the controller writes, believed because the controller's
// network is in trustedProxies), not by the controller's: a client address the test has not used
// before spends the per-minute limit exactly, and another fresh address is still admitted. Were the
// header not believed, every client would share the controller's one budget, which the forms
// contract has partly spent already.
func (in *ingress) checkClientAddress(t *testing.T, limit int) {
	if limit <= 0 {
		t.Fatalf("rateLimitPerMinute = %d: the check needs a limit", limit)
	}
	flood := contract.Forms{BaseURL: in.formsURL(), Origin: e2eOrigin, Client: in.client(netip.MustParseAddr("127.0.0.4"))}
	other := contract.Forms{BaseURL: in.formsURL(), Origin: e2eOrigin, Client: in.client(netip.MustParseAddr("127.0.0.5"))}
	start := time.Now()
	for i := 1; i <= limit+1; i++ {
		code, body := postWaitlist(t, flood)
		want := http.StatusCreated
		if i > limit {
			want = http.StatusTooManyRequests
		}
		if code != want {
			if time.Since(start) >= time.Minute {
				t.Fatalf("the %d submissions took %s, longer than the one-minute window: no conclusion", i, time.Since(start))
			}
			t.Fatalf("submission %d of %d from 127.0.0.4 through the ingress: HTTP %d %s, want %d (a 429 this early: the "+
				"service counts 127.0.0.4 together with other clients, as when the controller's network is not in trustedProxies)",
				i, limit+1, code, body, want)
		}
	}
	if code, body := postWaitlist(t, other); code != http.StatusCreated {
		t.Fatalf("a fresh client 127.0.0.5 after 127.0.0.4 spent its limit: HTTP %d %s, want 201 (its own budget)", code, body)
	}
	// A client cannot move into another's budget by writing X-Forwarded-For itself: whether or not the
	// controller passes the header on, the service takes the right-most address it does not trust,
	// which is the one the controller saw.
	req := waitlistRequest(t, other, "127.0.0.4")
	resp, err := other.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("127.0.0.5 claiming X-Forwarded-For: 127.0.0.4: HTTP %d %s, want 201 (counted as itself)", resp.StatusCode, raw)
	}
	// The same claim spread over two X-Forwarded-For lines (as HAProxy's option forwardfor leaves them:
	// the client's line first, the proxy's appended) and an RFC 7239 Forwarded header: every line is
	// read in order, so the claim still sits left of the hop the controller added.
	req = waitlistRequest(t, other, "127.0.0.4")
	req.Header.Add("X-Forwarded-For", "127.0.0.4, 127.0.0.4")
	req.Header.Set("Forwarded", `for=127.0.0.4;proto=https, for="127.0.0.4"`)
	if n := len(req.Header.Values("X-Forwarded-For")); n != 2 {
		t.Fatalf("the request carries %d X-Forwarded-For lines, want 2", n)
	}
	resp, err = other.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("127.0.0.5 claiming 127.0.0.4 in two X-Forwarded-For lines and Forwarded: HTTP %d %s, want 201 (counted as itself)", resp.StatusCode, raw)
	}
}

func waitlistRequest(t *testing.T, f contract.Forms, forwardedFor string) *http.Request {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"email": contract.UniqueEmail("ingress"), "consent": true})
	req, err := http.NewRequest(http.MethodPost, f.BaseURL+"/waitlist", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", f.Origin)
	req.Header.Set("Content-Type", "application/json")
	if forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", forwardedFor)
	}
	return req
}

func postWaitlist(t *testing.T, f contract.Forms) (int, string) {
	t.Helper()
	resp, err := f.Client.Do(waitlistRequest(t, f, ""))
	if err != nil {
		t.Fatalf("POST /waitlist through the ingress: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(raw)
}

// formsRateLimit is the FormsService's per-client limit per endpoint per minute (default 60).
func formsRateLimit(u *unstructured.Unstructured) int {
	v, found, _ := unstructured.NestedInt64(u.Object, "spec", "forms", "rateLimitPerMinute")
	if !found {
		return 60
	}
	return int(v)
}
