package clientip

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/gofiber/fiber/v2"
)

func serveClientIP(t *testing.T, trusted []string) string {
	t.Helper()
	return serveWith(t, ParseProxies(trusted))
}

func serveWith(t *testing.T, trust *Proxies) string {
	t.Helper()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString(Addr(c, trust).String()) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	return "http://" + ln.Addr().String()
}

func clientIPFor(t *testing.T, url, xff string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestClientIP_UntrustedPeer_IgnoresXForwardedFor(t *testing.T) {
	url := serveClientIP(t, nil)
	if got := clientIPFor(t, url, "203.0.113.9"); got != "127.0.0.1" {
		t.Fatalf("got %s, want the peer", got)
	}
}

func TestClientIP_TrustedProxy_TakesRightMostUntrustedHop(t *testing.T) {
	url := serveClientIP(t, []string{"127.0.0.1", "10.0.0.0/8"})
	cases := map[string]string{
		"":                                 "127.0.0.1",   // no header: the proxy itself
		"203.0.113.9":                      "203.0.113.9", // one hop
		"198.51.100.1, 203.0.113.9":        "203.0.113.9", // the left entry is whatever the client wrote
		"203.0.113.9, 10.1.2.3":            "203.0.113.9", // an inner trusted proxy is skipped
		"203.0.113.9,10.1.2.3 , 127.0.0.1": "203.0.113.9",
		"10.1.2.3":                         "127.0.0.1", // only trusted hops: the peer
		"garbage, 203.0.113.9":             "203.0.113.9",
		"203.0.113.9, garbage":             "127.0.0.1", // a broken hop next to us: stop there
		"2001:db8::1":                      "2001:db8::1",
		"::ffff:203.0.113.9":               "203.0.113.9",
	}
	for xff, want := range cases {
		if got := clientIPFor(t, url, xff); got != want {
			t.Errorf("X-Forwarded-For %q: got %s, want %s", xff, got, want)
		}
	}
}

func TestClientKey_IPv4AsIsIPv6ByPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.9":                      "203.0.113.9",
		"::ffff:203.0.113.9":               "203.0.113.9",
		"2001:db8:1:2::1":                  "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:ffff:ffff:fffe": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":                  "2001:db8:1:3::/64",
		"::1":                              "::/64",
	} {
		if got := Key(netip.MustParseAddr(in)); got != want {
			t.Errorf("Key(%s) = %s, want %s", in, got, want)
		}
	}
}
