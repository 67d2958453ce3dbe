package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The API server and the auth service agree about spec.auth.connectors: a connector the CRD admits
// renders into a configuration the auth service loads, and each one the auth service would refuse is
// refused at admission (with words that name the rule), never found by a crash-looping pod.
func TestCRD_ConnectorsAgreeWithTheService(t *testing.T) {
	ns := newNamespace(t)
	secret := v1alpha1.SecretKeySelector{Name: "idp", Key: "secret"}
	oidc := func(mutate func(c *v1alpha1.ConnectorSpec)) v1alpha1.ConnectorSpec {
		c := v1alpha1.ConnectorSpec{ID: "staff", Issuer: "https://sso.acme.example/realms/staff", ClientID: "formsservice", ClientSecretRef: secret}
		if mutate != nil {
			mutate(&c)
		}
		return c
	}
	github := func(mutate func(c *v1alpha1.ConnectorSpec)) v1alpha1.ConnectorSpec {
		c := v1alpha1.ConnectorSpec{ID: "github", Type: "github", ClientID: "Iv1.abc", ClientSecretRef: secret}
		if mutate != nil {
			mutate(&c)
		}
		return c
	}
	cases := []struct {
		name string
		conn []v1alpha1.ConnectorSpec
		list []string // the client's connectors
		want string   // "" admitted; else a fragment of the API server's refusal
	}{
		{"google preset", []v1alpha1.ConnectorSpec{{ID: "google", Preset: "google", ClientID: "g", ClientSecretRef: secret}}, []string{"google"}, ""},
		{"microsoft, any tenant", []v1alpha1.ConnectorSpec{{ID: "entra", Preset: "microsoft", Tenant: "common", ClientID: "m", ClientSecretRef: secret}}, nil, ""},
		{"generic with claims and algorithms", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) {
			c.Claims = &v1alpha1.ConnectorClaims{Name: "preferred_username", Groups: "groups"}
			c.SigningAlgs = []string{"ES256", "EdDSA"}
			c.Scopes = []string{"openid", "email", "groups"}
			c.TrustEmailVerified = ptr.To(true)
			c.GroupsPrefix = "kc:"
		})}, []string{"staff"}, ""},
		{"Entra's issuer, with a port and an escape", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) {
			c.Issuer = "https://login.microsoftonline.com:443/contoso.onmicrosoft.com/v2.0/%7Ex"
		})}, nil, ""},
		{"a loopback http issuer", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Issuer = "http://localhost:5556/dex" })}, nil, ""},
		{"a name of 64 characters that are not ASCII", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Name = strings.Repeat("ü", 64) })}, nil, ""},
		{"github", []v1alpha1.ConnectorSpec{github(nil)}, []string{"github"}, ""},
		{"github enterprise with organisations", []v1alpha1.ConnectorSpec{github(func(c *v1alpha1.ConnectorSpec) {
			c.BaseURL, c.Orgs = "https://github.acme.example", []string{"acme", "acme-labs"}
		})}, nil, ""},
		{"two of them", []v1alpha1.ConnectorSpec{oidc(nil), github(nil)}, []string{"github", "staff"}, ""},
		{"re-checked at refresh", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) {
			c.OfflineAccess, c.RecheckEvery, c.OnUpstreamDown = true, &metav1.Duration{Duration: time.Second}, "end"
		})}, nil, ""},
		{"github re-checked every 24h, kept when down", []v1alpha1.ConnectorSpec{github(func(c *v1alpha1.ConnectorSpec) {
			c.RecheckEvery, c.OnUpstreamDown = &metav1.Duration{Duration: 24 * time.Hour}, "keep"
		})}, nil, ""},
		{"re-checked too often", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) {
			c.RecheckEvery = &metav1.Duration{Duration: 500 * time.Millisecond}
		})}, nil, "recheckEvery must be between 1s and 24h"},
		{"re-checked too rarely", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) {
			c.RecheckEvery = &metav1.Duration{Duration: 25 * time.Hour}
		})}, nil, "recheckEvery must be between 1s and 24h"},
		{"an unknown policy when the upstream is down", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.OnUpstreamDown = "retry" })}, nil, "spec.auth.connectors[0].onUpstreamDown"},
		{"offline access on a github connector", []v1alpha1.ConnectorSpec{github(func(c *v1alpha1.ConnectorSpec) { c.OfflineAccess = true })}, nil, "offlineAccess is for type oidc"},

		{"generic without an issuer", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Issuer = "" })}, nil, "issuer is required"},
		{"an http issuer", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Issuer = "http://sso.acme.example" })}, nil, "issuer must be an https URL"},
		{"an issuer with a query", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Issuer = "https://sso.acme.example/?x=1" })}, nil, "issuer must be an https URL"},
		{"an issuer with a broken escape", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Issuer = "https://sso.acme.example/%zz" })}, nil, "issuer must be an https URL"},
		{"an issuer with a port that is not one", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Issuer = "https://sso.acme.example:https" })}, nil, "issuer must be an https URL"},
		{"an issuer with user info", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Issuer = "https://u@sso.acme.example" })}, nil, "issuer must be an https URL"},
		{"github with a port that is not one", []v1alpha1.ConnectorSpec{github(func(c *v1alpha1.ConnectorSpec) { c.BaseURL = "https://github.acme.example:x" })}, nil, "baseURL must be https://host[:port]"},
		{"a host that looks like localhost", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Issuer = "http://localhost.evil.example" })}, nil, "issuer must be an https URL"},
		{"scopes without openid", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Scopes = []string{"email"} })}, nil, "scopes must include openid"},
		{"an HMAC algorithm", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.SigningAlgs = []string{"HS256"} })}, nil, "spec.auth.connectors[0].signingAlgs[0]"},
		{"an id in capitals", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.ID = "Staff" })}, nil, "spec.auth.connectors[0].id"},
		{"an id too long", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.ID = strings.Repeat("a", 33) })}, nil, "spec.auth.connectors[0].id"},
		{"a name too long", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Name = strings.Repeat("n", 65) })}, nil, "spec.auth.connectors[0].name"},
		{"an unknown type", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Type = "kerberos" })}, nil, "spec.auth.connectors[0].type"},
		{"no client ID", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.ClientID = "" })}, nil, "clientID is required for oidc and github connectors"},
		{"no client secret", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.ClientSecretRef = v1alpha1.SecretKeySelector{} })}, nil, "clientSecretRef is required for oidc and github connectors"},
		{"organisations on an oidc connector", []v1alpha1.ConnectorSpec{oidc(func(c *v1alpha1.ConnectorSpec) { c.Orgs = []string{"acme"} })}, nil, "baseURL and orgs are for type github"},
		{"an issuer on a github connector", []v1alpha1.ConnectorSpec{github(func(c *v1alpha1.ConnectorSpec) { c.Issuer = "https://github.com" })}, nil, "are for type oidc"},
		{"claims on a github connector", []v1alpha1.ConnectorSpec{github(func(c *v1alpha1.ConnectorSpec) { c.Claims = &v1alpha1.ConnectorClaims{Name: "login"} })}, nil, "are for type oidc"},
		{"a preset on a github connector", []v1alpha1.ConnectorSpec{github(func(c *v1alpha1.ConnectorSpec) { c.Preset = "google" })}, nil, "a github connector takes no preset"},
		{"github at a path", []v1alpha1.ConnectorSpec{github(func(c *v1alpha1.ConnectorSpec) { c.BaseURL = "https://acme.example/github" })}, nil, "baseURL must be https://host[:port]"},
		{"github over http", []v1alpha1.ConnectorSpec{github(func(c *v1alpha1.ConnectorSpec) { c.BaseURL = "http://github.acme.example" })}, nil, "baseURL must be https://host[:port]"},
		{"an organisation that cannot be one", []v1alpha1.ConnectorSpec{github(func(c *v1alpha1.ConnectorSpec) { c.Orgs = []string{"-acme"} })}, nil, "spec.auth.connectors[0].orgs[0]"},
		{"a client naming a connector that is not there", []v1alpha1.ConnectorSpec{github(nil)}, []string{"gitlab"}, "must be the id of one of spec.auth.connectors"},
		{"a client naming a connector, none there", nil, []string{"github"}, "must be the id of one of spec.auth.connectors"},
		{"two connectors with one id", []v1alpha1.ConnectorSpec{oidc(nil), oidc(nil)}, nil, "Duplicate value"},
	}
	for i, tc := range cases {
		fs := sampleFS(ns)
		fs.Name = fmt.Sprintf("conn%d", i)
		fs.Spec.Auth.Connectors = tc.conn
		fs.Spec.OAuthClients[0].Connectors = tc.list
		agreesWithService(t, tc.name, fs, tc.want)
	}
}

