package admin

import (
	_ "embed"
	"net/http"
)

// Document is the API's OpenAPI 3.1 description: every route, its scope, parameters, bodies and
// answers. The tests check every answer of the API against it, and that it lists exactly the routes
// of routes.go under /admin/v1.
//
//go:embed openapi.yaml
var Document []byte

// serveDocument is GET /admin/v1/openapi.yaml, without a token: the description says what the API does,
// nothing of any account (D59).
func serveDocument(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(Document)
}
