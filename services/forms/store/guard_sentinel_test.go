package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/redisclient"
)

// go-redis knows a Sentinel-backed client's primary only as "FailoverClient"; the guard's fix must name
// the store the way the operator configured it (the master's name and the sentinels) and the node that
// is the primary now, which is the one to change.
func TestGuard_SentinelStore_FixNamesTheMasterItsSentinelsAndThePrimary(t *testing.T) {
	set := testredis.StartReplicated(t, 0, 1, 5*time.Second) // stock nodes: appendonly no
	cfg := config.Redis{Addrs: set.Addrs(), MasterName: testredis.MasterName}
	rdb, err := redisclient.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	st, err := New(rdb, Options{Redis: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Guard().Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	var u *Unmet
	if err := st.Guard().Allow(t.Context(), config.DurabilityProcess); !errors.As(err, &u) {
		t.Fatalf("Allow on a store with appendonly no: %v, want *Unmet", err)
	}
	fix := u.Error()
	for _, want := range []string{`Sentinel master "` + testredis.MasterName + `"`, set.Addrs()[0], set.Master().Addr(), "has appendonly no"} {
		if !strings.Contains(fix, want) {
			t.Errorf("fix %q does not name %q", fix, want)
		}
	}
	if strings.Contains(fix, "FailoverClient") {
		t.Errorf("fix %q names go-redis's internal type", fix)
	}
}
