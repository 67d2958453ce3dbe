package auth_test

import (
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"strings"
)

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// splitJWT returns a JWT's header fields.
func splitJWT(t interface {
	Helper()
	Fatalf(string, ...any)
}, token string) map[string]any {
	t.Helper()
	dot := strings.IndexByte(token, '.')
	if dot < 0 {
		t.Fatalf("not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(token[:dot])
	if err != nil {
		t.Fatalf("JWT header: %v", err)
	}
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("JWT header: %v", err)
	}
	return h
}

// familyOf returns the family ID in front of a refresh token or code.
func familyOf(t interface{ Fatalf(string, ...any) }, token string) string {
	f, _, ok := strings.Cut(token, "~")
	if !ok {
		t.Fatalf("token without family")
	}
	return f
}

func htmlUnescape(s string) string { return html.UnescapeString(s) }
