package testproc

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"
)

// WaitListeningSockets is for a program that binds port 0 and does not say which port it got (the
// operator's metrics server logs the address it was given, not the one it bound): it waits until the
// process has n listening TCP sockets, as the kernel lists them, and returns their addresses.
func (p *Process) WaitListeningSockets(t testing.TB, n int, within time.Duration) []string {
	t.Helper()
	var addrs []string
	testwait.Until(t, within, fmt.Sprintf("%s to listen on %d TCP sockets", filepath.Base(p.cmd.Path), n), func() error {
		if exited, err := p.Exited(); exited {
			t.Fatalf("the process exited: %v\n%s", err, tail(p.Output(), 4000))
		}
		var err error
		if addrs, err = listeningSockets(p.Pid()); err != nil {
			return err
		}
		if len(addrs) != n {
			return fmt.Errorf("listening on %v", addrs)
		}
		return nil
	})
	return addrs
}

// listeningSockets returns the addresses of the TCP sockets in LISTEN state that process pid holds:
// its descriptors name socket inodes, and /proc/<pid>/net/tcp{,6} gives each inode's local address.
func listeningSockets(pid int) ([]string, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
			fields := strings.Fields(sc.Text())
			const listen = "0A"
			if len(fields) < 10 || fields[3] != listen || !inodes[fields[9]] {
				continue
			}
			addr, err := parseProcAddr(fields[1])
			if err != nil {
				f.Close()
				return nil, err
			}
			addrs = append(addrs, addr.String())
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

// parseProcAddr reads /proc/net/tcp's "0100007F:1F90": the address as 32-bit words in host (little
// endian) order, then the port in hex.
func parseProcAddr(s string) (netip.AddrPort, error) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(hexIP)
	if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q in /proc/net/tcp", s)
	}
	for i := 0; i < len(raw); i += 4 { // each 32-bit word is little endian
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port in %q: %w", s, err)
	}
	ip, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
}
