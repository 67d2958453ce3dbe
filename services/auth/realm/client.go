package realm

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v3"
	"github.com/ory/fosite"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/secretfile"
)

// Client is a registered client as fosite sees it, plus what the pages and logout need.
type Client struct {
	*fosite.DefaultClient
	Name            string
	PostLogout      map[string]bool
	RedirectOrigins map[string]bool
	RequireMFA      bool // a second factor in every sign-in to this client
	RequireVerified bool // only accounts with a verified e-mail address sign in to this client
	// Account marks the provider's own account page (AccountClientID), which signs in through the
	// hosted page like a client but gets no code.
	Account bool
	// Resources are the APIs this client serves as a resource server (config resources): introspection
	// discloses the access tokens for them.
	Resources []string
	Branding  *config.Branding // over the platform's on this client's pages (nil: none)
	// Connectors are the upstream providers this client's sign-in page offers, in order (D58).
	Connectors []string
	// Keys are the public keys of a private_key_jwt client (nil for any other), and SigningAlg the one
	// algorithm its assertions use.
	Keys       *jose.JSONWebKeySet
	SigningAlg string
	// AccessTokenGroups: the client's access tokens carry the groups claim (with the groups scope).
	AccessTokenGroups bool
}

// Machine reports whether the client may get tokens of its own (client_credentials).
func (c *Client) Machine() bool { return c.GetGrantTypes().Has(config.GrantClientCredentials) }

// AssertionClient is a private_key_jwt client as fosite's client authentication sees it: an OpenID
// Connect client whose one method is private_key_jwt, with its registered keys and algorithm (never a
// jwks_uri: keys are not fetched). Every other client stays a plain fosite client, for which fosite
// accepts a secret in HTTP Basic or in the form, as before.
type AssertionClient struct{ *Client }

var _ fosite.OpenIDConnectClient = AssertionClient{}

// GetJSONWebKeys are the client's registered public keys.
func (c AssertionClient) GetJSONWebKeys() *jose.JSONWebKeySet { return c.Keys }

// GetJSONWebKeysURI is empty: keys are never fetched.
func (AssertionClient) GetJSONWebKeysURI() string { return "" }

// GetRequestURIs is empty: request_uri is not supported.
func (AssertionClient) GetRequestURIs() []string { return nil }

// GetRequestObjectSigningAlgorithm is empty: request objects are not supported.
func (AssertionClient) GetRequestObjectSigningAlgorithm() string { return "" }

// GetTokenEndpointAuthMethod is private_key_jwt.
func (AssertionClient) GetTokenEndpointAuthMethod() string { return config.AuthPrivateKeyJWT }

// GetTokenEndpointAuthSigningAlgorithm is the one algorithm the client's assertions use.
func (c AssertionClient) GetTokenEndpointAuthSigningAlgorithm() string { return c.SigningAlg }

// fositeClient is cl as fosite should see it.
func fositeClient(cl *Client) fosite.Client {
	if cl.Keys != nil {
		return AssertionClient{cl}
	}
	return cl
}

// newClient turns a configured client into a fosite client. A client with a secret file, or with keys
// (private_key_jwt), is confidential; the secret is kept as its SHA-256 only. Only a client allowed
// authorization_code has the response type code: any other is refused at /oauth2/authorize.
func newClient(c config.OAuthClient) (*Client, error) {
	grants := c.GrantTypes
	if len(grants) == 0 {
		grants = []string{config.GrantAuthorizationCode, config.GrantRefreshToken}
	}
	dc := &fosite.DefaultClient{
		ID:           c.ClientID,
		RedirectURIs: c.RedirectURIs,
		GrantTypes:   slices.Clone(grants),
		Scopes:       c.Scopes,
		Audience:     []string{c.ClientID},
		Public:       !c.Confidential(),
	}
	if slices.Contains(grants, config.GrantAuthorizationCode) {
		dc.ResponseTypes = []string{"code"}
	}
	if len(c.Audiences) > 0 {
		dc.Audience = slices.Clone(c.Audiences) // the APIs its access tokens may be for
	}
	if c.SecretFile != "" {
		secret, err := secretfile.Read(c.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("auth.clients[%s]: %w", c.ClientID, err)
		}
		if len(secret) < 16 {
			return nil, fmt.Errorf("auth.clients[%s]: secret: at least 16 characters", c.ClientID)
		}
		h := sha256.Sum256([]byte(secret))
		dc.Secret = h[:]
	}
	keys, alg, err := clientKeys(c)
	if err != nil {
		return nil, fmt.Errorf("auth.clients[%s]: %w", c.ClientID, err)
	}
	cl := &Client{DefaultClient: dc, Keys: keys, SigningAlg: alg, Name: c.Name, PostLogout: map[string]bool{}, RedirectOrigins: map[string]bool{}, RequireMFA: c.RequireMFA,
		RequireVerified: c.RequireVerifiedEmail, Resources: c.Resources, Branding: c.Branding, AccessTokenGroups: c.AccessTokenGroups,
		Connectors: c.Connectors}
	if cl.Name == "" {
		cl.Name = c.ClientID
	}
	for _, u := range c.PostLogoutRedirectURIs {
		cl.PostLogout[u] = true
	}
	for _, r := range c.RedirectURIs {
		if o := OriginOf(r); o != "" {
			cl.RedirectOrigins[o] = true
		}
	}
	return cl, nil
}

