package clientip

import (
	"bufio"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// rawClientIP sends a GET with the header lines exactly as given, in that order (Go's HTTP client
// would sort them), and returns the address the server saw.
func rawClientIP(t *testing.T, url string, headerLines ...string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n" + strings.Join(headerLines, "\r\n")
	if len(headerLines) > 0 {
		req += "\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 256)
	n, _ := res.Body.Read(buf)
	b.Write(buf[:n])
	return b.String()
}

// HAProxy's `option forwardfor` appends a line of its own after whatever the client sent: every line
// counts, in order, so a forged first line does not win; the RFC 7239 Forwarded header is read the same
// way, and both headers together are one list of hops in the order their lines arrived.
func TestClientIP_EveryForwardingLineInOrder(t *testing.T) {
	url := serveClientIP(t, []string{"127.0.0.1", "10.0.0.0/8"})
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"HAProxy appends a line after a forged one", []string{"X-Forwarded-For: 198.51.100.66", "X-Forwarded-For: 203.0.113.9"}, "203.0.113.9"},
		{"a forged line with several hops", []string{"X-Forwarded-For: 198.51.100.66, 10.9.9.9", "X-Forwarded-For: 203.0.113.9"}, "203.0.113.9"},
		{"two lines, an inner proxy last", []string{"X-Forwarded-For: 198.51.100.66", "X-Forwarded-For: 203.0.113.9, 10.1.2.3"}, "203.0.113.9"},
		{"an empty line between", []string{"X-Forwarded-For: 198.51.100.66", "X-Forwarded-For: ", "X-Forwarded-For: 203.0.113.9"}, "203.0.113.9"},
		{"Forwarded alone", []string{`Forwarded: for=203.0.113.9;proto=https;by=10.0.0.1`}, "203.0.113.9"},
		{"Forwarded, quoted IPv6 with port", []string{`Forwarded: for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::17"},
		{"Forwarded, several elements", []string{`Forwarded: for=198.51.100.66, for=203.0.113.9;proto=http, for=10.1.2.3`}, "203.0.113.9"},
		{"Forwarded, case of names", []string{`forwarded: For=203.0.113.9`}, "203.0.113.9"},
		{"Forwarded forged, then the proxy's X-Forwarded-For", []string{`Forwarded: for=198.51.100.66`, "X-Forwarded-For: 203.0.113.9"}, "203.0.113.9"},
		{"X-Forwarded-For forged, then the proxy's Forwarded", []string{"X-Forwarded-For: 198.51.100.66", `Forwarded: for=203.0.113.9`}, "203.0.113.9"},
		{"an unknown hop next to us", []string{`Forwarded: for=203.0.113.9, for=unknown`}, "127.0.0.1"},
		{"an obfuscated hop next to us", []string{`Forwarded: for=_hidden`}, "127.0.0.1"},
		{"an element without for", []string{`Forwarded: proto=https`}, "127.0.0.1"},
		{"two for= in one element", []string{`Forwarded: for=203.0.113.9;for=198.51.100.66`}, "127.0.0.1"},
		{"a quoted comma is no separator", []string{`Forwarded: for="203.0.113.9,198.51.100.66"`}, "127.0.0.1"},
		{"a port on an X-Forwarded-For hop", []string{"X-Forwarded-For: 203.0.113.9:51234"}, "203.0.113.9"},
		{"IPv4-mapped", []string{`Forwarded: for="[::ffff:203.0.113.9]"`}, "203.0.113.9"},
	} {
		if got := rawClientIP(t, url, c.lines...); got != c.want {
			t.Errorf("%s: %q: got %s, want %s", c.name, c.lines, got, c.want)
		}
	}
}

// An operator whose proxy writes only X-Forwarded-For (and does not remove a Forwarded header the
// client sent, as nginx's proxy_set_header does not) names it, and a client's Forwarded line is then
// ignored wherever it sits.
func TestClientIP_OnlyTheNamedHeader(t *testing.T) {
	trust := ParseProxies([]string{"127.0.0.1"}, "x-forwarded-for")
	url := serveWith(t, trust)
	if got := rawClientIP(t, url, "X-Forwarded-For: 203.0.113.9", `Forwarded: for=198.51.100.66`); got != "203.0.113.9" {
		t.Fatalf("a client's Forwarded header after the proxy's X-Forwarded-For: got %s", got)
	}
	trust = ParseProxies([]string{"127.0.0.1"}, "Forwarded")
	url = serveWith(t, trust)
	if got := rawClientIP(t, url, `Forwarded: for=203.0.113.9`, "X-Forwarded-For: 198.51.100.66"); got != "203.0.113.9" {
		t.Fatalf("a client's X-Forwarded-For after the proxy's Forwarded: got %s", got)
	}
}

func TestParseNode(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.9": "203.0.113.9", "203.0.113.9:80": "203.0.113.9", "[2001:db8::1]": "2001:db8::1", "[2001:db8::1]:443": "2001:db8::1",
		"2001:db8::1": "2001:db8::1", "fe80::1%eth0": "fe80::1", "::ffff:203.0.113.9": "203.0.113.9",
	} {
		if a, ok := parseNode([]byte(in)); !ok || a != netip.MustParseAddr(want) {
			t.Errorf("parseNode(%q) = %v %v, want %s", in, a, ok, want)
		}
	}
	for _, bad := range []string{"", "unknown", "_hidden", "[203.0.113.9]", "203.0.113.9%eth0", "1.2.3", "[::1", "example.com", `::%"`, "fe80::1%a;b", "fe80::1%a b"} {
		if a, ok := parseNode([]byte(bad)); ok {
			t.Errorf("parseNode(%q) = %v", bad, a)
		}
	}
}
