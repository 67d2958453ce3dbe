// Package clientip tells who sent a request: the client address behind trusted proxies, and the key
// that rate limits and throttles count it by.
package clientip

import (
	"bytes"
	"net"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Proxies says which peers' X-Forwarded-For is believed. Build it once per configuration (ParseProxies)
// and call Addr per request.
type Proxies struct {
	prefixes []netip.Prefix
}

// ParseProxies reads addresses and CIDRs (the configuration's trustedProxies); entries that do not
// parse are skipped (the configuration validates them).
func ParseProxies(list []string) *Proxies {
	t := &Proxies{}
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

// Addr is the address of the client that sent the request. When the peer is a trusted proxy, it is the
// right-most X-Forwarded-For entry that is not itself a trusted proxy: entries to the left of it were
// written by the client and can be forged (Fiber's own c.IP() returns the raw header in that case).
func Addr(c *fiber.Ctx, t *Proxies) netip.Addr {
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
