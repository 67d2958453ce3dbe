// Package admin is the area of the provider's admin API, /admin/v1/…: a resource server of the provider
// itself, whose every route is behind package bearer's check (the audience <issuer>/admin, the route's
// scope, a live grant, and for a person the admin group; docs/architecture.md D50). Its first route is
// whoami: who the token says called.
package admin

import (
	"encoding/json"
	"net/http"

	"github.com/formsservice/formsservice/services/auth/bearer"
)

// Options are the area's dependencies.
type Options struct {
	Bearer *bearer.Checker
}

// Handler serves the admin API.
type Handler struct {
	bearer *bearer.Checker
	// Whoami is GET /admin/v1/whoami: the caller's principal, for a token with any admin scope.
	Whoami http.Handler
}

// New builds the area.
func New(o Options) *Handler {
	h := &Handler{bearer: o.Bearer}
	h.Whoami = o.Bearer.Handle(bearer.Need{AnyScope: bearer.AdminScopes}, whoami)
	return h
}

// whoami answers the principal as JSON: subject, client, scopes, whether it is a machine, a person's
// groups.
func whoami(w http.ResponseWriter, _ *http.Request, p bearer.Principal) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(p)
}
