package federation

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/samlsp"
)

// ErrIdPInitiated: an answer at the ACS that no sign-in here asked for (no RelayState): a sign-in
// started at the IdP's portal, which we refuse (D76): nothing binds it to a browser here.
var ErrIdPInitiated = errors.New("federation: a SAML answer no sign-in here asked for")

// AcceptSAML is the Assertion Consumer Service of SAML connector id (D76): the IdP's cross-site POST,
// which carries no cookie of ours (SameSite=Lax). The trip is found by the RelayState alone and not
// taken; the answer is checked against the trip's AuthnRequest and its outcome (the person, or why it
// was refused) kept for the same-site step, the callback URL returned here, where the browser's
// fs_fed cookie must name the trip (another browser's answer goes no further). r's form must be
// parsed. Errors: ErrUnknown, ErrIdPInitiated, ErrState (no such trip, or another connector's),
// samlsp.ErrAnswered (the trip was answered before), ErrUnavailable; a refused answer is no error
// here: the callback says so.
func (k *Kit) AcceptSAML(r *http.Request, rt *realm.Realm, id string) (string, error) {
	ctx := r.Context()
	conn, err := k.Connector(rt, id)
	if err != nil {
		return "", err
	}
	sp, ok := conn.(*samlsp.Connector)
	if !ok {
		return "", fmt.Errorf("%w: %q is not a SAML connector", ErrUnknown, id)
	}
	state := r.PostForm.Get("RelayState")
	if state == "" {
		return "", ErrIdPInitiated
	}
	if len(state) > 128 {
		return "", ErrState
	}
	b, err := k.rdb.Get(ctx, pendingKey(state)).Bytes()
	if errors.Is(err, redis.Nil) {
		return "", ErrState
	}
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var p Pending
	if err := json.Unmarshal(b, &p); err != nil || p.Connector != id {
		return "", ErrState
	}
	err = sp.Accept(ctx, r, samlsp.RequestID(p.Nonce), state)
	switch {
	case errors.Is(err, samlsp.ErrStore):
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	case errors.Is(err, samlsp.ErrAnswered):
		return "", err
	case err != nil:
		k.log.Info("a SAML answer was refused", "connector", id, "reason", samlsp.Reason(err), "err", err)
	}
	return rt.Issuer + CallbackPath + "?state=" + url.QueryEscape(state), nil
}
