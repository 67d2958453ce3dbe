package passkey

import (
	"context"
	"errors"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// Options begin a ceremony in the browser: Ceremony goes back with the answer, PublicKey is the
// argument of navigator.credentials.create or .get (its JSON form: binary values in base64url).
type Options struct {
	Ceremony  string `json:"ceremony"`
	PublicKey any    `json:"publicKey"`
}

// BeginRegistration starts adding a passkey named name to acct, from the browser whose sign-in session
// is secret. The passkeys the account has are excluded, so an authenticator does not register twice.
func (s *Store) BeginRegistration(ctx context.Context, rp *RelyingParty, acct Account, name, secret string) (*Options, error) {
	name, err := CheckName(name)
	if err != nil {
		return nil, err
	}
	have, err := s.List(ctx, acct.ID)
	if err != nil {
		return nil, err
	}
	if len(have) >= MaxPerUser {
		return nil, ErrTooMany
	}
	exclude := make([]protocol.CredentialDescriptor, 0, len(have))
	for _, p := range have {
		exclude = append(exclude, p.cred.Descriptor())
	}
	creation, sd, err := rp.wa.BeginRegistration(newUser(acct, have),
		webauthn.WithExclusions(exclude), webauthn.WithRegistrationOrigin(rp.Origin))
	if err != nil {
		return nil, err
	}
	id, err := s.putCeremony(ctx, &ceremony{Kind: kindRegister, Binding: binding(kindRegister, secret), UserID: acct.ID, Name: name, Session: *sd}, rp.Timeout)
	if err != nil {
		return nil, err
	}
	return &Options{Ceremony: id, PublicKey: creation.Response}, nil
}

// FinishRegistration checks the browser's answer (response: the PublicKeyCredential as JSON) to the
// ceremony it began, and stores the passkey under the name given at the beginning.
func (s *Store) FinishRegistration(ctx context.Context, rp *RelyingParty, acct Account, ceremonyID, secret string, response []byte) (*Passkey, error) {
	c, err := s.takeCeremony(ctx, ceremonyID, kindRegister, secret)
	if err != nil {
		return nil, err
	}
	if c.UserID != acct.ID {
		return nil, refuse(ReasonExpired, errors.New("the ceremony is another account's"))
	}
	if len(response) > maxResponse {
		return nil, refuse(ReasonMalformed, errors.New("answer too large"))
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return nil, refuse(ReasonMalformed, err)
	}
	if parsed.Response.CollectedClientData.Origin != rp.Origin {
		return nil, refuse(ReasonWrongOrigin, errors.New(parsed.Response.CollectedClientData.Origin))
	}
	have, err := s.List(ctx, acct.ID)
	if err != nil {
		return nil, err
	}
	cred, err := rp.wa.CreateCredential(newUser(acct, have), c.Session, parsed)
	if err != nil {
		if !parsed.Response.AttestationObject.AuthData.Flags.UserVerified() {
			return nil, refuse(ReasonUserVerification, err)
		}
		return nil, refuse(ReasonInvalid, err)
	}
	p := &Passkey{ID: encodeID(cred.ID), Name: c.Name, Created: s.now().UTC(), SignCount: cred.Authenticator.SignCount,
		Synced: cred.Flags.BackupEligible, cred: *cred}
	if err := s.add(ctx, acct.ID, p); err != nil {
		return nil, err
	}
	return p, nil
}

// BeginSignIn starts a sign-in with a discoverable passkey (no account named: the authenticator offers
// the passkeys it holds for the RP ID) from the browser whose CSRF cookie is secret.
func (s *Store) BeginSignIn(ctx context.Context, rp *RelyingParty, secret string) (*Options, error) {
	assertion, sd, err := rp.wa.BeginDiscoverableLogin(webauthn.WithLoginOrigin(rp.Origin))
	if err != nil {
		return nil, err
	}
	id, err := s.putCeremony(ctx, &ceremony{Kind: kindSignIn, Binding: binding(kindSignIn, secret), Session: *sd}, rp.Timeout)
	if err != nil {
		return nil, err
	}
	return &Options{Ceremony: id, PublicKey: assertion.Response}, nil
}

// SignedIn is a successful sign-in with a passkey.
type SignedIn struct {
	Account Account
	Passkey Passkey
}

// Lookup finds the account of a user handle; nil when there is none.
type Lookup func(ctx context.Context, userID string) (*Account, error)

// FinishSignIn checks the browser's answer to the sign-in ceremony it began: the ceremony is used up
// whatever the outcome, the passkey must be one the user handle's account has, and the library checks
// origin, RP ID, challenge, user presence and verification, and the signature. The signature counter
// must go up (unless the authenticator keeps none), checked and recorded in one Redis step: a counter
// that does not is a copy of the authenticator, refused with ReasonCloned.
func (s *Store) FinishSignIn(ctx context.Context, rp *RelyingParty, ceremonyID, secret string, response []byte, lookup Lookup) (*SignedIn, error) {
	c, err := s.takeCeremony(ctx, ceremonyID, kindSignIn, secret)
	if err != nil {
		return nil, err
	}
	if len(response) > maxResponse {
		return nil, refuse(ReasonMalformed, errors.New("answer too large"))
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return nil, refuse(ReasonMalformed, err)
	}
	if parsed.Response.CollectedClientData.Origin != rp.Origin {
		return nil, refuse(ReasonWrongOrigin, errors.New(parsed.Response.CollectedClientData.Origin))
	}
	handle := parsed.Response.UserHandle
	if !validHandle(handle) {
		return nil, refuse(ReasonUnknownPasskey, errors.New("no usable user handle"))
	}
	userID := string(handle)
	acct, err := lookup(ctx, userID)
	if err != nil {
		return nil, err
	}
	if acct == nil {
		return nil, refuse(ReasonUnknownPasskey, errors.New("no such account"))
	}
	have, err := s.List(ctx, userID)
	if err != nil {
		return nil, err
	}
	credID := encodeID(parsed.RawID)
	var pk *Passkey
	for i := range have {
		if have[i].ID == credID {
			pk = &have[i]
		}
	}
	if pk == nil { // the handle is the sender's to choose: the refusal names no account
		return nil, refuse(ReasonUnknownPasskey, errors.New("the account has no such passkey"))
	}
	u := newUser(*acct, have)
	_, cred, err := rp.wa.ValidatePasskeyLogin(func(_, _ []byte) (webauthn.User, error) { return u, nil }, c.Session, parsed)
	if err != nil {
		reason := ReasonInvalid
		if !parsed.Response.AuthenticatorData.Flags.UserVerified() {
			reason = ReasonUserVerification
		}
		// Nothing proved the account's authenticator made this answer (anyone can send a handle and a
		// credential ID): the refusal names the passkey tried, not the account, so that no unauthenticated
		// request is recorded against an account it merely names.
		return nil, &Refusal{Reason: reason, Passkey: pk, err: err}
	}
	// The library flags a counter that did not go up; the script checks again against the stored value
	// of this instant, so that two replicas cannot both accept one counter value.
	ok, err := s.used(ctx, userID, credID, cred.Authenticator.SignCount)
	if err != nil {
		if r, isRefusal := err.(*Refusal); isRefusal {
			r.UserID = userID
		}
		return nil, err
	}
	if !ok || cred.Authenticator.CloneWarning {
		pk.ClonedAt = s.now().UTC()
		return nil, &Refusal{Reason: ReasonCloned, UserID: userID, Passkey: pk,
			err: errors.New("the signature counter did not go up")}
	}
	if acct.Disabled {
		return nil, &Refusal{Reason: ReasonDisabled, UserID: userID, Passkey: pk}
	}
	pk.SignCount, pk.LastUsed = cred.Authenticator.SignCount, s.now().UTC()
	return &SignedIn{Account: *acct, Passkey: *pk}, nil
}
