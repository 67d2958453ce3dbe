package testredis

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A port that another process binds between FreePort and redis-server's own bind (here another test's
// redis-server, whose port is handed out first) makes redis-server exit with "Address already in use";
// Start reads that from the server's log and starts it on another port. A PING alone would have been
// answered by the other server.
func TestStart_PortTakenBeforeTheBind_RetriesOnAnotherPort(t *testing.T) {
	other := Start(t)
	takenPort := other.port
	calls := 0
	pickPort = func(tb testing.TB) int {
		calls++
		if calls == 1 {
			return takenPort
		}
		return FreePort(tb)
	}
	defer func() { pickPort = FreePort }()

	s := Start(t)
	if calls != 2 || s.port == takenPort {
		t.Fatalf("port %d after %d picks; want a second pick after %d was taken", s.port, calls, takenPort)
	}
	select {
	case <-s.Done():
		t.Fatal("the server's process has exited")
	default:
	}
	if err := s.Client().Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

// A Start that fails for good (here the retry bound: every pick taken) fails with the server's reason.
func TestStart_EveryPortTaken_FailsWithTheServersReason(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	pickPort = func(testing.TB) int { return taken.Addr().(*net.TCPAddr).Port }
	defer func() { pickPort = FreePort }()
	if msg := fatalOf(t, func(tb testing.TB) { Start(tb) }); !strings.Contains(msg, "Address already in use") {
		t.Fatalf("failure %q", msg)
	}
}

// A Unix-socket server has no TCP port; Addr and URL reach it, with go-redis and across a Restart.
func TestStart_Unix_NoTCPPortAndSurvivesRestart(t *testing.T) {
	s := Start(t, Options{Unix: true})
	if !strings.HasPrefix(s.Addr(), "/") || !strings.HasPrefix(s.URL(), "unix://") {
		t.Fatalf("Addr %q URL %q", s.Addr(), s.URL())
	}
	ctx := context.Background()
	info, err := s.Client().ConfigGet(ctx, "port").Result()
	if err != nil || info["port"] != "0" {
		t.Fatalf("port %v %v, want 0 (no TCP)", info, err)
	}
	s.Restart()
	opt, err := redis.ParseURL(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("after Restart, by URL: %v", err)
	}
}

// A start that fails for any other reason fails at once with redis-server's own words.
func TestStart_BadArgument_FailsWithTheServersReason(t *testing.T) {
	msg := fatalOf(t, func(tb testing.TB) { Start(tb, Options{Unix: true, Args: []string{"--no-such-option", "1"}}) })
	if !strings.Contains(msg, "no-such-option") || strings.Contains(msg, "attempt 2") {
		t.Fatalf("failure %q: want the server's reason after one attempt", msg)
	}
}

func TestStartSentinel_AnswersForItsMaster(t *testing.T) {
	master := Start(t)
	sn := StartSentinel(t, "mymaster", master)
	c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr()})
	defer c.Close()
	got, err := c.GetMasterAddrByName(context.Background(), "mymaster").Result()
	if err != nil || len(got) != 2 || got[1] != strconv.Itoa(master.port) {
		t.Fatalf("master by name: %v %v, want port %d", got, err, master.port)
	}
}

// A Sentinel restarted comes back monitoring its master (its ready line is its own, not a server's).
func TestStartSentinel_Restart(t *testing.T) {
	master := Start(t)
	sn := StartSentinel(t, "mymaster", master)
	sn.Restart()
	c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr()})
	defer c.Close()
	if _, err := c.GetMasterAddrByName(context.Background(), "mymaster").Result(); err != nil {
		t.Fatal(err)
	}
}

// A test whose name is too long for a socket path in its temporary directory still gets a socket.
func TestStart_Unix_LongTestName_ShortSocketPath(t *testing.T) {
	t.Run(strings.Repeat("a-long-subtest-name-", 6), func(t *testing.T) {
		s := Start(t, Options{Unix: true})
		if len(s.Addr()) > 100 {
			t.Fatalf("socket path of %d bytes: %s", len(s.Addr()), s.Addr())
		}
		if err := s.Client().Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	})
}
