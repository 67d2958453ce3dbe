package platform

import (
	"bytes"
	"net"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// ProxyTrust says which peers' X-Forwarded-For is believed. Build it once per configuration (ParseProxyTrust)
// and call ClientIP per request.
type ProxyTrust struct {
	prefixes []netip.Prefix
}

// ParseProxyTrust reads addresses and CIDRs (the configuration's trustedProxies); entries that do not
// parse are skipped (the configuration validates them).
func ParseProxyTrust(list []string) *ProxyTrust {
	t := &ProxyTrust{}
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

func (t *ProxyTrust) trusted(a netip.Addr) bool {
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

// ClientIP is the address of the client that sent the request. When the peer is a trusted proxy, it is the
// right-most X-Forwarded-For entry that is not itself a trusted proxy: entries to the left of it were
// written by the client and can be forged (Fiber's own c.IP() returns the raw header in that case).
func ClientIP(c *fiber.Ctx, t *ProxyTrust) netip.Addr {
	peer := peerAddr(c)
	if !t.trusted(peer) {
		return peer
	}
	xff := c.Request().Header.Peek(fiber.HeaderXForwardedFor)
	for len(xff) > 0 {
		i := bytes.LastIndexByte(xff, ',')
		part := string(bytes.TrimSpace(xff[i+1:]))
		if i < 0 {
			xff = nil
		} else {
			xff = xff[:i]
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return peer // a garbled hop: the proxy we trust is the last thing we know
		}
		a = a.Unmap()
		if !t.trusted(a) {
			return a
		}
	}
	return peer
}

func peerAddr(c *fiber.Ctx) netip.Addr {
	if tcp, ok := c.Context().RemoteAddr().(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(tcp.IP); ok {
			return a.Unmap()
		}
	}
	return netip.IPv4Unspecified()
}

// ClientKey is the identity of a client for rate limits and throttles: its IPv4 address, or the /64
// prefix of an IPv6 address (one subscriber usually holds a whole /64, so counting single IPv6
// addresses would let one client spread its requests over 2^64 budgets).
func ClientKey(ip netip.Addr) string {
	ip = ip.Unmap() // an IPv4 client seen through an IPv6 socket is still counted by its own address
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
