package realm

import (
	"context"

	"github.com/ory/fosite"
)

// skipOthersGrants wraps each of fosite's token endpoint handlers so that one asked to populate the
// response for a grant type it does not handle answers fosite.ErrUnknownRequest at once. fosite asks
// every handler (NewAccessResponse), and each that does not handle the grant builds
// errorsx.WithStack(ErrUnknownRequest), a stack trace that fosite then drops: two per token request,
// about 3% of a refresh's CPU (docs/architecture.md D42). The answer means the same to fosite (it
// compares with errors.Is and goes on); the handler that does handle the grant runs as before.
func skipOthersGrants(handlers fosite.TokenEndpointHandlers) fosite.TokenEndpointHandlers {
	out := make(fosite.TokenEndpointHandlers, len(handlers))
	for i, h := range handlers {
		out[i] = onlyOwnGrant{h}
	}
	return out
}

type onlyOwnGrant struct{ fosite.TokenEndpointHandler }

func (h onlyOwnGrant) PopulateTokenEndpointResponse(ctx context.Context, req fosite.AccessRequester, res fosite.AccessResponder) error {
	if !h.CanHandleTokenEndpointRequest(ctx, req) {
		return fosite.ErrUnknownRequest
	}
	return h.TokenEndpointHandler.PopulateTokenEndpointResponse(ctx, req, res)
}
