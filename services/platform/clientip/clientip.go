// Package clientip tells who sent a request: the client address behind trusted proxies, and the key
// that rate limits and throttles count it by.
//
// Behind a trusted proxy the client's address is read from the forwarding headers, all of them, in the
// order their lines arrived: every X-Forwarded-For line (HAProxy's `option forwardfor` appends a line of
// its own after the client's) and every RFC 7239 Forwarded line, as one list of hops, oldest first. The
// answer is the right-most hop that is not itself a trusted proxy: everything to the left of it was
// written by the client and can be forged.
package clientip

import (
	"bytes"
	"net"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Header names.
const (
	HeaderXForwardedFor = "X-Forwarded-For"
	HeaderForwarded     = "Forwarded"
)

// Proxies says which peers' forwarding headers are believed, and which headers. Build it once per
// configuration (ParseProxies) and call Addr per request.
type Proxies struct {
	prefixes []netip.Prefix
	xff, fwd bool // which headers to read
}

// ParseProxies reads addresses and CIDRs (the configuration's trustedProxies); entries that do not
// parse are skipped (the configuration validates them). headers names the forwarding headers the
// proxies write (X-Forwarded-For, Forwarded; any case); none means both. Naming only the one a proxy
// manages matters when it sets that header without removing the other one a client may have sent (see
// docs/auth.md "Client address").
func ParseProxies(list []string, headers ...string) *Proxies {
	t := &Proxies{xff: len(headers) == 0, fwd: len(headers) == 0}
	for _, h := range headers {
		switch {
		case strings.EqualFold(h, HeaderXForwardedFor):
			t.xff = true
		case strings.EqualFold(h, HeaderForwarded):
			t.fwd = true
		}
	}
	for _, s := range list {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			t.prefixes = append(t.prefixes, p.Masked())
		} else if a, err := netip.ParseAddr(s); err == nil {
			a = a.Unmap()
			t.prefixes = append(t.prefixes, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return t
}

func (t *Proxies) trusted(a netip.Addr) bool {
	if t == nil {
		return false
	}
	for _, p := range t.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Addr is the address of the client that sent the request: the peer, or, when the peer is a trusted
// proxy, the right-most hop of the forwarding headers that is not a trusted proxy. A hop that cannot be
// read (garbage, "unknown", an obfuscated identifier) ends the walk at the peer: the proxy we trust is
// the last thing we know. (Fiber's own c.IP() returns the header as the client wrote it.)
func Addr(c *fiber.Ctx, t *Proxies) netip.Addr {
	peer := peerAddr(c)
	if !t.trusted(peer) {
		return peer
	}
	var lines []line
	c.Request().Header.VisitAll(func(k, v []byte) {
		switch {
		case t.xff && bytes.EqualFold(k, []byte(HeaderXForwardedFor)):
			lines = append(lines, line{v, false})
		case t.fwd && bytes.EqualFold(k, []byte(HeaderForwarded)):
			lines = append(lines, line{v, true})
		}
	})
	return rightmostUntrusted(lines, t, peer)
}

// line is one forwarding header line; forwarded tells the RFC 7239 syntax from X-Forwarded-For's.
type line struct {
	v         []byte
	forwarded bool
}

// rightmostUntrusted walks the hops from the right (the newest line first, each line from its end).
func rightmostUntrusted(lines []line, t *Proxies, peer netip.Addr) netip.Addr {
	for i := len(lines) - 1; i >= 0; i-- {
		elems := splitElements(lines[i].v)
		for j := len(elems) - 1; j >= 0; j-- {
			node := elems[j]
			if lines[i].forwarded {
				node = forParam(node)
			}
			a, ok := parseNode(node)
			if !ok {
				return peer
			}
			if !t.trusted(a) {
				return a
			}
		}
	}
	return peer
}

// splitElements splits a header value at the commas outside quoted strings (RFC 7230 lists; in an
// X-Forwarded-For value there are none). Empty elements are dropped, as RFC 7230 7 asks.
func splitElements(v []byte) [][]byte {
	var out [][]byte
	start, quoted := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			if e := bytes.TrimSpace(v[start:i]); len(e) > 0 {
				out = append(out, e)
			}
			start = i + 1
		}
	}
	if e := bytes.TrimSpace(v[start:]); len(e) > 0 {
		out = append(out, e)
	}
	return out
}

// forParam returns the value of the for= parameter of a Forwarded element (unquoted), or nil when it
// has none or is malformed.
func forParam(elem []byte) []byte {
	var found []byte
	for _, pair := range splitPairs(elem) {
		name, value, ok := bytes.Cut(pair, []byte("="))
		if !ok {
			return nil
		}
		if !bytes.EqualFold(bytes.TrimSpace(name), []byte("for")) {
			continue
		}
		if found != nil {
			return nil // two for= in one element: which one would a proxy have meant?
		}
		v, ok := unquote(bytes.TrimSpace(value))
		if !ok {
			return nil
		}
		found = v
	}
	return found
}

// splitPairs splits an element at the semicolons outside quoted strings.
func splitPairs(elem []byte) [][]byte {
	var out [][]byte
	start, quoted := 0, false
	for i := 0; i < len(elem); i++ {
		switch c := elem[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == ';' && !quoted:
			out = append(out, elem[start:i])
			start = i + 1
		}
	}
	return append(out, elem[start:])
}

// unquote reads a token or an RFC 7230 quoted-string.
func unquote(v []byte) ([]byte, bool) {
	if len(v) == 0 {
		return nil, false
	}
	if v[0] != '"' {
		return v, !bytes.ContainsAny(v, "\" \t")
	}
	if len(v) < 2 || v[len(v)-1] != '"' {
		return nil, false
	}
	var out []byte
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		if c == '\\' {
			if i+1 >= len(v)-1 {
				return nil, false
			}
			i++
			c = v[i]
		} else if c == '"' {
			return nil, false
		}
		out = append(out, c)
	}
	return out, true
}

// parseNode reads a hop: an IP address, with or without a port (1.2.3.4:80, [2001:db8::1]:443, or RFC
// 7239's "[2001:db8::1]"); "unknown", obfuscated identifiers and anything else are not addresses. A zone
// is dropped: it names an interface of the proxy, not the client. A zone that could not be an interface
// name (a quote, a separator) makes the hop malformed: RFC 7239's grammar has no zones at all, and only
// a forged header writes one like that.
func parseNode(b []byte) (netip.Addr, bool) {
	s := string(b)
	if a, err := netip.ParseAddr(s); err == nil {
		return cleanAddr(a)
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return cleanAddr(ap.Addr())
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() {
			return cleanAddr(a)
		}
	}
	return netip.Addr{}, false
}

// cleanAddr drops an interface-name zone and unmaps an IPv4-mapped address.
func cleanAddr(a netip.Addr) (netip.Addr, bool) {
	for _, r := range a.Zone() {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return netip.Addr{}, false
		}
	}
	return a.WithZone("").Unmap(), true
}

func peerAddr(c *fiber.Ctx) netip.Addr {
	if tcp, ok := c.Context().RemoteAddr().(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(tcp.IP); ok {
			return a.Unmap()
		}
	}
	return netip.IPv4Unspecified()
}

// Key is the identity of a client for rate limits and throttles: its IPv4 address, or the /64
// prefix of an IPv6 address (one subscriber usually holds a whole /64, so counting single IPv6
// addresses would let one client spread its requests over 2^64 budgets).
func Key(ip netip.Addr) string {
	ip = ip.Unmap() // an IPv4 client seen through an IPv6 socket is still counted by its own address
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
