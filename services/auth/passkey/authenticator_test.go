package passkey

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
)

// softKey is a passkey held by softAuthenticator: a P-256 key pair, the user handle and a signature
// counter. It does in Go what an authenticator and the browser do together (CTAP2 and the WebAuthn
// client), byte for byte as the specification lays the data out, so that the ceremonies can be tested
// against real Redis without a browser; the browser tests (services/auth) use Chromium's own virtual
// authenticator.
type softKey struct {
	id     []byte
	key    *ecdsa.PrivateKey
	handle []byte
	count  uint32
	// counterless: the authenticator keeps no counter and always reports 0 (most synced passkeys).
	counterless bool
	synced      bool
}

// Flags of the authenticator data (WebAuthn 6.1).
const (
	flagUP = 0x01
	flagUV = 0x04
	flagBE = 0x08
	flagBS = 0x10
	flagAT = 0x40
)

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// create answers navigator.credentials.create with the options of BeginRegistration, made on origin.
func create(t testing.TB, o *Options, origin string, uv bool, setup ...func(*softKey)) (*softKey, []byte) {
	t.Helper()
	opts, ok := o.PublicKey.(protocol.PublicKeyCredentialCreationOptions)
	if !ok {
		t.Fatalf("creation options are %T", o.PublicKey)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	handle, _ := opts.User.ID.(protocol.URLEncodedBase64)
	k := &softKey{id: make([]byte, 32), key: key, handle: handle}
	_, _ = rand.Read(k.id)
	for _, f := range setup {
		f(k)
	}
	return k, k.attest(t, opts.RelyingParty.ID, opts.Challenge, origin, uv)
}

func (k *softKey) flags(uv bool) byte {
	f := byte(flagUP)
	if uv {
		f |= flagUV
	}
	if k.synced {
		f |= flagBE | flagBS
	}
	return f
}

func (k *softKey) authData(rpID string, flags byte, count uint32) []byte {
	h := sha256.Sum256([]byte(rpID))
	d := append(h[:], flags)
	return binary.BigEndian.AppendUint32(d, count)
}

func (k *softKey) attest(t testing.TB, rpID string, challenge []byte, origin string, uv bool) []byte {
	t.Helper()
	x, y := k.key.X.FillBytes(make([]byte, 32)), k.key.Y.FillBytes(make([]byte, 32))
	cose, err := webauthncbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: x, -3: y}) // EC2, ES256, P-256
	if err != nil {
		t.Fatal(err)
	}
	ad := k.authData(rpID, k.flags(uv)|flagAT, k.count)
	ad = append(ad, make([]byte, 16)...) // AAGUID: none
	ad = binary.BigEndian.AppendUint16(ad, uint16(len(k.id)))
	ad = append(append(ad, k.id...), cose...)
	att, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": ad})
	if err != nil {
		t.Fatal(err)
	}
	cdj, _ := json.Marshal(map[string]any{"type": "webauthn.create", "challenge": b64(challenge), "origin": origin, "crossOrigin": false})
	resp, _ := json.Marshal(map[string]any{
		"id": b64(k.id), "rawId": b64(k.id), "type": "public-key",
		"response":               map[string]any{"clientDataJSON": b64(cdj), "attestationObject": b64(att), "transports": []string{"internal"}},
		"clientExtensionResults": map[string]any{},
	})
	return resp
}

// get answers navigator.credentials.get with the options of BeginSignIn, made on origin: the counter goes
// up first, as an authenticator's does.
func (k *softKey) get(t testing.TB, o *Options, origin string, uv bool) []byte {
	t.Helper()
	opts, ok := o.PublicKey.(protocol.PublicKeyCredentialRequestOptions)
	if !ok {
		t.Fatalf("request options are %T", o.PublicKey)
	}
	if !k.counterless {
		k.count++
	}
	return k.assert(t, opts.RelyingPartyID, opts.Challenge, origin, uv, k.count)
}

func (k *softKey) assert(t testing.TB, rpID string, challenge []byte, origin string, uv bool, count uint32) []byte {
	t.Helper()
	if k.counterless {
		count = 0
	}
	ad := k.authData(rpID, k.flags(uv), count)
	cdj, _ := json.Marshal(map[string]any{"type": "webauthn.get", "challenge": b64(challenge), "origin": origin, "crossOrigin": false})
	ch := sha256.Sum256(cdj)
	digest := sha256.Sum256(append(append([]byte{}, ad...), ch[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, k.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := json.Marshal(map[string]any{
		"id": b64(k.id), "rawId": b64(k.id), "type": "public-key",
		"response": map[string]any{"clientDataJSON": b64(cdj), "authenticatorData": b64(ad), "signature": b64(sig),
			"userHandle": b64(k.handle)},
		"clientExtensionResults": map[string]any{},
	})
	return resp
}

// challengeOf is the challenge of a ceremony's options.
func challengeOf(t testing.TB, o *Options) []byte {
	t.Helper()
	switch opts := o.PublicKey.(type) {
	case protocol.PublicKeyCredentialCreationOptions:
		return opts.Challenge
	case protocol.PublicKeyCredentialRequestOptions:
		return opts.Challenge
	}
	t.Fatalf("options are %T", o.PublicKey)
	return nil
}