// agreesWithService sends fs to the API server in a dry run and renders the auth service's configuration
// of the same spec as the operator does: both must admit it (want ""), or both refuse it, the API server
// saying want. For an admitted one it returns the configuration of the object as the API server stored
// it (defaults applied), which must load too; "" otherwise.
func agreesWithService(t *testing.T, name string, fs *v1alpha1.FormsService, want string) string {
	t.Helper()
	_, svcErr := render.RenderConfig(fs.DeepCopy(), render.Auth, render.Inputs{Image: "img:1"})
	apiErr := k8s.Create(context.Background(), fs, client.DryRunAll)
	switch {
	case want == "" && apiErr != nil:
		t.Errorf("%s: the CRD refuses it: %v", name, apiErr)
	case want == "" && svcErr != nil:
		t.Errorf("%s: the CRD admits it, the auth service refuses it: %v", name, svcErr)
	case want != "" && (apiErr == nil || !strings.Contains(apiErr.Error(), want)):
		t.Errorf("%s: %v, want a refusal saying %q", name, apiErr, want)
	case want != "" && svcErr == nil:
		t.Errorf("%s: the CRD refuses it (%v), the auth service would take it", name, apiErr)
	}
	if want != "" || apiErr != nil {
		return ""
	}
	cfg, err := render.RenderConfig(fs, render.Auth, render.Inputs{Image: "img:1"})
	if err != nil {
		t.Errorf("%s: the admitted object does not load: %v", name, err)
	}
	return cfg
}

