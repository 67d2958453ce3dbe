package realm

import (
	"context"
	"errors"
	"testing"

	"github.com/ory/fosite"
)

// grantHandler is a token endpoint handler for one grant type that counts its calls and, as fosite's
// own handlers do, answers ErrUnknownRequest for the others.
type grantHandler struct {
	grant     string
	populated int
}

func (h *grantHandler) PopulateTokenEndpointResponse(ctx context.Context, req fosite.AccessRequester, _ fosite.AccessResponder) error {
	h.populated++
	if !h.CanHandleTokenEndpointRequest(ctx, req) {
		return fosite.ErrUnknownRequest
	}
	return nil
}
func (h *grantHandler) HandleTokenEndpointRequest(context.Context, fosite.AccessRequester) error {
	return nil
}
func (h *grantHandler) CanSkipClientAuth(context.Context, fosite.AccessRequester) bool { return false }
func (h *grantHandler) CanHandleTokenEndpointRequest(_ context.Context, req fosite.AccessRequester) bool {
	return req.GetGrantTypes().ExactOne(h.grant)
}

// TestSkipOthersGrants_OnlyTheGrantsOwnHandlerPopulates: a refresh reaches the refresh handler only;
// the code handler answers ErrUnknownRequest without being run (D42), which fosite skips as before.
func TestSkipOthersGrants_OnlyTheGrantsOwnHandlerPopulates(t *testing.T) {
	code, refresh := &grantHandler{grant: "authorization_code"}, &grantHandler{grant: "refresh_token"}
	hs := skipOthersGrants(fosite.TokenEndpointHandlers{code, refresh})
	req := fosite.NewAccessRequest(nil)
	req.GrantTypes = fosite.Arguments{"refresh_token"}
	ctx := context.Background()
	var errs []error
	for _, h := range hs {
		errs = append(errs, h.PopulateTokenEndpointResponse(ctx, req, fosite.NewAccessResponse()))
	}
	if code.populated != 0 || refresh.populated != 1 {
		t.Fatalf("populated: code handler %d times, refresh handler %d times; want 0 and 1", code.populated, refresh.populated)
	}
	if !errors.Is(errs[0], fosite.ErrUnknownRequest) || errs[1] != nil {
		t.Fatalf("answers %v, %v; want ErrUnknownRequest, nil", errs[0], errs[1])
	}
}
