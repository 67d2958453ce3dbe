package keys_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ory/fosite/token/jwt"

	"github.com/formsservice/formsservice/services/auth/keys"
)

func TestLoad_SEC1AndPKCS8_P256Only(t *testing.T) {
	dir := t.TempDir()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(k)
	sec1File := filepath.Join(dir, "sec1.pem")
	// openssl ecparam -genkey writes EC PARAMETERS first.
	_ = os.WriteFile(sec1File, append([]byte("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1})...), 0o600)
	pkcs8, _ := keys.EncodePEM(k)
	pkcs8File := filepath.Join(dir, "pkcs8.pem")
	_ = os.WriteFile(pkcs8File, pkcs8, 0o600)
	a, err := keys.Load(keys.Files{Current: sec1File})
	if err != nil {
		t.Fatal(err)
	}
	b, err := keys.Load(keys.Files{Current: pkcs8File, Previous: sec1File})
	if err != nil {
		t.Fatal(err)
	}
	if a.Current.ID != b.Current.ID || a.Current.ID == "" {
		t.Fatal("the key ID must be the key's thumbprint, the same however the key is encoded")
	}
	if strings.Count(string(b.JWKS()), `"kid"`) != 1 {
		t.Fatalf("the same key as current and previous is published once: %s", b.JWKS())
	}
	if strings.Contains(string(a.JWKS()), `"d"`) {
		t.Fatal("the JWKS leaks the private key")
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := keys.NewSet(p384, nil); err == nil {
		t.Fatal("a P-384 key was accepted for ES256")
	}
	if _, err := keys.Load(keys.Files{Current: filepath.Join(dir, "missing.pem")}); err == nil {
		t.Fatal("a missing key file was accepted")
	}
}

func TestSigner_VerifiesCurrentAndPreviousOnly(t *testing.T) {
	old, _ := keys.Generate()
	cur, _ := keys.Generate()
	rotated, _ := keys.NewSet(cur.Current.Private, old.Current.Private)
	ctx := context.Background()
	claims := jwt.MapClaims{"sub": "x"}
	oldTok, _, err := old.Signer().Generate(ctx, claims, &jwt.Headers{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rotated.Signer().Decode(ctx, oldTok); err != nil {
		t.Fatalf("a token of the previous key: %v", err)
	}
	stranger, _ := keys.Generate()
	strangeTok, _, _ := stranger.Signer().Generate(ctx, claims, &jwt.Headers{})
	if _, err := rotated.Signer().Decode(ctx, strangeTok); err == nil {
		t.Fatal("a token of an unknown key verified")
	}
	// alg "none" with a known kid.
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"` + cur.Current.ID + `"}`))
	body := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"x"}`))
	if _, err := rotated.Signer().Decode(ctx, header+"."+body+"."); err == nil {
		t.Fatal("an unsigned token verified")
	}
	// Opaque-token secrets: the previous key's is kept as rotated.
	s1, r1, _ := rotated.HMACSecrets()
	s0, _, _ := old.HMACSecrets()
	if len(s1) != 32 || len(r1) != 1 || string(r1[0]) != string(s0) || string(s1) == string(s0) {
		t.Fatal("HMAC secrets must derive from the current key, with the previous key's as rotated")
	}
}
