package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/go-ldap/ldap/v3"
)

// TypeLDAP is a connector to an LDAP directory or Active Directory (D75): a username and password
// checked by binding as the person, not a redirect.
const TypeLDAP = "ldap"

// LDAPConnector is the directory of a connector of type ldap: where it is, how it is reached, the
// service account that searches it, and where people and their groups are found. The settings follow
// Dex's LDAP connector's, so that a configuration moves over with few changes.
type LDAPConnector struct {
	// Host is the directory's host:port (default port 636 for ldaps, else 389).
	Host string `json:"host"`
	// TLS is how the connection is protected: ldaps (the default: TLS from the first byte), starttls
	// (plain LDAP upgraded by StartTLS before anything is sent), or insecureNoTLS (none: only for a
	// loopback host, as a test directory on the same machine).
	TLS string `json:"tls,omitempty"`
	// RootCAFile is a PEM file of the CAs that sign the directory's certificate (default: the system's).
	RootCAFile string `json:"rootCAFile,omitempty"`
	// BindDN is the service account that searches the directory; BindPasswordFile holds its password
	// (a file, a mounted Secret: never in the configuration text).
	BindDN           string `json:"bindDN"`
	BindPasswordFile string `json:"bindPasswordFile"`
	// UsernamePrompt is the label of the username field (default "Username").
	UsernamePrompt string `json:"usernamePrompt,omitempty"`
	// UserSearch finds the person's entry by the username typed.
	UserSearch LDAPUserSearch `json:"userSearch"`
	// GroupSearch finds the groups whose member attribute names the person's DN (none: no groups, or
	// userSearch.groupsAttr).
	GroupSearch *LDAPGroupSearch `json:"groupSearch,omitempty"`
}

// LDAPUserSearch finds a person: the entries under BaseDN (the whole subtree) that match Filter and
// whose Username attribute is the username typed, which must be exactly one.
type LDAPUserSearch struct {
	BaseDN string `json:"baseDN"`
	// Filter every person's entry matches (default (objectClass=person)).
	Filter string `json:"filter,omitempty"`
	// Username is the attribute the username typed is compared with (default uid; Active Directory:
	// sAMAccountName or userPrincipalName).
	Username string `json:"username,omitempty"`
	// IDAttr is the attribute that names the entry for good: the subject its link is kept by (default
	// entryUUID; Active Directory: objectGUID). A name that can change (uid, mail) makes a renamed
	// person's next sign-in someone else's.
	IDAttr string `json:"idAttr,omitempty"`
	// EmailAttr and NameAttr carry the address and the display name (defaults mail and cn).
	EmailAttr string `json:"emailAttr,omitempty"`
	NameAttr  string `json:"nameAttr,omitempty"`
	// GroupsAttr is an attribute of the person's entry that lists the DNs of their groups (memberOf, in
	// Active Directory or OpenLDAP's memberof overlay); each group's name is its DN's first value.
	GroupsAttr string `json:"groupsAttr,omitempty"`
}

// LDAPGroupSearch finds a person's groups: the entries under BaseDN that match Filter and whose
// MemberAttr holds the person's DN.
type LDAPGroupSearch struct {
	BaseDN string `json:"baseDN"`
	// Filter every group matches (default (objectClass=groupOfNames)).
	Filter string `json:"filter,omitempty"`
	// MemberAttr holds the members' DNs (default member; groupOfUniqueNames: uniqueMember).
	MemberAttr string `json:"memberAttr,omitempty"`
	// NameAttr is the group's name in our groups claim, under the connector's prefix (default cn).
	NameAttr string `json:"nameAttr,omitempty"`
}

// The LDAP connection modes.
const (
	LDAPTLS           = "ldaps"
	LDAPStartTLS      = "starttls"
	LDAPInsecureNoTLS = "insecureNoTLS"
)

// applyLDAPDefaults fills an ldap connector's defaults (D75).
func (c *Connector) applyLDAPDefaults() {
	if c.Name == "" {
		c.Name = c.ID
	}
	if c.GroupsPrefix == "" {
		c.GroupsPrefix = c.ID + ":"
	}
	l := c.LDAP
	if l == nil {
		return
	}
	if l.TLS == "" {
		l.TLS = LDAPTLS
	}
	if l.Host != "" {
		if _, _, err := net.SplitHostPort(l.Host); err != nil && !strings.Contains(l.Host, ":") {
			port := "389"
			if l.TLS == LDAPTLS {
				port = "636"
			}
			l.Host = net.JoinHostPort(l.Host, port)
		}
	}
	if l.UsernamePrompt == "" {
		l.UsernamePrompt = "Username"
	}
	us := &l.UserSearch
	for _, d := range []struct {
		f   *string
		def string
	}{{&us.Filter, "(objectClass=person)"}, {&us.Username, "uid"}, {&us.IDAttr, "entryUUID"}, {&us.EmailAttr, "mail"}, {&us.NameAttr, "cn"}} {
		if *d.f == "" {
			*d.f = d.def
		}
	}
	if gs := l.GroupSearch; gs != nil {
		for _, d := range []struct {
			f   *string
			def string
		}{{&gs.Filter, "(objectClass=groupOfNames)"}, {&gs.MemberAttr, "member"}, {&gs.NameAttr, "cn"}} {
			if *d.f == "" {
				*d.f = d.def
			}
		}
	}
}

