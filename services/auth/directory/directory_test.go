package directory

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/formsservice/formsservice/internal/testldap"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// connector is a connector to d: plain LDAP on loopback, the service account, groups by search (or by
// the people's seeAlso attribute, which lists their groups' DNs as memberOf does, with groupsAttr).
func connector(t *testing.T, d *testldap.Server, groupsAttr bool) *Connector {
	t.Helper()
	c := config.Connector{ID: "corp", Type: config.TypeLDAP, LDAP: &config.LDAPConnector{Host: d.Addr(), TLS: config.LDAPInsecureNoTLS,
		BindDN: testldap.ServiceDN, BindPasswordFile: "/unused", UserSearch: config.LDAPUserSearch{BaseDN: testldap.PeopleDN, Filter: "(objectClass=inetOrgPerson)"}}}
	if groupsAttr {
		c.LDAP.UserSearch.GroupsAttr = "seeAlso"
	} else {
		c.LDAP.GroupSearch = &config.LDAPGroupSearch{BaseDN: testldap.GroupsDN}
	}
	cfg := config.Config{PublicURL: "https://auth.example.com", Auth: config.Auth{Connectors: []config.Connector{c}}}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	conn, err := New(cfg.Auth.Connectors[0], testldap.ServicePass)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

func TestAuthenticate_ReadsThePersonAndTheirGroups(t *testing.T) {
	d := testldap.Start(t, nil)
	for _, groupsAttr := range []bool{false, true} {
		c := connector(t, d, groupsAttr)
		id, err := c.Authenticate(context.Background(), " alice ", "alice-pass")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(id.Groups)
		if id.Email != "alice@example.com" || id.Name != "Alice Liddell" || !id.EmailVerified || len(id.Subject) != 36 ||
			!slices.Equal(id.Groups, []string{"admins", "staff"}) || id.Recheck == "" {
			t.Errorf("groupsAttr %v: %+v", groupsAttr, id)
		}
		bob, err := c.Authenticate(context.Background(), "bob", "bob-pass")
		if err != nil || bob.Subject == id.Subject || !slices.Equal(bob.Groups, []string{"staff"}) {
			t.Errorf("bob: %+v %v", bob, err)
		}
	}
}

func TestAuthenticate_RefusesWithOneAnswer(t *testing.T) {
	d := testldap.Start(t, nil)
	c := connector(t, d, false)
	for name, tc := range map[string]struct{ user, pass string }{
		"wrong password": {"alice", "bob-pass"},
		"unknown user":   {"mallory", "x"},
		// An empty password would be an unauthenticated bind, which LDAP answers with success.
		"empty password":             {"alice", ""},
		"empty password, no pass":    {"carol", ""},
		"wildcard username":          {"*", "alice-pass"},
		"wildcard matching one":      {"alic*", "alice-pass"}, // unescaped, it finds alice, whose password this is
		"filter injection":           {"*)(uid=*", "alice-pass"},
		"filter injection, or":       {"alice)(|(uid=*", "alice-pass"},
		"the service account's name": {"svc", testldap.ServicePass},
		"empty username":             {"", "alice-pass"},
	} {
		id, err := c.Authenticate(context.Background(), tc.user, tc.pass)
		if !errors.Is(err, ErrBadCredentials) || !errors.Is(err, upstream.ErrRefused) || id != nil {
			t.Errorf("%s: %+v %v, want ErrBadCredentials", name, id, err)
		}
	}
}

func TestAuthenticate_DirectoryDownIsUnreachable(t *testing.T) {
	d := testldap.Start(t, nil)
	c := connector(t, d, false)
	d.Stop()
	if _, err := c.Authenticate(context.Background(), "alice", "alice-pass"); !errors.Is(err, upstream.ErrUnreachable) {
		t.Errorf("directory stopped: %v, want ErrUnreachable", err)
	}
	wrong := connector(t, d, false)
	wrong.bindPassword = "not-the-service-password"
	d.Restart()
	if _, err := wrong.Authenticate(context.Background(), "alice", "alice-pass"); !errors.Is(err, upstream.ErrUnreachable) {
		t.Errorf("service account refused: %v, want ErrUnreachable (the operator's to fix, not the person's)", err)
	}
}

func TestRecheck_GoneEntryIsNotAllowed(t *testing.T) {
	d := testldap.Start(t, nil)
	c := connector(t, d, false)
	id, err := c.Authenticate(context.Background(), "bob", "bob-pass")
	if err != nil {
		t.Fatal(err)
	}
	state, err := c.Recheck(context.Background(), id.Recheck)
	if err != nil || state != id.Recheck {
		t.Fatalf("recheck of a present entry: %q %v", state, err)
	}
	d.Stop()
	if _, err := c.Recheck(context.Background(), id.Recheck); !errors.Is(err, upstream.ErrUnreachable) {
		t.Errorf("directory stopped: %v, want ErrUnreachable", err)
	}
	d.Restart()
	d.Delete(testldap.Person{UID: "bob"}.DN())
	if _, err := c.Recheck(context.Background(), id.Recheck); !errors.Is(err, upstream.ErrNotAllowed) {
		t.Errorf("entry deleted: %v, want ErrNotAllowed", err)
	}
	if _, err := c.Recheck(context.Background(), "not json"); !errors.Is(err, upstream.ErrNotAllowed) {
		t.Errorf("bad state: %v", err)
	}
	// An entry that no longer matches the user filter (here: a filter it never matched) is not allowed.
	alice, err := c.Authenticate(context.Background(), "alice", "alice-pass")
	if err != nil {
		t.Fatal(err)
	}
	c.cfg.LDAP.UserSearch.Filter = "(objectClass=groupOfNames)"
	if _, err := c.Recheck(context.Background(), alice.Recheck); !errors.Is(err, upstream.ErrNotAllowed) {
		t.Errorf("entry out of the filter: %v, want ErrNotAllowed", err)
	}
}

// Over TLS, as a directory off this machine is reached: LDAPS and StartTLS with the directory's CA
// (rootCAFile), and a certificate no trusted CA signed refused as the directory being unreachable.
func TestAuthenticate_OverTLS(t *testing.T) {
	d := testldap.StartWith(t, testldap.Options{TLS: true})
	for name, tc := range map[string]struct {
		host, mode, ca string
		ok             bool
	}{
		"ldaps":                     {d.TLSAddr(), config.LDAPTLS, d.CAFile(), true},
		"starttls":                  {d.Addr(), config.LDAPStartTLS, d.CAFile(), true},
		"ldaps, the CA not trusted": {d.TLSAddr(), config.LDAPTLS, "", false},
		"starttls, CA not trusted":  {d.Addr(), config.LDAPStartTLS, "", false},
	} {
		c := connector(t, d, false)
		c.cfg.LDAP.Host, c.cfg.LDAP.TLS, c.cfg.LDAP.RootCAFile = tc.host, tc.mode, tc.ca
		tlsConn, err := New(c.cfg, testldap.ServicePass)
		if err != nil {
			t.Fatal(err)
		}
		id, err := tlsConn.Authenticate(context.Background(), "alice", "alice-pass")
		switch {
		case tc.ok && (err != nil || id.Email != "alice@example.com"):
			t.Errorf("%s: %+v %v", name, id, err)
		case !tc.ok && !errors.Is(err, upstream.ErrUnreachable):
			t.Errorf("%s: %v, want ErrUnreachable (an unknown certificate)", name, err)
		}
	}
}
