package auth

import (
	"testing"

	"github.com/formsservice/formsservice/services/auth/publicpaths"
)

// Every route of the provider lies under a prefix the operator routes to auth: a page outside them
// would answer on `formsservice dev` and 404 behind the Ingress or HTTPRoute.
func TestRoutes_AllUnderThePublicPrefixes(t *testing.T) {
	routes := (&Service{}).Routes()
	if len(routes) == 0 {
		t.Fatal("no routes")
	}
	for _, r := range routes {
		if !publicpaths.Covers(r.Path) {
			t.Errorf("%s %s is under none of %v: add its prefix to publicpaths.Prefixes", r.Method, r.Path, publicpaths.Prefixes)
		}
	}
}
