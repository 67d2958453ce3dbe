package testredis

import (
	"net"
	"strconv"
	"testing"
)

// Ports handed out lie below the ephemeral range (with their cluster bus port), and can be bound.
func TestFreePort_BelowTheEphemeralRangeAndBindable(t *testing.T) {
	low := ephemeralLow()
	if low-20000 < 1000 {
		t.Skipf("the ephemeral range starts at %d: no room below it, FreePort asks the kernel", low)
	}
	seen := map[int]bool{}
	for range 50 {
		p := FreePort(t)
		if p < 1024 || p+10000 >= low {
			t.Fatalf("port %d (bus %d) is not below the ephemeral range starting at %d", p, p+10000, low)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		l.Close()
	}
	if len(seen) < 40 {
		t.Fatalf("only %d different ports in 50 calls: parallel tests would collide", len(seen))
	}
}
