package config

import (
	"strings"
	"testing"
)

func ldapConnector(mod func(l *LDAPConnector)) Connector {
	l := &LDAPConnector{Host: "ldap.example.com", TLS: LDAPStartTLS, BindDN: "cn=svc,dc=example,dc=com", BindPasswordFile: "/s/bind",
		UserSearch: LDAPUserSearch{BaseDN: "ou=people,dc=example,dc=com"}}
	if mod != nil {
		mod(l)
	}
	return Connector{ID: "corp", Type: TypeLDAP, LDAP: l}
}

func TestConnectors_LDAPDefaultsAndValidation(t *testing.T) {
	c := &Config{PublicURL: "https://auth.example.com", Auth: Auth{Connectors: []Connector{
		ldapConnector(func(l *LDAPConnector) {
			l.GroupSearch = &LDAPGroupSearch{BaseDN: "ou=groups,dc=example,dc=com"}
		}),
		{ID: "ad", Type: TypeLDAP, LDAP: &LDAPConnector{Host: "dc1.corp.example", BindDN: "CN=svc,OU=Service,DC=corp,DC=example", BindPasswordFile: "/s/ad",
			UserSearch: LDAPUserSearch{BaseDN: "DC=corp,DC=example", Username: "sAMAccountName", IDAttr: "objectGUID", GroupsAttr: "memberOf"}}},
	}}}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	l, ad := c.Auth.Connectors[0], c.Auth.Connectors[1]
	us := l.LDAP.UserSearch
	if l.LDAP.Host != "ldap.example.com:389" || us.Filter != "(objectClass=person)" || us.Username != "uid" || us.IDAttr != "entryUUID" ||
		us.EmailAttr != "mail" || us.NameAttr != "cn" || l.GroupsPrefix != "corp:" || l.Name != "corp" || l.Trusts() || !l.ReadsGroups() {
		t.Errorf("ldap defaults: %+v %+v", l, l.LDAP)
	}
	if gs := l.LDAP.GroupSearch; gs.Filter != "(objectClass=groupOfNames)" || gs.MemberAttr != "member" || gs.NameAttr != "cn" {
		t.Errorf("group search defaults: %+v", gs)
	}
	if ad.LDAP.TLS != LDAPTLS || ad.LDAP.Host != "dc1.corp.example:636" || !ad.ReadsGroups() {
		t.Errorf("ldaps by default, on 636: %+v", ad.LDAP)
	}
	if noGroups := ldapConnector(nil); noGroups.ReadsGroups() {
		t.Error("an ldap connector without group settings reads groups")
	}

	for name, tc := range map[string]struct {
		conn Connector
		want string
	}{
		// Passwords travel in a simple bind: StartTLS or LDAPS off this machine.
		"plain off loopback":    {ldapConnector(func(l *LDAPConnector) { l.TLS = LDAPInsecureNoTLS }), "only for a loopback host"},
		"unknown tls":           {ldapConnector(func(l *LDAPConnector) { l.TLS = "ssl" }), `ldap.tls "ssl": one of`},
		"no ldap":               {Connector{ID: "corp", Type: TypeLDAP}, "ldap is required for type ldap"},
		"no bind password file": {ldapConnector(func(l *LDAPConnector) { l.BindPasswordFile = "" }), "bindPasswordFile is required"},
		"no bind DN":            {ldapConnector(func(l *LDAPConnector) { l.BindDN = "" }), "anonymous search is not supported"},
		"bad bind DN":           {ldapConnector(func(l *LDAPConnector) { l.BindDN = "svc" }), `ldap.bindDN "svc" is not a DN`},
		"no base DN":            {ldapConnector(func(l *LDAPConnector) { l.UserSearch.BaseDN = "" }), "ldap.userSearch.baseDN is required"},
		"bad filter":            {ldapConnector(func(l *LDAPConnector) { l.UserSearch.Filter = "objectClass=person)" }), "is not an LDAP filter"},
		"bad attribute":         {ldapConnector(func(l *LDAPConnector) { l.UserSearch.Username = "uid)(x" }), "ldap.userSearch.username"},
		"bad host":              {ldapConnector(func(l *LDAPConnector) { l.Host = "ldap.example.com:x" }), "the directory's host:port"},
		"two group sources": {ldapConnector(func(l *LDAPConnector) {
			l.UserSearch.GroupsAttr = "memberOf"
			l.GroupSearch = &LDAPGroupSearch{BaseDN: "ou=groups,dc=example,dc=com"}
		}), "choose one"},
		"bad group filter": {ldapConnector(func(l *LDAPConnector) {
			l.GroupSearch = &LDAPGroupSearch{BaseDN: "ou=groups,dc=example,dc=com", Filter: "(("}
		}), "ldap.groupSearch.filter"},
		"oidc fields":  {func() Connector { c := ldapConnector(nil); c.ClientID = "x"; return c }(), "are not for type ldap"},
		"ldap on oidc": {Connector{ID: "x", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s", LDAP: &LDAPConnector{}}, "ldap is for type ldap"},
	} {
		c := &Config{PublicURL: "https://auth.example.com", Auth: Auth{Connectors: []Connector{tc.conn}}}
		c.ApplyDefaults()
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, tc.want)
		}
	}
	// On loopback, plain LDAP is allowed (a directory on this machine, as the tests run).
	for _, host := range []string{"127.0.0.1:3890", "localhost:389", "[::1]:389"} {
		c := &Config{PublicURL: "https://auth.example.com", Auth: Auth{Connectors: []Connector{ldapConnector(func(l *LDAPConnector) {
			l.Host, l.TLS = host, LDAPInsecureNoTLS
		})}}}
		c.ApplyDefaults()
		if err := c.Validate(); err != nil {
			t.Errorf("plain LDAP on %s: %v", host, err)
		}
	}
}

// The LDAP and Active Directory examples of docs/auth.md are configurations this package accepts.
func TestConnectors_LDAPDocsExample(t *testing.T) {
	c := docsExample(t, "### LDAP and Active Directory\n")
	corp, ok := c.Auth.ConnectorByID("corp")
	if !ok || corp.Type != TypeLDAP || corp.LDAP.TLS != LDAPStartTLS || corp.LDAP.GroupSearch == nil || !corp.Trusts() {
		t.Errorf("corp: %+v", corp)
	}
	ad, ok := c.Auth.ConnectorByID("ad")
	if !ok || ad.LDAP.UserSearch.Username != "sAMAccountName" || ad.LDAP.UserSearch.IDAttr != "objectGUID" || ad.LDAP.UserSearch.GroupsAttr != "memberOf" {
		t.Errorf("ad: %+v", ad)
	}
}
