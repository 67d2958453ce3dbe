package render

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

// spec.auth.connectors render into auth.connectors with every field, the client secret as the file its
// Secret is mounted at in the auth pods (and only there), and the clients' connectors lists; the
// rendered file is one the auth service loads (RenderConfig validates it), and no secret is in it.
func TestConnectors_RenderIntoAuthWithTheSecretMountedAsAFile(t *testing.T) {
	fs := base()
	fs.Spec.Auth.Connectors = []v1alpha1.ConnectorSpec{
		{ID: "google", Preset: "google", ClientID: "g.apps.example", ClientSecretRef: v1alpha1.SecretKeySelector{Name: "idp", Key: "google"}},
		{ID: "staff", Issuer: "https://sso.acme.example/realms/staff", ClientID: "formsservice", ClientSecretRef: v1alpha1.SecretKeySelector{Name: "idp", Key: "keycloak"},
			Scopes: []string{"openid", "email", "groups"}, SigningAlgs: []string{"ES256"}, Claims: &v1alpha1.ConnectorClaims{Name: "preferred_username", Groups: "groups"},
			GroupsPrefix: "kc:", TrustEmailVerified: ptr.To(true)},
		{ID: "github", Type: "github", ClientID: "Iv1.abc", ClientSecretRef: v1alpha1.SecretKeySelector{Name: "gh", Key: "secret"},
			BaseURL: "https://github.acme.example", Orgs: []string{"acme"}},
	}
	fs.Spec.OAuthClients[0].Connectors = []string{"github", "google"}

	text, err := RenderConfig(fs, Auth, in)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Auth
	want := []config.Connector{
		{ID: "google", Preset: "google", ClientID: "g.apps.example", ClientSecretFile: SecretsDir + "/idp/google"},
		{ID: "staff", Issuer: "https://sso.acme.example/realms/staff", ClientID: "formsservice", ClientSecretFile: SecretsDir + "/idp/keycloak",
			Scopes: []string{"openid", "email", "groups"}, SigningAlgs: []string{"ES256"}, Claims: config.ConnectorClaims{Name: "preferred_username", Groups: "groups"},
			GroupsPrefix: "kc:", TrustEmailVerified: ptr.To(true)},
		{ID: "github", Type: "github", ClientID: "Iv1.abc", ClientSecretFile: SecretsDir + "/gh/secret", BaseURL: "https://github.acme.example", Orgs: []string{"acme"}},
	}
	for i, w := range want {
		got, _ := yaml.Marshal(a.Connectors[i])
		wantText, _ := yaml.Marshal(w)
		if string(got) != string(wantText) {
			t.Errorf("connector %s:\n%s\nwant\n%s", w.ID, got, wantText)
		}
	}
	if !slices.Equal(a.Clients[0].Connectors, []string{"github", "google"}) {
		t.Errorf("the client's connectors: %v", a.Clients[0].Connectors)
	}
	if other := ServiceConfig(fs, Forms, in); len(other.Auth.Connectors) != 0 {
		t.Error("the forms service's configuration has the connectors")
	}

	projected := func(component string) []string {
		var keys []string
		for _, v := range typed[appsv1.Deployment](t, Deployment(fs, component, in)).Spec.Template.Spec.Volumes {
			if v.Secret != nil && (v.Secret.SecretName == "idp" || v.Secret.SecretName == "gh") {
				for _, k := range v.Secret.Items {
					keys = append(keys, v.Secret.SecretName+"/"+k.Path)
				}
			}
		}
		slices.Sort(keys)
		return keys
	}
	if got := projected(Auth); !slices.Equal(got, []string{"gh/secret", "idp/google", "idp/keycloak"}) {
		t.Errorf("the auth pod mounts %v", got)
	}
	if got := projected(Forms); len(got) != 0 {
		t.Errorf("the forms pod mounts %v", got)
	}
	refs := UserSecretRefs(fs)
	if !slices.ContainsFunc(refs, func(r SecretRef) bool {
		return r.Field == "spec.auth.connectors[github].clientSecretRef" && r.Secret == "gh"
	}) {
		t.Errorf("the github connector's Secret is not checked: %+v", refs)
	}

	// A client naming a connector that is not there is refused before any pod sees it (the CRD refuses
	// it too; the operator does not rely on that).
	fs.Spec.OAuthClients[0].Connectors = []string{"gitlab"}
	if _, err := RenderConfig(fs, Auth, in); err == nil || !strings.Contains(err.Error(), `"gitlab" is not in auth.connectors`) {
		t.Errorf("an unknown connector in a client: %v", err)
	}
}
