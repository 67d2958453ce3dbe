package config

import "testing"

// A machine client's inline key set is written in the configuration file as YAML, like any object ("y"
// quoted: YAML 1.1 reads a bare y as true), or as JSON text in a string, as the CRD carries it.
func TestParse_InlineJWKSInYAML(t *testing.T) {
	c, err := Parse([]byte(`
publicURL: https://id.example.com
auth:
  clients:
    - clientID: deployer
      grantTypes: [client_credentials]
      tokenEndpointAuthMethod: private_key_jwt
      jwks:
        keys:
          - kty: EC
            crv: P-256
            x: f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU
            "y": x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0
    - clientID: deployer2
      grantTypes: [client_credentials]
      tokenEndpointAuthMethod: private_key_jwt
      jwks: '{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}'
`))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, cl := range c.Auth.Clients {
		if keys, _, err := ClientKeys(cl.JWKS); err != nil || len(keys) != 1 {
			t.Fatalf("%s: %v %v", cl.ClientID, keys, err)
		}
	}
}
