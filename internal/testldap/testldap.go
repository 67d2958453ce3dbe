// Package testldap runs a real OpenLDAP directory (Debian's slapd) for a test: its own slapd.conf and
// database in the test's directory, seeded with slapadd (people with uid, mail, cn and a password; groups
// as groupOfNames), serving plain LDAP on a loopback port. Under `go test -short` it skips the test.
package testldap

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/formsservice/formsservice/internal/testcerts"
	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
)

// The seeded directory's names.
const (
	BaseDN      = "dc=example,dc=com"
	PeopleDN    = "ou=people," + BaseDN
	GroupsDN    = "ou=groups," + BaseDN
	AdminDN     = "cn=admin," + BaseDN // the rootdn: slapd's own, for a test's changes
	AdminPass   = "admin-secret"
	ServiceDN   = "cn=svc," + BaseDN // the service account a connector searches with
	ServicePass = "svc-secret"
)

// Person is one seeded person: uid=<UID>,ou=people.
type Person struct {
	UID, Name, Email, Password string
	Groups                     []string // the cn of the groups (groupOfNames under ou=groups) they are in
}

// DN is the person's entry's DN.
func (p Person) DN() string { return "uid=" + p.UID + "," + PeopleDN }

// Seed is the default directory: alice (in admins and staff), bob (in staff), and carol, whose password
// is empty in the directory (she has none).
var Seed = []Person{
	{UID: "alice", Name: "Alice Liddell", Email: "alice@example.com", Password: "alice-pass", Groups: []string{"admins", "staff"}},
	{UID: "bob", Name: "Bob Builder", Email: "bob@example.com", Password: "bob-pass", Groups: []string{"staff"}},
	{UID: "carol", Name: "Carol Nopass", Email: "carol@example.com"},
}

// Server is one slapd process.
type Server struct {
	tb      testing.TB
	dir     string
	port    int
	tls     bool
	tlsPort int // LDAPS, with Options.TLS
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	log     *strings.Builder
}

// Binary is slapd's path (SLAPD overrides; Debian's package puts it in /usr/sbin).
func Binary() string {
	if p := os.Getenv("SLAPD"); p != "" {
		return p
	}
	return "/usr/sbin/slapd"
}

// Options are a directory's: its people (Seed when nil), and TLS: a certificate for 127.0.0.1 signed
// by a CA of the test's (CAFile), for StartTLS on the plain port and LDAPS on a second one (TLSAddr).
type Options struct {
	People []Person
	TLS    bool
}

// Start seeds a directory with people (Seed when nil) and starts slapd on a free loopback port.
func Start(tb testing.TB, people []Person) *Server {
	tb.Helper()
	return StartWith(tb, Options{People: people})
}