// clientKeys reads a private_key_jwt client's public keys (inline and from its file), checked as the
// configuration checks them and parsed by go-jose, and the algorithm its assertions use; nil for any
// other client.
func clientKeys(c config.OAuthClient) (*jose.JSONWebKeySet, string, error) {
	if c.TokenEndpointAuthMethod != config.AuthPrivateKeyJWT {
		return nil, "", nil
	}
	set := &jose.JSONWebKeySet{}
	var all []config.ClientKey
	for _, src := range []struct {
		name string
		raw  func() ([]byte, error)
	}{
		{"jwks", func() ([]byte, error) { return c.JWKS, nil }},
		{"jwksFile", func() ([]byte, error) {
			if c.JWKSFile == "" {
				return nil, nil
			}
			return os.ReadFile(c.JWKSFile)
		}},
	} {
		raw, err := src.raw()
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", src.name, err)
		}
		if len(raw) == 0 {
			continue
		}
		keys, doc, err := config.ClientKeys(raw)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", src.name, err)
		}
		var part jose.JSONWebKeySet
		if err := json.Unmarshal(doc, &part); err != nil {
			return nil, "", fmt.Errorf("%s: %w", src.name, err)
		}
		for i := range part.Keys {
			if part.Keys[i].Use == "" {
				part.Keys[i].Use = "sig" // fosite reads only keys with use sig
			}
		}
		set.Keys = append(set.Keys, part.Keys...)
		all = append(all, keys...)
	}
	if len(set.Keys) == 0 {
		return nil, "", errors.New("private_key_jwt: no keys in jwks or jwksFile")
	}
	alg, err := config.ClientSigningAlg(all, c.TokenEndpointAuthSigningAlg)
	return set, alg, err
}

// The account page signs people in through the hosted page, as a client would: /account without a
// session sends the browser to /oauth2/authorize for the provider's own client AccountClientID, so the
// sign-in (password, second step, throttles, audit) is exactly the one every app gets. Once the session
// is there, that client is answered with no code: a 303 back to the account page the person asked for
// (carried in state), so no grant is made and no token exists for it.

// AccountClientID is the provider's own client; a configured client may not take the ID.
const AccountClientID = "formsservice-account"

// addAccountClient registers the account page's client: public, PKCE, redirect URI the account page.
func addAccountClient(rt *Realm) error {
	if _, taken := rt.Clients[AccountClientID]; taken {
		return fmt.Errorf("auth.clients: the client ID %q is the account page's own", AccountClientID)
	}
	rt.Clients[AccountClientID] = &Client{
		DefaultClient: &fosite.DefaultClient{
			ID:            AccountClientID,
			RedirectURIs:  []string{rt.Issuer + "/account"},
			GrantTypes:    []string{"authorization_code"},
			ResponseTypes: []string{"code"},
			Scopes:        []string{"openid"},
			Audience:      []string{AccountClientID},
			Public:        true,
		},
		Name:       "your account",
		PostLogout: map[string]bool{}, RedirectOrigins: map[string]bool{},
		Account: true,
	}
	// Every connector signs in to the account page: an account made through one has no password (D58).
	for _, c := range rt.Config.Auth.Connectors {
		rt.Clients[AccountClientID].Connectors = append(rt.Clients[AccountClientID].Connectors, c.ID)
	}
	return nil
}

// AccountPath accepts a path of the account page (what state carries back): below the issuer's path,
// /account or under it, no scheme or host, nothing a browser would read as another origin.
func (rt *Realm) AccountPath(p string) bool {
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.Contains(p, "\\") || strings.Contains(p, "//") {
		return false
	}
	rest, ok := strings.CutPrefix(u.Path, rt.BasePath+"/account")
	return ok && (rest == "" || strings.HasPrefix(rest, "/")) && !strings.Contains(u.Path, "/..") && len(p) <= 2048
}

// OriginOf returns scheme://host[:port] of an absolute URL, lower case as browsers send it.
func OriginOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// sha256Hasher compares client secrets by SHA-256 in constant time. Client secrets are long random
// strings, so a slow password hash (fosite's default bcrypt) would only cost CPU on every token request.
type sha256Hasher struct{}

func (sha256Hasher) Compare(_ context.Context, hash, data []byte) error {
	h := sha256.Sum256(data)
	if subtle.ConstantTimeCompare(hash, h[:]) != 1 {
		return errors.New("secret mismatch")
	}
	return nil
}

func (sha256Hasher) Hash(_ context.Context, data []byte) ([]byte, error) {
	h := sha256.Sum256(data)
	return h[:], nil
}
