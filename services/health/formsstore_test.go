package health

import (
	"testing"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The forms service's /readyz stays 200 while its store cannot keep forms.durability (D55); /health is
// where that shows: forms:readiness fails with the reason, and passes on a store that keeps it.
func TestHealth_FormsStoreCannotKeepTheDurability_FormsReadinessFailsWithTheReason(t *testing.T) {
	for _, c := range []struct {
		name   string
		redis  testredis.Options
		level  config.Durability
		output string // "" for pass
	}{
		{"stock store at process", testredis.Options{Unix: true}, config.DurabilityProcess, "the store cannot keep forms durability process: appendonly_off"},
		{"append-only store at process", testredis.Options{Unix: true, AppendFsync: "no"}, config.DurabilityProcess, ""},
		{"stock store alone at replicated", testredis.Options{Unix: true}, config.DurabilityReplicated, "the store cannot keep forms durability replicated: no_replica"},
		{"stock store at unchecked", testredis.Options{Unix: true}, config.DurabilityUnchecked, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := testredis.Start(t, c.redis)
			rdb := redisClient(t, rs.URL())
			forms := startReadyz(t) // the forms process: ready
			level := func() config.Durability { return c.level }
			g, err := store.NewGuard(rdb, store.Options{Level: level})
			if err != nil {
				t.Fatal(err)
			}
			srv := startHealth(t, &config.Config{Health: config.Health{FormsURL: forms.URL}},
				Options{Redis: rdb, FormsStore: FormsStore(g, level)})
			r := getHealth(t, srv.URL)
			if c.output == "" {
				if r.Code != 200 || r.status(t, "forms:readiness") != Pass {
					t.Fatalf("got %d %s, want 200 with forms:readiness pass", r.Code, r.Raw)
				}
				return
			}
			if r.Code != 503 || r.status(t, "forms:readiness") != Fail || r.check(t, "forms:readiness")["output"] != c.output {
				t.Fatalf("got %d %s, want 503 with forms:readiness failing %q", r.Code, r.Raw, c.output)
			}
			if r.status(t, "redis:responseTime") != Pass {
				t.Fatalf("redis:responseTime %s: the store answers", r.status(t, "redis:responseTime"))
			}
		})
	}
}