// StartWith starts a directory with o.
func StartWith(tb testing.TB, o Options) *Server {
	tb.Helper()
	people := o.People
	if testing.Short() {
		tb.Skip("needs OpenLDAP's slapd: not run under -short (make test-fast); make test runs it")
	}
	if _, err := os.Stat(Binary()); err != nil {
		tb.Fatalf("slapd: %v (make deps installs Debian's slapd)", err)
	}
	if people == nil {
		people = Seed
	}
	s := &Server{tb: tb, dir: tb.TempDir(), tls: o.TLS}
	if err := os.Mkdir(filepath.Join(s.dir, "data"), 0o700); err != nil {
		tb.Fatal(err)
	}
	if s.tls {
		testcerts.Write(tb, s.dir, "testldap")
	}
	if err := os.WriteFile(s.conf(), []byte(s.config()), 0o600); err != nil {
		tb.Fatal(err)
	}
	seed := filepath.Join(s.dir, "seed.ldif")
	if err := os.WriteFile(seed, []byte(LDIF(people)), 0o600); err != nil {
		tb.Fatal(err)
	}
	slapadd := filepath.Join(filepath.Dir(Binary()), "slapadd")
	if out, err := exec.Command(slapadd, "-f", s.conf(), "-l", seed).CombinedOutput(); err != nil {
		tb.Fatalf("slapadd: %v\n%s", err, out)
	}
	for attempt := 1; ; attempt++ {
		s.port = testredis.FreePort(tb)
		if s.tls {
			s.tlsPort = testredis.FreePort(tb)
		}
		err := s.start()
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "Address already in use") || attempt == 20 {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(s.Stop)
	return s
}

func (s *Server) conf() string { return filepath.Join(s.dir, "slapd.conf") }

// config is slapd.conf: the schemas of people and groups, one mdb database, and access rules that let
// nobody read anything without binding (the service account searches) and nobody read a password.
func (s *Server) config() string {
	tlsConf := ""
	if s.tls {
		tlsConf = fmt.Sprintf("TLSCACertificateFile %[1]s/ca.pem\nTLSCertificateFile %[1]s/server.pem\nTLSCertificateKeyFile %[1]s/server-key.pem\n", s.dir)
	}
	return tlsConf + fmt.Sprintf(`include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
pidfile %[1]s/slapd.pid
modulepath /usr/lib/ldap
moduleload back_mdb
database mdb
maxsize 10485760
suffix "%[2]s"
rootdn "%[3]s"
rootpw %[4]s
directory %[1]s/data
index objectClass eq
index uid eq
access to attrs=userPassword by anonymous auth by * none
access to * by users read by * none
`, s.dir, BaseDN, AdminDN, AdminPass)
}

// LDIF is the seed: the base, ou=people, ou=groups, the service account, the people and their groups.
func LDIF(people []Person) string {
	var b strings.Builder
	fmt.Fprintf(&b, "dn: %s\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n", BaseDN)
	fmt.Fprintf(&b, "dn: %s\nobjectClass: organizationalUnit\nou: people\n\n", PeopleDN)
	fmt.Fprintf(&b, "dn: %s\nobjectClass: organizationalUnit\nou: groups\n\n", GroupsDN)
	fmt.Fprintf(&b, "dn: %s\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: svc\nuserPassword: %s\n\n", ServiceDN, ServicePass)
	members := map[string][]string{}
	var order []string
	for _, p := range people {
		fmt.Fprintf(&b, "dn: %s\nobjectClass: inetOrgPerson\nuid: %s\ncn: %s\nsn: %s\n", p.DN(), p.UID, p.Name, p.UID)
		if p.Email != "" {
			fmt.Fprintf(&b, "mail: %s\n", p.Email)
		}
		if p.Password != "" {
			fmt.Fprintf(&b, "userPassword: %s\n", p.Password)
		}
		for _, g := range p.Groups {
			if _, ok := members[g]; !ok {
				order = append(order, g)
			}
			members[g] = append(members[g], p.DN())
			fmt.Fprintf(&b, "seeAlso: cn=%s,%s\n", g, GroupsDN) // a DN-valued attribute, as memberOf is
		}
		b.WriteString("\n")
	}
	for _, g := range order {
		fmt.Fprintf(&b, "dn: cn=%s,%s\nobjectClass: groupOfNames\ncn: %s\n", g, GroupsDN, g)
		for _, m := range members[g] {
			fmt.Fprintf(&b, "member: %s\n", m)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// start runs slapd in the foreground (-d 0) and waits until its port answers, or it exits.
func (s *Server) start() error {
	urls := "ldap://" + s.Addr() + "/"
	if s.tls {
		urls += " ldaps://" + s.TLSAddr() + "/"
	}
	cmd := exec.Command(Binary(), "-d", "0", "-f", s.conf(), "-h", urls)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	testproc.DieWithParent(cmd)
	log := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = &lockedWriter{w: log, mu: &s.mu}, &lockedWriter{w: log, mu: &s.mu}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done, s.log = cmd, done, log
	err := testwait.Poll(20*time.Second, func() error {
		select {
		case <-done:
			return nil
		default:
		}
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	select {
	case <-done:
		return fmt.Errorf("slapd exited (%v): %s", cmd.ProcessState, s.Log())
	default:
	}
	if err != nil {
		s.Stop()
		return fmt.Errorf("slapd did not listen on %s within 20s: %v; log: %s", s.Addr(), err, s.Log())
	}
	return nil
}

// Log is what slapd wrote.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TLSAddr is slapd's LDAPS host:port (Options.TLS).
func (s *Server) TLSAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tlsPort)) }

// CAFile is the PEM file of the CA that signed slapd's certificate (Options.TLS).
func (s *Server) CAFile() string { return filepath.Join(s.dir, "ca.pem") }

// Addr is slapd's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Stop ends slapd (and waits for it): the directory is down until Restart.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// Restart starts slapd again on the same port with the same data.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.tb.Fatal(err)
	}
}

// Admin is a connection bound as the rootdn, for a test's changes to the directory.
func (s *Server) Admin() *ldap.Conn {
	s.tb.Helper()
	c, err := ldap.DialURL("ldap://" + s.Addr())
	if err != nil {
		s.tb.Fatal(err)
	}
	if err := c.Bind(AdminDN, AdminPass); err != nil {
		c.Close()
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(func() { c.Close() })
	return c
}

// Delete removes the entry dn.
func (s *Server) Delete(dn string) {
	s.tb.Helper()
	if err := s.Admin().Del(ldap.NewDelRequest(dn, nil)); err != nil {
		s.tb.Fatalf("delete %s: %v", dn, err)
	}
}
