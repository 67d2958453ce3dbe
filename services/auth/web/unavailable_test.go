package web_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// Every store's outage is a 503 (temporarily_unavailable), never a 500: the HTTP layer asks one
// question, and no store's sentinel escapes it. Before storeerr, the classifier listed four of the eight
// stores, and the second step answered server_error with the second-factor store down.
func TestIsUnavailable_EveryStoreOutage(t *testing.T) {
	for name, sentinel := range map[string]error{
		"store": store.ErrUnavailable, "users": users.ErrUnavailable, "sso": sso.ErrUnavailable, "throttle": throttle.ErrUnavailable,
		"mfa": mfa.ErrUnavailable, "passkey": passkey.ErrUnavailable, "link": link.ErrUnavailable, "audit": audit.ErrUnavailable,
		"the hashing pool": users.ErrBusy,
	} {
		wrapped := fmt.Errorf("%w: connection refused", sentinel)
		if !web.IsUnavailable(wrapped) {
			t.Errorf("%s's outage (%v) is not taken for one: it would answer 500", name, wrapped)
		}
	}
	for _, other := range []error{errors.New("boom"), users.ErrNotFound, mfa.ErrNotEnrolled, store.ErrReplay} {
		if web.IsUnavailable(other) {
			t.Errorf("%v is taken for an outage", other)
		}
	}
}
