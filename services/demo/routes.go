package demo

import "github.com/formsservice/formsservice/services/platform/server"

// Routes declares the demo page (dev server only): the page, its OAuth redirect URI, and its assets; and
// the dev server's front door, which leads there.
func (s *Service) Routes() []server.Route {
	return []server.Route{
		server.Get("/", s.redirectToDemo),
		server.Get("/demo/", s.servePageWithSlash),
		server.Get("/demo/callback", s.servePage), // the OAuth redirect URI: the page completes the sign-in
		server.Get("/demo/:file", s.serveAsset),
	}
}
