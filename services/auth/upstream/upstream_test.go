package upstream

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/testupstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// With offlineAccess, the authorization request asks for a refresh token in the upstream's own way:
// the offline_access scope with prompt=consent (OpenID Connect Core 11), and for a google connector,
// whose Google refuses that scope, access_type=offline with prompt=consent instead (D78). The
// connector discovers a real OpenID provider (internal/testupstream); Google itself cannot be reached
// from the tests, so the google preset's request is read as Google documents it.
func TestAuthURL_OfflineAccessAsTheUpstreamWantsIt(t *testing.T) {
	issuer := testupstream.Start(t, []testupstream.Client{{ID: "formsservice", Secret: "s", RedirectURIs: []string{"http://127.0.0.1/cb"}}}, nil)
	for _, tc := range []struct {
		name, preset          string
		offline               bool
		scope, prompt, access string
	}{
		{"generic, offline", config.PresetGeneric, true, "openid email profile offline_access", "consent", ""},
		{"google, offline", config.PresetGoogle, true, "openid email profile", "consent", "offline"},
		{"google, online", config.PresetGoogle, false, "openid email profile", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Connector{ID: "x", Type: config.TypeOIDC, Preset: tc.preset, Issuer: issuer, ClientID: "formsservice",
				ClientSecretFile: "/unused", OfflineAccess: tc.offline, Scopes: []string{"openid", "email", "profile"}}
			to, err := New(c, "s", "http://127.0.0.1/cb", nil).AuthURL(context.Background(), NewStart(), nil)
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(to)
			if err != nil || !strings.HasPrefix(to, issuer) {
				t.Fatalf("AuthURL %q: %v", to, err)
			}
			q := u.Query()
			scopes := strings.Fields(q.Get("scope"))
			slices.Sort(scopes)
			want := strings.Fields(tc.scope)
			slices.Sort(want)
			if !slices.Equal(scopes, want) || q.Get("prompt") != tc.prompt || q.Get("access_type") != tc.access {
				t.Errorf("scope %q prompt %q access_type %q; want %q, %q, %q", q.Get("scope"), q.Get("prompt"), q.Get("access_type"), tc.scope, tc.prompt, tc.access)
			}
		})
	}
}
