package clientip

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// FuzzClientIP holds Addr to its promise for any forwarding headers a client can send (two
// X-Forwarded-For lines and a Forwarded line, in any order): behind a trusted proxy the answer is the
// peer or an address that stands in the headers and is not itself trusted (a forged entry can only name
// an address, never make us believe a trusted one or skip the hops we trust); from an untrusted peer the
// headers are ignored. No input panics.
func FuzzClientIP(f *testing.F) {
	for _, seed := range []string{
		"", "203.0.113.9", "198.51.100.1, 203.0.113.9", "203.0.113.9, 10.1.2.3", "10.1.2.3",
		"garbage, 203.0.113.9", "203.0.113.9, garbage", "2001:db8::1", "::ffff:203.0.113.9",
		",,,", " , 203.0.113.9 ,", "203.0.113.9%eth0", "[2001:db8::1]:443", "1.2.3.4\x00", strings.Repeat("1.1.1.1,", 500),
	} {
		f.Add(seed, "", "", uint8(0), true)
		f.Add(seed, "", "", uint8(0), false)
	}
	for _, fwd := range []string{
		"for=203.0.113.9", `for="[2001:db8:cafe::17]:4711"`, "for=198.51.100.1, for=203.0.113.9;proto=https", "for=unknown",
		`for="203.0.113.9,10.0.0.1"`, `for="\"`, `for=203.0.113.9;for=10.0.0.1`, "proto=http;by=10.0.0.1", `for="[::1`, `;;,,for=`,
	} {
		f.Add("198.51.100.66", fwd, "203.0.113.9", uint8(1), true)
		f.Add("", fwd, "", uint8(2), true)
	}
	app := fiber.New()
	trust := ParseProxies([]string{"127.0.0.1", "10.0.0.0/8", "2001:db8:ffff::/48"})
	f.Fuzz(func(t *testing.T, xff1, fwd, xff2 string, order uint8, fromProxy bool) {
		peer := &net.TCPAddr{IP: net.ParseIP("198.51.100.77"), Port: 40000}
		if fromProxy {
			peer.IP = net.ParseIP("127.0.0.1")
		}
		lines := [][2]string{{HeaderXForwardedFor, xff1}, {HeaderForwarded, fwd}, {HeaderXForwardedFor, xff2}}
		switch order % 3 { // the Forwarded line first, in the middle or last
		case 0:
			lines[0], lines[1] = lines[1], lines[0]
		case 2:
			lines[1], lines[2] = lines[2], lines[1]
		}
		var req fasthttp.Request
		for _, l := range lines {
			if l[1] != "" {
				req.Header.Add(l[0], l[1])
			}
		}
		var fctx fasthttp.RequestCtx
		fctx.Init(&req, peer, nil)
		c := app.AcquireCtx(&fctx)
		defer app.ReleaseCtx(c)

		got := Addr(c, trust)
		peerAddr, _ := netip.AddrFromSlice(peer.IP)
		peerAddr = peerAddr.Unmap()
		if got == peerAddr {
			return
		}
		if !fromProxy {
			t.Fatalf("an untrusted peer's forwarding headers %q were believed: %s", lines, got)
		}
		if trust.trusted(got) {
			t.Fatalf("answered a trusted proxy's address %s for %q", got, lines)
		}
		// A Forwarded value may be a quoted-string whose quoted-pairs (\x) stand for x (RFC 7230 3.2.6).
		if !standsIn(got, xff1+" "+fwd+" "+xff2+" "+withoutQuotedPairs(fwd)) {
			t.Fatalf("answered %s, which is not in the headers %q", got, lines)
		}
	})
}

// standsIn reports whether an address is written in text: some run of address characters parses to it
// (an oracle apart from the parser under test).
func standsIn(a netip.Addr, text string) bool {
	tokens := strings.FieldsFunc(text, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == ':' || r == '.' || r == '[' || r == ']' || r == '%')
	})
	// A zone (fe80::1%eth0) holds only interface-name characters.
	tokens = append(tokens, strings.FieldsFunc(text, func(r rune) bool {
		return r == ' ' || r == '\t' || r == ',' || r == ';' || r == '=' || r == '"'
	})...)
	for _, tok := range tokens {
		for _, cand := range []string{tok, strings.Trim(tok, "[]")} {
			if b, err := netip.ParseAddr(cand); err == nil && b.WithZone("").Unmap() == a {
				return true
			}
			if ap, err := netip.ParseAddrPort(cand); err == nil && ap.Addr().WithZone("").Unmap() == a {
				return true
			}
			if i := strings.LastIndex(cand, "]:"); i > 0 {
				if b, err := netip.ParseAddr(strings.TrimPrefix(cand[:i], "[")); err == nil && b.WithZone("").Unmap() == a {
					return true
				}
			}
		}
	}
	return false
}

// withoutQuotedPairs writes each quoted-pair \x of a header value as the x it stands for.
func withoutQuotedPairs(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
