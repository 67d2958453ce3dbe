package render

import (
	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

// ldapConnector is the auth configuration's ldap settings of a spec's (D75): the same fields, the bind
// password and the CA bundle as the files their Secrets are mounted at (ldapSecretRefs). nil for none.
func ldapConnector(s *v1alpha1.LDAPConnectorSpec) *config.LDAPConnector {
	if s == nil {
		return nil
	}
	l := &config.LDAPConnector{Host: s.Host, TLS: s.TLS, BindDN: s.BindDN, BindPasswordFile: SecretPath(s.BindPasswordRef.Name, s.BindPasswordRef.Key),
		UsernamePrompt: s.UsernamePrompt,
		UserSearch: config.LDAPUserSearch{BaseDN: s.UserSearch.BaseDN, Filter: s.UserSearch.Filter, Username: s.UserSearch.Username,
			IDAttr: s.UserSearch.IDAttr, EmailAttr: s.UserSearch.EmailAttr, NameAttr: s.UserSearch.NameAttr, GroupsAttr: s.UserSearch.GroupsAttr}}
	if r := s.RootCARef; r != nil {
		l.RootCAFile = SecretPath(r.Name, r.Key)
	}
	if g := s.GroupSearch; g != nil {
		l.GroupSearch = &config.LDAPGroupSearch{BaseDN: g.BaseDN, Filter: g.Filter, MemberAttr: g.MemberAttr, NameAttr: g.NameAttr}
	}
	return l
}

// ldapSecretRefs are the Secrets an ldap connector names: its bind password, and its CA bundle.
func ldapSecretRefs(c v1alpha1.ConnectorSpec) []SecretRef {
	if c.LDAP == nil {
		return nil
	}
	r := c.LDAP.BindPasswordRef
	refs := []SecretRef{{Secret: r.Name, Key: r.Key, Field: "spec.auth.connectors[" + c.ID + "].ldap.bindPasswordRef", Components: []string{Auth}}}
	if ca := c.LDAP.RootCARef; ca != nil {
		refs = append(refs, SecretRef{Secret: ca.Name, Key: ca.Key, Field: "spec.auth.connectors[" + c.ID + "].ldap.rootCARef", Components: []string{Auth}})
	}
	return refs
}