// A connector whose client secret's Secret (or key) is missing is Degraded with ConnectorSecretMissing,
// naming the connector's field, and the auth pods are not rolled to mount it (the running ones keep
// serving); the Secret created, the condition clears and the auth pods mount the key.
func TestConnectors_MissingSecretIsDegradedUntilItExists(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.Auth.Connectors = []v1alpha1.ConnectorSpec{{ID: "google", Preset: "google", ClientID: "g.apps.example",
		ClientSecretRef: v1alpha1.SecretKeySelector{Name: "idp", Key: "google"}}}
	fs.Spec.OAuthClients[0].Connectors = []string{"google"}
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "ConnectorSecretMissing",
		`Secret "idp" named by spec.auth.connectors[google].clientSecretRef does not exist in namespace `+ns)

	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idp"}, Data: map[string][]byte{"other": []byte("x")}}
	if err := k8s.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "ConnectorSecretMissing",
		`Secret "idp" named by spec.auth.connectors[google].clientSecretRef has no key "google"`)
	if err := k8s.Get(ctx, key(ns, "acme-auth"), &appsv1.Deployment{}); err == nil {
		t.Error("the auth Deployment was rolled out to mount a Secret that is not there")
	}

	sec.Data["google"] = []byte("the-google-client-secret")
	if err := k8s.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	eventually(t, func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, key(ns, "acme-auth"), d); err != nil {
			return err
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == "idp" && len(v.Secret.Items) == 1 && v.Secret.Items[0].Key == "google" {
				return nil
			}
		}
		return fmt.Errorf("the auth pods do not mount idp/google: %+v", d.Spec.Template.Spec.Volumes)
	})
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, key(ns, "acme-config"), cm); err != nil {
		t.Fatal(err)
	}
	if s := cm.Data["auth.yaml"]; !strings.Contains(s, "clientSecretFile: "+render.SecretPath("idp", "google")) || strings.Contains(s, "the-google-client-secret") {
		t.Errorf("the auth configuration:\n%s", s)
	}
}

// The sample of docs/operator.md (config/samples/connectors) is admitted by the CRD and renders into a
// configuration the auth service loads, with each connector and the client's buttons.
func TestConnectors_SampleIsAdmittedAndLoads(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "config", "samples", "connectors", "formsservice_connectors.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fs := &v1alpha1.FormsService{}
	if err := yaml.UnmarshalStrict(b, fs); err != nil {
		t.Fatal(err)
	}
	fs.Namespace = newNamespace(t)
	if err := k8s.Create(context.Background(), fs, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	text, err := render.RenderConfig(fs, render.Auth, render.Inputs{Image: "img:1"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	var ids []string
	for _, conn := range c.Auth.Connectors {
		ids = append(ids, conn.ID+"="+conn.Type)
	}
	if got := strings.Join(ids, " "); got != "google=oidc entra=oidc staff=oidc github=github" || len(c.Auth.Clients[0].Connectors) != 4 {
		t.Errorf("connectors %s, the client's %v", got, c.Auth.Clients[0].Connectors)
	}
	for _, ref := range render.UserSecretRefs(fs) {
		if ref.Secret == "acme-idp" && !strings.HasPrefix(ref.Field, "spec.auth.connectors[") {
			t.Errorf("%+v", ref)
		}
	}
}
