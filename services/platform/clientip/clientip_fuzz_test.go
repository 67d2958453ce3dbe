package clientip

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// FuzzClientIP holds Addr to its promise for any X-Forwarded-For a client can send: behind a trusted
// proxy the answer is the peer or an address that stands in the header and is not itself trusted (a
// forged entry can only name an address, never make us believe a trusted one or skip the hops we trust);
// from an untrusted peer the header is ignored.
func FuzzClientIP(f *testing.F) {
	for _, seed := range []string{
		"", "203.0.113.9", "198.51.100.1, 203.0.113.9", "203.0.113.9, 10.1.2.3", "10.1.2.3",
		"garbage, 203.0.113.9", "203.0.113.9, garbage", "2001:db8::1", "::ffff:203.0.113.9",
		",,,", " , 203.0.113.9 ,", "203.0.113.9%eth0", "[2001:db8::1]:443", "1.2.3.4\x00", strings.Repeat("1.1.1.1,", 500),
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	app := fiber.New()
	trust := ParseProxies([]string{"127.0.0.1", "10.0.0.0/8", "2001:db8:ffff::/48"})
	f.Fuzz(func(t *testing.T, xff string, fromProxy bool) {
		peer := &net.TCPAddr{IP: net.ParseIP("198.51.100.77"), Port: 40000}
		if fromProxy {
			peer.IP = net.ParseIP("127.0.0.1")
		}
		var req fasthttp.Request
		req.Header.Set(fiber.HeaderXForwardedFor, xff)
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
			t.Fatalf("an untrusted peer's X-Forwarded-For %q was believed: %s", xff, got)
		}
		if trust.trusted(got) {
			t.Fatalf("answered a trusted proxy's address %s for X-Forwarded-For %q", got, xff)
		}
		for _, hop := range strings.Split(string(req.Header.Peek(fiber.HeaderXForwardedFor)), ",") {
			if a, err := netip.ParseAddr(strings.TrimSpace(hop)); err == nil && a.Unmap() == got {
				return
			}
		}
		t.Fatalf("answered %s, which is not in X-Forwarded-For %q", got, xff)
	})
}
