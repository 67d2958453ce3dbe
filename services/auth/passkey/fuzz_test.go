package passkey

import (
	"errors"
	"testing"
)

// FuzzFinish: whatever a browser sends as its answer to a ceremony — malformed JSON, CBOR or base64, a
// genuine answer cut or changed anywhere — is a refusal: never a panic, never a success, never another
// error. The seeds are genuine answers of the software authenticator (refused only because their
// ceremony was another) and broken ones.
func FuzzFinish(f *testing.F) {
	fx := newFixture(f, nil)
	acct := fx.account(userA)
	k, _ := fx.register(acct, "Key", nil)
	o, err := fx.store.BeginSignIn(ctx, fx.rp, csrf)
	if err != nil {
		f.Fatal(err)
	}
	assertion := k.get(f, o, origin, true)
	o, _ = fx.store.BeginRegistration(ctx, fx.rp, acct, "Other", session)
	_, attestation := create(f, o, origin, true)
	f.Add(false, assertion)
	f.Add(true, attestation)
	f.Add(false, assertion[:len(assertion)/2])
	f.Add(false, []byte(`{"id":"","rawId":"","type":"public-key","response":{}}`))
	f.Add(true, []byte(`{"id":"AA","rawId":"AA","type":"public-key","response":{"clientDataJSON":"e30","attestationObject":"oA"}}`))
	f.Add(false, []byte(`null`))
	f.Fuzz(func(t *testing.T, register bool, body []byte) {
		var err error
		if register {
			o, berr := fx.store.BeginRegistration(ctx, fx.rp, acct, "Fuzzed", session)
			if berr != nil {
				t.Fatal(berr)
			}
			_, err = fx.store.FinishRegistration(ctx, fx.rp, acct, o.Ceremony, session, body)
		} else {
			o, berr := fx.store.BeginSignIn(ctx, fx.rp, csrf)
			if berr != nil {
				t.Fatal(berr)
			}
			_, err = fx.store.FinishSignIn(ctx, fx.rp, o.Ceremony, csrf, body, fx.lookup)
		}
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("answer %q: %v, want a refusal", body, err)
		}
	})
}
