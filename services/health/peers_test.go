package health

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/server"
)

// peer is an in-process service as the dev server hands it to health (d.Peers).
type peer struct {
	name  string
	ready func(ctx context.Context) error
}

func (p peer) Name() string                    { return p.name }
func (p peer) Routes() []server.Route          { return nil }
func (p peer) Ready(ctx context.Context) error { return p.ready(ctx) }

// The dev server checks whatever services it runs through their Ready method, each under its name.
func TestHealth_DevPeers_CheckedInProcessByName(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Unix: true})
	ok := func(context.Context) error { return nil }
	broken := func(context.Context) error { return errors.New("dial tcp 10.0.0.1:6379: secret internals") }
	srv := startHealth(t, &config.Config{Health: config.Health{FormsURL: "http://127.0.0.1:1"}},
		Options{Redis: redisClient(t, rs.URL()), Peers: []server.Service{peer{"forms", ok}, peer{"auth", broken}, peer{"extra", ok}}})
	r := getHealth(t, srv.URL)
	if r.Code != 503 || len(r.checkMap) != 4 {
		t.Fatalf("got %d %s, want 503 with redis, forms, auth and extra", r.Code, r.Raw)
	}
	if r.status(t, "forms:readiness") != Pass || r.status(t, "extra:readiness") != Pass {
		t.Errorf("ready peers: %s", r.Raw)
	}
	if c := r.check(t, "auth:readiness"); c["status"] != "fail" || c["output"] != "not ready" {
		t.Errorf("broken peer: %v", c)
	}
	if strings.Contains(r.Raw, "secret") || strings.Contains(r.Raw, "10.0.0.1") {
		t.Errorf("a peer's error text reached the body: %s", r.Raw)
	}
}

// A Ready method that ignores its context cannot hold /health; while it is still stuck the check is not
// started again, so stuck goroutines do not pile up.
func TestHealth_PeerIgnoringItsContext_BoundedAndNotRestarted(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	calls := make(chan struct{}, 10)
	stuck := func(context.Context) error { calls <- struct{}{}; <-release; return nil }
	srv := startHealth(t, &config.Config{Health: config.Health{Timeout: ms(300 * time.Millisecond), WarnAfter: ms(100 * time.Millisecond)}},
		Options{Peers: []server.Service{peer{"forms", stuck}}})

	r := getHealth(t, srv.URL)
	if r.Code != 503 || r.check(t, "forms:readiness")["output"] != "no answer within 300ms" || r.Took > 300*time.Millisecond+loadSlack {
		t.Fatalf("got %d %s after %s", r.Code, r.Raw, r.Took)
	}
	r = srv.fresh(t)
	if r.check(t, "forms:readiness")["output"] != "no answer: the previous check has not returned yet" {
		t.Fatalf("second round: %s", r.Raw)
	}
	if n := len(calls); n != 1 {
		t.Fatalf("Ready was called %d times while the first call was stuck, want 1", n)
	}
}

func TestHealth_PeerThatPanics_FailsTheCheckNotTheProcess(t *testing.T) {
	boom := func(context.Context) error { panic("boom") }
	srv := startHealth(t, &config.Config{}, Options{Peers: []server.Service{peer{"auth", boom}}})
	r := getHealth(t, srv.URL)
	if r.Code != 503 || r.check(t, "auth:readiness")["output"] != "check failed" {
		t.Fatalf("got %d %s", r.Code, r.Raw)
	}
}
