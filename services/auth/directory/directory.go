// Package directory is the client of one LDAP directory or Active Directory (a connector of type ldap,
// D75): the person's username and password checked by binding as them, after the service account found
// their one entry; their address, name and groups read; and the entry read again later (Recheck). Every
// value typed goes into a filter escaped (ldap.EscapeFilter) and an empty password is refused before any
// bind, since an LDAP bind without a password is an unauthenticated bind that "succeeds" (RFC 4513
// 5.1.2). It keeps no connection: each sign-in dials, binds and closes. go-ldap speaks LDAP.
package directory

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-ldap/ldap/v3"

	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// ErrBadCredentials: no one entry has the username, or the password is not its password (one error for
// both, so that the answer does not tell which usernames exist).
var ErrBadCredentials = fmt.Errorf("%w: wrong username or password", upstream.ErrRefused)

// The bounds of what is typed: longer is no one's username or password.
const (
	MaxUsername = 256
	MaxPassword = 1024
)

// Timeout bounds the connection and each operation on it.
const Timeout = 10 * time.Second

// Connector is one directory, as one version of the configuration describes it.
type Connector struct {
	cfg          config.Connector
	bindPassword string
	tls          *tls.Config // nil: insecureNoTLS (loopback only)
}

// New returns the connector for c (of type ldap) with its service account's password; an error when
// its rootCAFile cannot be read.
func New(c config.Connector, bindPassword string) (*Connector, error) {
	l := c.LDAP
	if l == nil {
		return nil, errors.New("directory: the connector has no ldap settings")
	}
	conn := &Connector{cfg: c, bindPassword: bindPassword}
	if l.TLS != config.LDAPInsecureNoTLS {
		host, _, _ := net.SplitHostPort(l.Host)
		conn.tls = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		if l.RootCAFile != "" {
			pem, err := os.ReadFile(l.RootCAFile)
			if err != nil {
				return nil, fmt.Errorf("directory: rootCAFile: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("directory: rootCAFile %s holds no PEM certificate", l.RootCAFile)
			}
			conn.tls.RootCAs = pool
		}
	}
	return conn, nil
}

// Config is the connector's configuration.
func (c *Connector) Config() config.Connector { return c.cfg }

// dial connects (TLS from the start, or StartTLS before anything else is sent) and binds as the service
// account. Any failure is ErrUnreachable: the directory is down, or the service account is refused
// (logged by the caller: an operator's to fix), and the sign-in may work later.
func (c *Connector) dial(ctx context.Context) (*ldap.Conn, error) {
	l := c.cfg.LDAP
	d := &net.Dialer{Timeout: Timeout}
	if dl, ok := ctx.Deadline(); ok {
		d.Deadline = dl
	}
	var conn *ldap.Conn
	var err error
	if l.TLS == config.LDAPTLS {
		conn, err = ldap.DialURL("ldaps://"+l.Host, ldap.DialWithDialer(d), ldap.DialWithTLSConfig(c.tls))
	} else {
		conn, err = ldap.DialURL("ldap://"+l.Host, ldap.DialWithDialer(d))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", upstream.ErrUnreachable, l.Host, err)
	}
	conn.SetTimeout(Timeout)
	if l.TLS == config.LDAPStartTLS {
		if err := conn.StartTLS(c.tls); err != nil {
			conn.Close()
			return nil, fmt.Errorf("%w: StartTLS with %s: %v", upstream.ErrUnreachable, l.Host, err)
		}
	}
	if err := c.bindService(conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func (c *Connector) bindService(conn *ldap.Conn) error {
	if err := conn.Bind(c.cfg.LDAP.BindDN, c.bindPassword); err != nil {
		return fmt.Errorf("%w: the service account %s could not bind: %v", upstream.ErrUnreachable, c.cfg.LDAP.BindDN, err)
	}
	return nil
}

// Authenticate checks username and password against the directory and reads the person.
func (c *Connector) Authenticate(ctx context.Context, username, password string) (*upstream.Identity, error) {
	username = strings.TrimSpace(username)
	if username == "" || password == "" || len(username) > MaxUsername || len(password) > MaxPassword || !utf8.ValidString(username) {
		return nil, ErrBadCredentials // before any bind: an empty password binds anonymously
	}
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	us := c.cfg.LDAP.UserSearch
	attrs := []string{us.IDAttr, us.EmailAttr, us.NameAttr}
	if us.GroupsAttr != "" {
		attrs = append(attrs, us.GroupsAttr)
	}
	filter := fmt.Sprintf("(&%s(%s=%s))", us.Filter, us.Username, ldap.EscapeFilter(username))
	res, err := conn.Search(ldap.NewSearchRequest(us.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 2, int(Timeout/time.Second), false, filter, attrs, nil))
	if err != nil && !ldap.IsErrorWithCode(err, ldap.LDAPResultSizeLimitExceeded) && !ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject) {
		return nil, unreachable("the user search", err)
	}
	if res == nil || len(res.Entries) != 1 {
		return nil, ErrBadCredentials // none, or more than one: never a guess at which
	}
	entry := res.Entries[0]
	if err := conn.Bind(entry.DN, password); err != nil {
		if ldap.IsErrorAnyOf(err, ldap.ErrorNetwork, ldap.LDAPResultBusy, ldap.LDAPResultUnavailable) {
			return nil, unreachable("the user's bind", err)
		}
		return nil, ErrBadCredentials // invalid credentials, and Active Directory's locked or expired accounts
	}
	id := &upstream.Identity{
		Issuer:  "ldap://" + c.cfg.LDAP.Host,
		Subject: attrValue(entry, us.IDAttr),
		Email:   entry.GetAttributeValue(us.EmailAttr),
		Name:    entry.GetAttributeValue(us.NameAttr),
		// The directory names the person's address; whether it is verified is the connector's word
		// (trustEmailVerified), which federation.Resolve asks as for any connector.
		EmailVerified: true,
	}
	if id.Subject == "" {
		return nil, fmt.Errorf("%w: the entry %s has no %s", upstream.ErrRefused, entry.DN, us.IDAttr)
	}
	state, _ := json.Marshal(recheckState{DN: entry.DN, ID: id.Subject})
	id.Recheck = string(state)
	if us.GroupsAttr != "" {
		for _, dn := range entry.GetAttributeValues(us.GroupsAttr) {
			if name := firstRDNValue(dn); name != "" {
				id.Groups = append(id.Groups, name)
			}
		}
	}
	if gs := c.cfg.LDAP.GroupSearch; gs != nil {
		// Back to the service account: a person may not read the groups.
		if err := c.bindService(conn); err != nil {
			return nil, err
		}
		filter := fmt.Sprintf("(&%s(%s=%s))", gs.Filter, gs.MemberAttr, ldap.EscapeFilter(entry.DN))
		res, err := conn.Search(ldap.NewSearchRequest(gs.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 0, int(Timeout/time.Second), false, filter, []string{gs.NameAttr}, nil))
		if err != nil && !ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject) {
			return nil, unreachable("the group search", err)
		}
		if res != nil {
			for _, g := range res.Entries {
				if name := g.GetAttributeValue(gs.NameAttr); name != "" {
					id.Groups = append(id.Groups, name)
				}
			}
		}
	}
	return id, nil
}

// recheckState is what a sign-in keeps for Recheck: the entry's DN and the subject it had.
type recheckState struct {
	DN string `json:"dn"`
	ID string `json:"id"`
}

// Recheck reads the entry of a sign-in again with the service account (federation.Rechecker): gone, no
// longer matching the user filter, or another entry at the DN (its id attribute changed) is an error
// wrapping upstream.ErrNotAllowed; the directory down wraps upstream.ErrUnreachable. The state is kept.
func (c *Connector) Recheck(ctx context.Context, state string) (string, error) {
	var st recheckState
	if err := json.Unmarshal([]byte(state), &st); err != nil || st.DN == "" {
		return "", fmt.Errorf("%w: the re-check state is not an LDAP entry's", upstream.ErrNotAllowed)
	}
	conn, err := c.dial(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	us := c.cfg.LDAP.UserSearch
	res, err := conn.Search(ldap.NewSearchRequest(st.DN, ldap.ScopeBaseObject, ldap.NeverDerefAliases, 1, int(Timeout/time.Second), false, us.Filter, []string{us.IDAttr}, nil))
	switch {
	case ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject):
		return "", fmt.Errorf("%w: the entry %s is gone", upstream.ErrNotAllowed, st.DN)
	case err != nil:
		return "", unreachable("the re-check", err)
	case len(res.Entries) != 1:
		return "", fmt.Errorf("%w: the entry %s no longer matches the user filter", upstream.ErrNotAllowed, st.DN)
	case attrValue(res.Entries[0], us.IDAttr) != st.ID:
		return "", fmt.Errorf("%w: the entry %s is another person's now (its %s changed)", upstream.ErrNotAllowed, st.DN, us.IDAttr)
	}
	return state, nil
}

// unreachable wraps an error of the directory's: ErrUnreachable (a network error, a timeout, or an
// answer the service account should not get: busy, unavailable, insufficient access).
func unreachable(what string, err error) error {
	return fmt.Errorf("%w: %s: %v", upstream.ErrUnreachable, what, err)
}

// attrValue is an attribute's value as a subject: as it is when it is printable text, else its bytes
// in base64url (Active Directory's objectGUID is 16 raw bytes).
func attrValue(e *ldap.Entry, attr string) string {
	raw := e.GetRawAttributeValue(attr)
	if len(raw) == 0 {
		return ""
	}
	if utf8.Valid(raw) && !strings.ContainsFunc(string(raw), func(r rune) bool { return !unicode.IsPrint(r) }) {
		return string(raw)
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

// firstRDNValue is a group's name from its DN: the value of its first attribute (cn=admins,ou=… →
// admins); "" for what is not a DN.
func firstRDNValue(dn string) string {
	d, err := ldap.ParseDN(dn)
	if err != nil || len(d.RDNs) == 0 || len(d.RDNs[0].Attributes) == 0 {
		return ""
	}
	return d.RDNs[0].Attributes[0].Value
}
