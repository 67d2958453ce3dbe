package reliability

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"github.com/formsservice/formsservice/internal/testredis"
)

// TestGracefulRollout_SIGTERMUnderLoad_NoRequestInFlightLost sends SIGTERM to `formsservice forms
// -drain-delay 1s` while 8 clients submit continuously and 6 slow requests are half-way through sending
// their bodies. During the delay /readyz answers 503 while requests are still served; then the listener
// closes, the slow requests send the rest of their bodies, and requests in flight finish. Every request either got its answer or was never processed: the
// stored entries are exactly the 201s, the slow requests all got 201, and the process exits 0.
func TestGracefulRollout_SIGTERMUnderLoad_NoRequestInFlightLost(t *testing.T) {
	const (
		workers = 8
		slow    = 6
	)
	rs := testredis.Start(t, testredis.Options{Unix: true, AppendFsync: "no"})
	cfg := formsConfig(redisURLSection(rs.URL()), "")
	forms := startProc(t, "forms", cfg, []string{"-drain-delay", "1s"})

	var (
		mu         sync.Mutex
		created    = map[string]bool{}
		errorsSeen = map[string]int{}
		unexpected []string
		stop       atomic.Bool
		wg         sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			fc := newFormsClient(forms.Base, 1)
			defer fc.close()
			for n := 0; !stop.Load(); n++ {
				addr := fmt.Sprintf("rollout-w%d-%d@example.com", w, n)
				a := fc.post("/waitlist", waitlistBody(addr))
				mu.Lock()
				switch {
				case a.err != nil:
					errorsSeen[errorKind(a.err)]++
				case a.status == 201:
					created[addr] = true
				default:
					unexpected = append(unexpected, fmt.Sprintf("%d %s", a.status, a.body))
				}
				mu.Unlock()
				if a.err != nil && errorKind(a.err) == "connection refused" {
					return // the listener is closed: a load balancer would have sent this elsewhere
				}
			}
		})
	}

	testwait.For(t, 30*time.Second, "50 submissions answered 201 before SIGTERM", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(created) >= 50
	})
	// Slow requests: headers and half the body now, the rest once the listener is closed.
	listenerClosed := make(chan struct{})
	slowDone := make(chan string, slow)
	var slowConns []net.Conn
	for i := range slow {
		body := waitlistJSON(fmt.Sprintf("rollout-slow-%d@example.com", i))
		req := post("/waitlist", body, goodOrigin, jsonCT)
		conn, err := net.Dial("tcp", forms.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		half := len(req) - len(body)/2
		if _, err := conn.Write(req[:half]); err != nil {
			t.Fatal(err)
		}
		slowConns = append(slowConns, conn)
		go func(rest []byte) {
			<-listenerClosed
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := conn.Write(rest); err != nil {
				slowDone <- "write: " + err.Error()
				return
			}
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				slowDone <- "read: " + err.Error()
				return
			}
			res.Body.Close()
			slowDone <- fmt.Sprint(res.StatusCode)
		}(req[half:])
	}

	termAt := time.Now()
	if err := forms.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// During the drain delay the process says it is going away, and still serves: /readyz turns 503
	// before the listener closes. Then a dial is refused, and the slow requests send the rest.
	readyz := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	saw503, lastReadyz := false, ""
	testwait.For(t, 15*time.Second, "the listener closed after SIGTERM", func() bool {
		res, err := readyz.Get(forms.Base + "/readyz")
		if err != nil {
			lastReadyz = err.Error()
			return errorKind(err) == "connection refused"
		}
		res.Body.Close()
		lastReadyz = res.Status
		saw503 = saw503 || res.StatusCode == 503
		return false
	})
	close(listenerClosed)
	if !saw503 {
		t.Errorf("/readyz never answered 503 during the drain delay (last: %s)", lastReadyz)
	}
	slowAnswers := map[string]int{}
	for range slow {
		slowAnswers[<-slowDone]++
	}
	select {
	case <-forms.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the process did not exit within 15 s of SIGTERM")
	}
	exitedAfter := time.Since(termAt)
	stop.Store(true)
	wg.Wait()

	if _, err := forms.Exited(); err != nil {
		t.Errorf("exit: %v (want status 0)\n%s", err, tail(forms.Output(), 2000))
	}
	if slowAnswers["201"] != slow {
		t.Errorf("requests in flight at SIGTERM: %v, want all %d answered 201", slowAnswers, slow)
	}
	for _, u := range unexpected {
		t.Errorf("unexpected answer: %s", u)
	}
	// Only what was answered 201 is stored, and all of it: no request was processed without its answer
	// reaching the client, and no acknowledged one is missing.
	stored := map[string]bool{}
	for _, r := range exported(t, "waitlist", cfg) {
		stored[strings.ToLower(fmt.Sprint(r["email"]))] = true
	}
	for addr := range created {
		if !stored[addr] {
			t.Errorf("%s was answered 201 but is not stored", addr)
		}
	}
	lostAnswers := 0
	for addr := range stored {
		if !created[addr] && !strings.HasPrefix(addr, "rollout-slow-") {
			lostAnswers++
			t.Errorf("%s is stored but its client got no answer (a request in flight lost its response)", addr)
		}
	}
	t.Logf("SIGTERM with 1 s drain delay under %d clients: exited after %s; %d answered 201 before and during the drain; "+
		"requests in flight (slow bodies): %v; client errors after the listener closed: %v; stored without an answer: %d",
		workers, exitedAfter.Round(time.Millisecond), len(created), slowAnswers, errorsSeen, lostAnswers)
	for _, c := range slowConns {
		c.Close()
	}
}

func errorKind(err error) string {
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		return "connection refused"
	case strings.Contains(err.Error(), "EOF"):
		return "EOF"
	case strings.Contains(err.Error(), "reset"):
		return "reset"
	}
	return err.Error()
}
