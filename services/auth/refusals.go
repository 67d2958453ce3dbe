package auth

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/platform/refusal"
)

// Why a sign-in or sign-out link is refused with an error page instead of a redirect (redirecting to an
// address that is not registered would make the provider an open redirector). The person sees the page;
// the developer gets the log line and the counter of services/platform/refusal, and on the dev server
// the page itself shows what was sent.
const (
	refusedUnknownClient      refusal.Reason = "unknown_client"
	refusedRedirectURIMissing refusal.Reason = "redirect_uri_missing"
	refusedRedirectURI        refusal.Reason = "redirect_uri_not_registered"
	refusedPostLogoutURI      refusal.Reason = "post_logout_redirect_uri_not_registered"
)

var refusalReasons = []refusal.Reason{refusedUnknownClient, refusedRedirectURIMissing, refusedRedirectURI, refusedPostLogoutURI}

// fact is one thing the developer is told about a refusal: what was sent, or what is registered.
type fact struct {
	name  string
	value any
}

// refusePage writes the error page e with status 400, and explains the refusal: a log line (info on the
// dev server, debug otherwise) and the counter; on the dev server the page lists the facts too.
func (s *Service) refusePage(ctx context.Context, w http.ResponseWriter, reason refusal.Reason, e page.Error, msg string, facts ...fact) {
	args := make([]any, 0, 2*len(facts))
	for _, f := range facts {
		args = append(args, f.name, f.value)
	}
	s.refusals.Refused(ctx, reason, "auth: "+msg, args...)
	if s.refusals.Dev() {
		e.Developer = append(e.Developer, msg+".")
		for _, f := range facts {
			v := fmt.Sprint(f.value)
			if l, ok := f.value.([]string); ok {
				v = strings.Join(l, ", ")
			}
			if v == "" {
				v = "(none)"
			}
			e.Developer = append(e.Developer, f.name+": "+v)
		}
	}
	s.pages.RenderError(w, http.StatusBadRequest, e)
}

// clientIDs lists the registered clients, for a refusal that names an unknown one.
func (rt *runtime) clientIDs() []string { return slices.Sorted(maps.Keys(rt.clients)) }

// postLogoutURIs lists the client's registered post-logout redirect URIs as configured.
func (rt *runtime) postLogoutURIs(clientID string) []string {
	for _, c := range rt.cfg.Auth.Clients {
		if c.ClientID == clientID {
			return c.PostLogoutRedirectURIs
		}
	}
	return nil
}
