package redisclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serverCert issues a certificate for 127.0.0.1 and returns the certificate and key files.
func (ca testCA) serverCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "redis"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "redis.crt"), filepath.Join(dir, "redis.key")
	write(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return certFile, keyFile
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// startTLSRedis runs redis-server with a TLS port whose certificate the given CA issued, and returns
// the TLS port's address.
func startTLSRedis(t *testing.T, ca testCA) string {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := ca.serverCert(t, dir)
	caFile := filepath.Join(dir, "ca.pem")
	write(t, caFile, ca.pem)
	return testredis.Start(t, testredis.Options{TLS: &testredis.TLS{CertFile: certFile, KeyFile: keyFile, CAFile: caFile}}).TLSAddr()
}

// redis.caFile is the trust for the store's certificate: a server whose certificate the bundle's CA
// issued is reached over TLS (single server and Sentinel/Cluster-style addrs alike); one whose
// certificate another CA issued is refused, as is a file without a certificate.
func TestNew_CAFile_TrustsOnlyTheBundle(t *testing.T) {
	ours, theirs := newTestCA(t, "our redis CA"), newTestCA(t, "someone else's CA")
	addr := startTLSRedis(t, ours)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	write(t, bundle, append(append([]byte{}, newTestCA(t, "an unrelated CA in the bundle").pem...), ours.pem...))

	ctx := context.Background()
	for _, c := range []config.Redis{
		{URL: "redis://" + addr + "/0", CAFile: bundle}, // caFile turns TLS on
		{URL: "rediss://" + addr + "/0", CAFile: bundle},
		{Addrs: []string{addr}, TLS: true, CAFile: bundle},
	} {
		c.Timeout = config.Duration(15 * time.Second) // a bound, not a wait: a loaded CI machine needs more than 2 s
		rdb, err := New(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
		rdb.Close()
	}

	other := filepath.Join(t.TempDir(), "other.pem")
	write(t, other, theirs.pem)
	rdb, err := New(config.Redis{URL: "rediss://" + addr + "/0", CAFile: other, Timeout: config.Duration(15 * time.Second)}, nil) // a bound, not a wait
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	err = rdb.Ping(ctx).Err()
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("a server whose certificate another CA issued: %v, want an unknown authority error", err)
	}

	notPEM := filepath.Join(t.TempDir(), "not.pem")
	write(t, notPEM, []byte("not a certificate\n"))
	if _, err := New(config.Redis{URL: "rediss://" + addr + "/0", CAFile: notPEM}, nil); err == nil {
		t.Error("a caFile without a certificate was accepted")
	}
	if _, err := New(config.Redis{URL: "rediss://" + addr + "/0", CAFile: filepath.Join(t.TempDir(), "missing.pem")}, nil); err == nil {
		t.Error("a missing caFile was accepted")
	}
}

// startTLSOnlyRedis runs redis-server with a TLS port only (no plain TCP port at all) and a password,
// its certificate issued by ca; it returns the server and the CA bundle's file.
func startTLSOnlyRedis(t *testing.T, ca testCA, password string) (*testredis.Server, string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := ca.serverCert(t, dir)
	caFile := filepath.Join(dir, "ca.pem")
	write(t, caFile, ca.pem)
	return testredis.Start(t, testredis.Options{Password: password,
		TLS: &testredis.TLS{CertFile: certFile, KeyFile: keyFile, CAFile: caFile, Only: true}}), caFile
}

// A redis:// URL with tls: true (or a caFile) connects over TLS: the URL gives the address, the other
// settings add TLS, the trust and the password instead of being overwritten by the URL's defaults. A
// server that speaks only TLS proves it: a plaintext connection gets no answer.
func TestNew_URLWithTLSCAAndPasswordFile_Combine(t *testing.T) {
	ca := newTestCA(t, "our redis CA")
	rs, caFile := startTLSOnlyRedis(t, ca, "s3cret")
	pwFile := filepath.Join(t.TempDir(), "password")
	write(t, pwFile, []byte("s3cret\n"))
	plainURL := "redis://" + rs.Addr() + "/0"

	ctx := context.Background()
	for _, c := range []config.Redis{
		{URL: plainURL, TLS: true, CAFile: caFile, PasswordFile: pwFile},
		{URL: plainURL, CAFile: caFile, PasswordFile: pwFile},                                        // caFile alone turns TLS on
		{URL: "redis://:wrong@" + rs.Addr() + "/0", TLS: true, CAFile: caFile, PasswordFile: pwFile}, // the file wins
		{URL: "rediss://" + rs.Addr() + "/0", CAFile: caFile, PasswordFile: pwFile},
	} {
		c.Timeout = config.Duration(15 * time.Second) // a bound, not a wait: a loaded CI machine needs more than 2 s
		rdb, err := New(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Errorf("%s (tls %v): %v", c.URL, c.TLS, err)
		}
		rdb.Close()
	}

	// tls: true without the CA: TLS is attempted (the server's certificate is refused), not plaintext.
	rdb, err := New(config.Redis{URL: plainURL, TLS: true, PasswordFile: pwFile, Timeout: config.Duration(15 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("tls: true without caFile: %v, want a TLS handshake that refuses the unknown authority", err)
	}
}

// REDIS_URL replaces only the address of the configuration file's redis section: its tls, caFile and
// passwordFile still apply.
func TestNew_REDIS_URLKeepsTheFilesTLSAndPassword(t *testing.T) {
	ca := newTestCA(t, "our redis CA")
	rs, caFile := startTLSOnlyRedis(t, ca, "s3cret")
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "password")
	write(t, pwFile, []byte("s3cret"))
	cfgFile := filepath.Join(dir, "config.yaml")
	write(t, cfgFile, []byte("redis:\n  url: redis://elsewhere.invalid:6379/0\n  tls: true\n  caFile: "+caFile+"\n  passwordFile: "+pwFile+"\n"))
	env := map[string]string{"REDIS_URL": "redis://" + rs.Addr() + "/0"}
	cfg, err := config.Load(cfgFile, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := New(cfg.Redis, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := rdb.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("REDIS_URL with the file's tls, caFile and passwordFile: %v", err)
	}
}

// tls or caFile with a unix:// URL is a contradiction, refused rather than ignored.
func TestNew_TLSWithUnixSocket_Refused(t *testing.T) {
	if _, err := New(config.Redis{URL: "unix:///run/redis.sock", TLS: true}, nil); err == nil {
		t.Fatal("tls with a unix:// URL was accepted")
	}
}
