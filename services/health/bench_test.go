package health

import (
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

// BenchmarkHealth_Round is one uncached round of checks: a PING to a real redis-server and two /readyz
// over loopback HTTP, run concurrently.
func BenchmarkHealth_Round(b *testing.B) {
	rs := testredis.Start(b)
	forms, auth := startReadyz(b), startReadyz(b)
	// Generous thresholds: this measures the cost of a round, and a scheduling hiccup on a busy machine
	// must not turn into a failed benchmark.
	cfg := &config.Config{Health: config.Health{FormsURL: forms.URL, AuthURL: auth.URL,
		WarnAfter: ms(5 * time.Second), Timeout: ms(10 * time.Second)}}
	cfg.ApplyDefaults()
	svc, err := New(Options{Config: config.Static{C: cfg}, Redis: redisClient(b, rs.URL()), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if snap := svc.round(cfg.Health); snap.status != Pass {
			b.Fatalf("round: %s", snap.body)
		}
	}
}

// BenchmarkE2E_HealthScrapeStorm hammers GET /health of a real `formsservice health` process (real
// redis-server, real forms and auth processes) from 32 concurrent clients on loopback, and reports the
// latency percentiles and how many PINGs the store saw per 1000 requests (the cache and singleflight
// keep it near 1000 × round time / cacheFor, not one per request).
func BenchmarkE2E_HealthScrapeStorm(b *testing.B) {
	pu := startPlatform(b, map[string]any{"cacheFor": "2s", "warnAfter": "5s", "timeout": "10s"})
	url := pu.health.URL + "/health"
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}}
	if r := getHealth(b, pu.health.URL); r.Code != 200 {
		b.Fatalf("not healthy: %s", r.Raw)
	}
	before := pingCalls(b, pu.redis)
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	// This counts the forms and auth processes' PINGs too: their /readyz runs once per round.
	pings := pingCalls(b, pu.redis) - before
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
	b.ReportMetric(ms64(lat[len(lat)*50/100]), "p50-ms")
	b.ReportMetric(ms64(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(float64(pings)*1000/float64(len(lat)), "redis-PINGs/1k-req")
}

func ms64(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

var quiet = slog.New(slog.DiscardHandler)
