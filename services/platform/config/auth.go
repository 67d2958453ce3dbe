package config

import (
	"fmt"
	"time"
)

// Auth configures the OAuth 2.0 / OpenID Connect provider.
type Auth struct {
	// Issuer defaults to PublicURL.
	Issuer  string        `json:"issuer,omitempty"`
	Clients []OAuthClient `json:"clients,omitempty"`
	// SigningKeyFile holds the current signing key (PEM, EC P-256); PreviousSigningKeyFile, when set,
	// is served in the JWKS only, so that tokens signed before a rotation still verify.
	SigningKeyFile         string `json:"signingKeyFile,omitempty"`
	PreviousSigningKeyFile string `json:"previousSigningKeyFile,omitempty"`
	// Lifetimes; defaults access 15m, refresh 720h (30 days), code 60s.
	AccessTokenLifetime  Duration `json:"accessTokenLifetime,omitempty"`
	RefreshTokenLifetime Duration `json:"refreshTokenLifetime,omitempty"`
	CodeLifetime         Duration `json:"codeLifetime,omitempty"`
	// SelfSignup lets people create an account on the hosted page.
	SelfSignup bool `json:"selfSignup,omitempty"`
}

// OAuthClient is a registered client (a relying party).
type OAuthClient struct {
	ClientID               string   `json:"clientID"`
	RedirectURIs           []string `json:"redirectURIs"`
	PostLogoutRedirectURIs []string `json:"postLogoutRedirectURIs,omitempty"`
	Scopes                 []string `json:"scopes,omitempty"`
	// SecretFile makes the client confidential; without it the client is public and must use PKCE S256.
	SecretFile string `json:"secretFile,omitempty"`
}

func (a *Auth) applyDefaults(c *Config) {
	if a.Issuer == "" {
		a.Issuer = c.PublicURL
	}
	if a.AccessTokenLifetime == 0 {
		a.AccessTokenLifetime = Duration(15 * time.Minute)
	}
	if a.RefreshTokenLifetime == 0 {
		a.RefreshTokenLifetime = Duration(30 * 24 * time.Hour)
	}
	if a.CodeLifetime == 0 {
		a.CodeLifetime = Duration(60 * time.Second)
	}
	for i := range a.Clients {
		if len(a.Clients[i].Scopes) == 0 {
			a.Clients[i].Scopes = []string{"openid", "profile", "email", "offline_access"}
		}
	}
}

func (a Auth) validate() []error {
	var errs []error
	seen := map[string]bool{}
	for _, cl := range a.Clients {
		if cl.ClientID == "" {
			errs = append(errs, fmt.Errorf("auth.clients: clientID is required"))
			continue
		}
		if seen[cl.ClientID] {
			errs = append(errs, fmt.Errorf("auth.clients: duplicate clientID %q", cl.ClientID))
		}
		seen[cl.ClientID] = true
		if len(cl.RedirectURIs) == 0 {
			errs = append(errs, fmt.Errorf("auth.clients[%s]: at least one redirectURI is required", cl.ClientID))
		}
	}
	return errs
}
