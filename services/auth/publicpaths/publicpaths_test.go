package publicpaths

import "testing"

func TestCovers(t *testing.T) {
	for path, want := range map[string]bool{
		"/oauth2/authorize": true, "/oauth2": true, "/.well-known/jwks.json": true,
		"/account": true, "/account/passkeys/begin": true, "/admin/v1/whoami": true, "/admin": true, "/administrator": false, "/console/": true, "/consoles": false,
		"/accounts": false, "/oauth2x": false, "/health": false, "/": false, "": false, "/contact": false,
	} {
		if got := Covers(path); got != want {
			t.Errorf("Covers(%q) = %v, want %v", path, got, want)
		}
	}
}
