package controllers

import (
	"fmt"
	"testing"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The API server and the auth service agree about spec.auth.connectors[].ldap (D75): a connector of
// type ldap the CRD admits renders into a configuration the auth service loads, its bind password and
// CA as mounted files, and each one the auth service would refuse is refused at admission. Plain LDAP,
// which the service takes only for a loopback host, the CRD refuses always (no tls value for it).
func TestCRD_LDAPConnectorsAgreeWithTheService(t *testing.T) {
	ns := newNamespace(t)
	ldap := func(mutate func(c *v1alpha1.ConnectorSpec)) v1alpha1.ConnectorSpec {
		c := v1alpha1.ConnectorSpec{ID: "corp", Type: "ldap", LDAP: &v1alpha1.LDAPConnectorSpec{Host: "ldap.corp.example",
			BindDN: "cn=svc,dc=corp,dc=example", BindPasswordRef: v1alpha1.SecretKeySelector{Name: "ldap", Key: "bind"},
			UserSearch: v1alpha1.LDAPUserSearchSpec{BaseDN: "ou=people,dc=corp,dc=example"}}}
		if mutate != nil {
			mutate(&c)
		}
		return c
	}
	cases := []struct {
		name string
		conn v1alpha1.ConnectorSpec
		want string // "" admitted; else a fragment of the API server's refusal
	}{
		{"ldaps by default", ldap(nil), ""},
		{"starttls with a CA, group search, trusted", ldap(func(c *v1alpha1.ConnectorSpec) {
			c.LDAP.TLS, c.LDAP.Host = "starttls", "ldap.corp.example:389"
			c.LDAP.RootCARef = &v1alpha1.SecretKeySelector{Name: "ldap", Key: "ca.pem"}
			c.LDAP.GroupSearch = &v1alpha1.LDAPGroupSearchSpec{BaseDN: "ou=groups,dc=corp,dc=example", MemberAttr: "uniqueMember"}
			c.TrustEmailVerified, c.GroupsPrefix, c.Name = ptr.To(true), "corp:", "Corp"
		}), ""},
		{"active directory", ldap(func(c *v1alpha1.ConnectorSpec) {
			c.LDAP.UserSearch = v1alpha1.LDAPUserSearchSpec{BaseDN: "DC=contoso,DC=example", Filter: "(&(objectCategory=person)(objectClass=user))",
				Username: "sAMAccountName", IDAttr: "objectGUID", NameAttr: "displayName", GroupsAttr: "memberOf"}
		}), ""},

		{"plain LDAP", ldap(func(c *v1alpha1.ConnectorSpec) { c.LDAP.TLS = "insecureNoTLS" }), "spec.auth.connectors[0].ldap.tls"},
		{"type ldap without ldap", ldap(func(c *v1alpha1.ConnectorSpec) { c.LDAP = nil }), "ldap is required for type ldap"},
		{"ldap on an oidc connector", v1alpha1.ConnectorSpec{ID: "x", Issuer: "https://sso.acme.example", ClientID: "c",
			ClientSecretRef: v1alpha1.SecretKeySelector{Name: "idp", Key: "s"}, LDAP: ldap(nil).LDAP}, "ldap is required for type ldap, and only for it"},
		{"a client secret on an ldap connector", ldap(func(c *v1alpha1.ConnectorSpec) {
			c.ClientSecretRef = v1alpha1.SecretKeySelector{Name: "idp", Key: "s"}
		}), "an ldap connector has ldap.bindPasswordRef"},
		{"an issuer on an ldap connector", ldap(func(c *v1alpha1.ConnectorSpec) { c.Issuer = "https://sso.acme.example" }), "are not for type ldap"},
		{"a port that is not one", ldap(func(c *v1alpha1.ConnectorSpec) { c.LDAP.Host = "ldap.corp.example:65536" }), "spec.auth.connectors[0].ldap.host"},
		{"a host with a scheme", ldap(func(c *v1alpha1.ConnectorSpec) { c.LDAP.Host = "ldaps://ldap.corp.example" }), "spec.auth.connectors[0].ldap.host"},
		{"a bind DN that is not one", ldap(func(c *v1alpha1.ConnectorSpec) { c.LDAP.BindDN = "svc" }), "spec.auth.connectors[0].ldap.bindDN"},
		{"a filter that is not one", ldap(func(c *v1alpha1.ConnectorSpec) { c.LDAP.UserSearch.Filter = "objectClass=person" }), "spec.auth.connectors[0].ldap.userSearch.filter"},
		{"an attribute that is not one", ldap(func(c *v1alpha1.ConnectorSpec) { c.LDAP.UserSearch.Username = "uid)(x" }), "spec.auth.connectors[0].ldap.userSearch.username"},
		{"two sources of groups", ldap(func(c *v1alpha1.ConnectorSpec) {
			c.LDAP.UserSearch.GroupsAttr = "memberOf"
			c.LDAP.GroupSearch = &v1alpha1.LDAPGroupSearchSpec{BaseDN: "ou=groups,dc=corp,dc=example"}
		}), "choose one"},
	}
	for i, tc := range cases {
		fs := sampleFS(ns)
		fs.Name = fmt.Sprintf("ldap%d", i)
		fs.Spec.Auth.Connectors = []v1alpha1.ConnectorSpec{tc.conn}
		fs.Spec.OAuthClients[0].Connectors = []string{tc.conn.ID}
		if cfg := agreesWithService(t, tc.name, fs, tc.want); cfg != "" && i == 1 {
			checkLDAPFiles(t, cfg)
		}
	}
}

// checkLDAPFiles: the rendered connector reads its bind password and CA from the mounted Secret's files.
func checkLDAPFiles(t *testing.T, rendered string) {
	t.Helper()
	c, err := config.Parse([]byte(rendered))
	if err != nil {
		t.Fatal(err)
	}
	conn, ok := c.Auth.ConnectorByID("corp")
	if !ok || conn.LDAP == nil || conn.LDAP.BindPasswordFile != render.SecretPath("ldap", "bind") || conn.LDAP.RootCAFile != render.SecretPath("ldap", "ca.pem") ||
		conn.ClientSecretFile != "" || conn.LDAP.GroupSearch == nil || conn.LDAP.GroupSearch.MemberAttr != "uniqueMember" {
		t.Errorf("rendered: %+v %+v", conn, conn.LDAP)
	}
}
