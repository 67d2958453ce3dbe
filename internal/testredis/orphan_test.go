package testredis

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"
)

// A test process that ends without its cleanups — a fuzz worker when fuzzing stops, a test killed by
// its timeout — takes its redis-servers with it: before, each fuzzed package left two running for good.
func TestServer_DiesWithTheProcessThatStartedIt(t *testing.T) {
	if os.Getenv("TESTREDIS_ORPHAN") == "1" {
		s := Start(t)
		fmt.Printf("pid %d\n", s.cmd.Process.Pid)
		os.Exit(0) // no Cleanup runs
	}
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServer_DiesWithTheProcessThatStartedIt$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TESTREDIS_ORPHAN=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the process that starts a server: %v\n%s", err, out)
	}
	var pid int
	if _, err := fmt.Sscanf(string(out), "pid %d", &pid); err != nil || pid <= 0 {
		t.Fatalf("no pid in %q: %v", out, err)
	}
	testwait.Until(t, 10*time.Second, "redis-server "+strconv.Itoa(pid)+" to end with the process that started it", func() error {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil // gone and reaped
		}
		// Ended but not reaped (its new parent may not reap) counts as ended: "pid (comm) Z ...".
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return nil
		}
		return fmt.Errorf("still running: %.60s", stat)
	})
}
