package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/platform/refusal"
)

// Why a sign-in or sign-out link is refused with an error page instead of a redirect (redirecting to an
// address that is not registered would make the provider an open redirector). The person sees the page;
// the developer gets the log line and the counter of services/platform/refusal, and on the dev server
// the page itself shows what was sent.
const (
	RefusedUnknownClient      refusal.Reason = "unknown_client"
	RefusedRedirectURIMissing refusal.Reason = "redirect_uri_missing"
	RefusedRedirectURI        refusal.Reason = "redirect_uri_not_registered"
	RefusedPostLogoutURI      refusal.Reason = "post_logout_redirect_uri_not_registered"
)

var refusalReasons = []refusal.Reason{RefusedUnknownClient, RefusedRedirectURIMissing, RefusedRedirectURI, RefusedPostLogoutURI}

// Fact is one thing the developer is told about a refusal: what was sent, or what is registered.
type Fact struct {
	Name  string
	Value any
}

// RefusePage writes the error page e with status 400, and explains the refusal: a log line (info on the
// dev server, debug otherwise) and the counter; on the dev server the page lists the facts too.
func (k *Kit) RefusePage(ctx context.Context, w http.ResponseWriter, reason refusal.Reason, e page.Error, msg string, facts ...Fact) {
	args := make([]any, 0, 2*len(facts))
	for _, f := range facts {
		args = append(args, f.Name, f.Value)
	}
	k.refusals.Refused(ctx, reason, "auth: "+msg, args...)
	if k.refusals.Dev() {
		e.Developer = append(e.Developer, msg+".")
		for _, f := range facts {
			v := fmt.Sprint(f.Value)
			if l, ok := f.Value.([]string); ok {
				v = strings.Join(l, ", ")
			}
			if v == "" {
				v = "(none)"
			}
			e.Developer = append(e.Developer, f.Name+": "+v)
		}
	}
	k.Pages.RenderError(w, http.StatusBadRequest, e)
}
