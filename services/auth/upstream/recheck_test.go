package upstream

import (
	"net/http"
	"testing"

	"golang.org/x/oauth2"
)

// Which answers of an upstream's token endpoint to a refresh end the grant (a refusal) and which count
// as the upstream being down. The Dex tests (services/auth federation_dex_test.go) meet the 400
// invalid_request and the 500 for real.
func TestRefusal_TellsANoFromAFailure(t *testing.T) {
	for _, c := range []struct {
		status int
		code   string
		want   bool
	}{
		{http.StatusBadRequest, "invalid_grant", true},
		{http.StatusUnauthorized, "invalid_grant", true},
		{0, "invalid_grant", true},                                 // no response kept: the error code decides
		{http.StatusBadRequest, "invalid_request", true},           // Dex: a revoked or rotated-out refresh token
		{http.StatusInternalServerError, "invalid_request", false}, // Dex: a deleted account, or Dex failing
		{http.StatusInternalServerError, "invalid_grant", false},
		{http.StatusServiceUnavailable, "", false},
		{http.StatusUnauthorized, "invalid_client", false}, // our credentials, not the person
		{http.StatusBadRequest, "invalid_client", false},
		{http.StatusBadRequest, "unauthorized_client", false},
		{http.StatusUnauthorized, "invalid_request", false},
		{http.StatusBadRequest, "", false}, // an error page
	} {
		re := &oauth2.RetrieveError{ErrorCode: c.code}
		if c.status != 0 {
			re.Response = &http.Response{StatusCode: c.status}
		}
		if got := refusal(re); got != c.want {
			t.Errorf("%d %q: refusal %v, want %v", c.status, c.code, got, c.want)
		}
	}
}
