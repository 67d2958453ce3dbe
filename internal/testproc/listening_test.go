package testproc

import (
	"net"
	"os"
	"slices"
	"testing"
)

func TestListeningSockets_FindsThisProcessListenersOnly(t *testing.T) {
	l4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l4.Close()
	l6, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer l6.Close()
	conn, err := net.Dial("tcp", l4.Addr().String()) // an established socket is not a listener
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	got, err := listeningSockets(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{l4.Addr().String(), l6.Addr().String()} {
		if !slices.Contains(got, want) {
			t.Errorf("listening sockets %v lack %s", got, want)
		}
	}
	if slices.Contains(got, conn.LocalAddr().String()) {
		t.Errorf("listening sockets %v include the connection's own end %s", got, conn.LocalAddr())
	}
}

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000000000000000000001000000:0050": "[::1]:80",
		"0000000000000000FFFF00000100007F:01BB": "127.0.0.1:443", // a v4-mapped v6 listener
	} {
		got, err := parseProcAddr(in)
		if err != nil || got.String() != want {
			t.Errorf("parseProcAddr(%q) = %v %v, want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "zz00007F:1F90", "0100007F:zz", "01007F:0050"} {
		if _, err := parseProcAddr(bad); err == nil {
			t.Errorf("parseProcAddr(%q) accepted", bad)
		}
	}
}
