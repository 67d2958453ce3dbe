package keys_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v3"
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

// idClaims are claims like an ID token's: strings, numbers, a list, an object.
func idClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss": "https://auth.example.com", "sub": "0190e6a1-5f0c-7a3b-9c1d-2e4f6a8b0c1d", "aud": []string{"web"},
		"exp": int64(4102444800), "iat": int64(1794996400), "auth_time": int64(1794996390), "rat": int64(1794996380),
		"nonce": "n-0S6_WzA2Mj", "at_hash": "77QmUPtjPfzWtF2AnpK9RQ", "amr": []string{"pwd", "otp", "mfa"},
		"acr": "urn:formsservice:acr:2fa", "email": "ada@example.com", "email_verified": true,
		"ext": map[string]interface{}{"groups": []interface{}{"a<b>&c", "ü"}}, "score": 0.5,
	}
}

// TestSigner_SameTokensAsFositesDefaultSigner: the kept go-jose signer (D42) signs the header and
// payload fosite's DefaultSigner does, byte for byte, for each header a token may carry (none, a typ
// of its own, several, a value that is not a string), and the token verifies and names the current kid.
func TestSigner_SameTokensAsFositesDefaultSigner(t *testing.T) {
	set, _ := keys.Generate()
	ctx := context.Background()
	jwk := &jose.JSONWebKey{Key: set.Current.Private, KeyID: set.Current.ID, Algorithm: string(jose.ES256), Use: "sig"}
	def := &jwt.DefaultSigner{GetPrivateKey: func(context.Context) (interface{}, error) { return jwk, nil }}
	signer := set.Signer()
	headers := []*jwt.Headers{
		{},
		{Extra: map[string]interface{}{"typ": "at+jwt"}},
		{Extra: map[string]interface{}{"typ": "at+jwt", "cty": "x", "alg": "ignored"}},
		{Extra: map[string]interface{}{"n": 1}}, // not a string: DefaultSigner's path
	}
	for round := range 2 { // the second round takes the kept signers
		for _, h := range headers {
			want, _, err := def.Generate(ctx, idClaims(), h)
			if err != nil {
				t.Fatal(err)
			}
			got, sig, err := signer.Generate(ctx, idClaims(), h)
			if err != nil {
				t.Fatal(err)
			}
			w, g := strings.Split(want, "."), strings.Split(got, ".")
			if len(g) != 3 || g[0] != w[0] || g[1] != w[1] || sig != g[2] {
				t.Fatalf("round %d, header %v:\n got %s\nwant %s", round, h.Extra, got, want)
			}
			tok, err := set.Signer().Decode(ctx, got)
			if err != nil {
				t.Fatalf("header %v: %v", h.Extra, err)
			}
			if tok.Header["kid"] != set.Current.ID || tok.Claims["email"] != "ada@example.com" {
				t.Fatalf("header %v: decoded %v %v", h.Extra, tok.Header, tok.Claims)
			}
		}
	}
	if _, _, err := signer.Generate(ctx, idClaims(), nil); err == nil {
		t.Fatal("a nil header signed")
	}
}

// BenchmarkSigner_Generate: an ID token's signing, fosite's DefaultSigner against the set's Signer
// (D42). `go test -run '^$' -bench Signer -count 10 ./services/auth/keys/`.
func BenchmarkSigner_Generate(b *testing.B) {
	set, _ := keys.Generate()
	ctx := context.Background()
	jwk := &jose.JSONWebKey{Key: set.Current.Private, KeyID: set.Current.ID, Algorithm: string(jose.ES256), Use: "sig"}
	for _, tc := range []struct {
		name   string
		signer jwt.Signer
	}{
		{"fosite-DefaultSigner", &jwt.DefaultSigner{GetPrivateKey: func(context.Context) (interface{}, error) { return jwk, nil }}},
		{"keys.Signer", set.Signer()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := tc.signer.Generate(ctx, idClaims(), &jwt.Headers{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkES256_Signature: the signature alone, beside BenchmarkSigner_Generate's whole token: Go's
// hedged ECDSA (what go-jose asks for, with crypto/rand) against deterministic RFC 6979 signing, which
// D46 weighs and does not take. `go test -run '^$' -bench 'ES256|Signer' ./services/auth/keys/`.
func BenchmarkES256_Signature(b *testing.B) {
	set, _ := keys.Generate()
	digest := sha256.Sum256([]byte("header.payload"))
	b.Run("hedged", func(b *testing.B) {
		for b.Loop() {
			if _, err := ecdsa.SignASN1(rand.Reader, set.Current.Private, digest[:]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("deterministic-RFC6979", func(b *testing.B) {
		for b.Loop() {
			if _, err := set.Current.Private.Sign(nil, digest[:], crypto.SHA256); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSigner_ConcurrentTokensVerify: the kept signers are shared by every request (D42); tokens signed at
// once from many goroutines, with two headers being kept for the first time, all verify (run with -race).
func TestSigner_ConcurrentTokensVerify(t *testing.T) {
	set, _ := keys.Generate()
	signer := set.Signer()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := &jwt.Headers{}
			if g%2 == 1 {
				h.Extra = map[string]interface{}{"typ": "at+jwt"}
			}
			for range 20 {
				tok, _, err := signer.Generate(ctx, idClaims(), h)
				if err == nil {
					_, err = signer.Decode(ctx, tok)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
