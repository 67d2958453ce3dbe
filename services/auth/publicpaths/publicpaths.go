// Package publicpaths names the path prefixes under which the provider serves everything it serves to
// browsers and clients. It is the one place the operator's Ingress and HTTPRoute (controllers/render)
// and the provider's routes (services/auth, whose test holds every route under one of them) agree on,
// so a new auth page cannot be left unrouted. It is a leaf package: the operator links it without
// linking the provider.
package publicpaths

// Prefixes are routed to auth by path element (an Ingress Prefix, an HTTPRoute PathPrefix).
var Prefixes = []string{
	"/oauth2",      // the protocol endpoints and the hosted sign-in page
	"/.well-known", // discovery and the JWKS
	"/account",     // the account page, passkeys and the second factor, signed in through the sign-in session
	"/admin",       // the admin API (/admin/v1/…), a resource server of the provider's own tokens
	"/console",     // the admin console (D65), a web app over the admin API
}

// Covers reports whether path is one of Prefixes or below one, element by element ("/accounts" is not
// below "/account"), as an Ingress Prefix matches.
func Covers(path string) bool {
	for _, p := range Prefixes {
		if path == p || len(path) > len(p) && path[:len(p)] == p && path[len(p)] == '/' {
			return true
		}
	}
	return false
}