// validateLDAP checks an ldap connector: its directory, and none of the fields of the other types.
func (c Connector) validateLDAP(at string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(at+": "+format, args...)) }
	if c.ClientID != "" || c.ClientSecretFile != "" || c.Issuer != "" || c.Tenant != "" || len(c.Scopes) > 0 || len(c.SigningAlgs) > 0 ||
		c.Claims != (ConnectorClaims{}) || c.BaseURL != "" || len(c.Orgs) > 0 || c.Preset != PresetGeneric {
		bad("clientID, clientSecretFile, issuer, tenant, preset, scopes, signingAlgs, claims, baseURL and orgs are not for type ldap; its settings are under ldap")
	}
	l := c.LDAP
	if l == nil {
		bad("ldap is required for type ldap (host, bindDN, bindPasswordFile, userSearch)")
		return errs
	}
	host, port, err := net.SplitHostPort(l.Host)
	if n, perr := strconv.Atoi(port); l.Host == "" || err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		bad("ldap.host %q: the directory's host:port, like ldap.example.com:636", l.Host)
	}
	switch l.TLS {
	case LDAPTLS, LDAPStartTLS:
	case LDAPInsecureNoTLS:
		// Passwords go to the directory in a simple bind: in the clear only to this machine.
		if host != "" && !loopbackHost(host) {
			bad("ldap.tls insecureNoTLS sends passwords in the clear: only for a loopback host (localhost, 127.0.0.1, ::1); use ldaps or starttls for %q", host)
		}
		if l.RootCAFile != "" {
			bad("ldap.rootCAFile is for ldaps and starttls")
		}
	default:
		bad("ldap.tls %q: one of ldaps, starttls, insecureNoTLS", l.TLS)
	}
	if l.BindDN == "" {
		bad("ldap.bindDN is required (the service account that searches the directory; anonymous search is not supported)")
	} else if _, err := ldap.ParseDN(l.BindDN); err != nil {
		bad("ldap.bindDN %q is not a DN: %v", l.BindDN, err)
	}
	if l.BindPasswordFile == "" {
		bad("ldap.bindPasswordFile is required (the service account's password, in a file)")
	}
	if utf8Len(l.UsernamePrompt) > 64 {
		bad("ldap.usernamePrompt: at most 64 characters")
	}
	us := l.UserSearch
	errs = append(errs, checkDNAndFilter(at+": ldap.userSearch", us.BaseDN, us.Filter)...)
	for name, v := range map[string]string{"username": us.Username, "idAttr": us.IDAttr, "emailAttr": us.EmailAttr, "nameAttr": us.NameAttr} {
		if !ldapAttr(v) {
			bad("ldap.userSearch.%s %q is not an attribute name", name, v)
		}
	}
	if us.GroupsAttr != "" && !ldapAttr(us.GroupsAttr) {
		bad("ldap.userSearch.groupsAttr %q is not an attribute name", us.GroupsAttr)
	}
	if gs := l.GroupSearch; gs != nil {
		if us.GroupsAttr != "" {
			bad("ldap: groupSearch and userSearch.groupsAttr both read groups; choose one")
		}
		errs = append(errs, checkDNAndFilter(at+": ldap.groupSearch", gs.BaseDN, gs.Filter)...)
		for name, v := range map[string]string{"memberAttr": gs.MemberAttr, "nameAttr": gs.NameAttr} {
			if !ldapAttr(v) {
				bad("ldap.groupSearch.%s %q is not an attribute name", name, v)
			}
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}

// checkDNAndFilter checks a search's base DN and filter (go-ldap parses both as the directory would).
func checkDNAndFilter(at, baseDN, filter string) []error {
	var errs []error
	if baseDN == "" {
		errs = append(errs, fmt.Errorf("%s.baseDN is required", at))
	} else if _, err := ldap.ParseDN(baseDN); err != nil {
		errs = append(errs, fmt.Errorf("%s.baseDN %q is not a DN: %v", at, baseDN, err))
	}
	if _, err := ldap.CompileFilter(filter); err != nil {
		errs = append(errs, fmt.Errorf("%s.filter %q is not an LDAP filter, like (objectClass=person): %v", at, filter, err))
	}
	return errs
}

// ldapAttr: an attribute description (RFC 4512 1.4: a name or an OID, with options after ';').
func ldapAttr(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '.' || r == ';')) {
			return false
		}
	}
	return true
}

func utf8Len(s string) int { return len([]rune(s)) }

// readsLDAPGroups: an ldap connector reads groups when it searches them or reads a groups attribute.
func (c Connector) readsLDAPGroups() bool {
	return c.Type == TypeLDAP && c.LDAP != nil && (c.LDAP.GroupSearch != nil || c.LDAP.UserSearch.GroupsAttr != "")
}
