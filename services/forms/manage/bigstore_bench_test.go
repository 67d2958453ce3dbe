package manage_test

import (
	"bufio"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/forms/manage"
	"github.com/formsservice/formsservice/services/forms/store"
)

// TestBench_BigStore is `make bench`'s run on a big store (issue 36 item 5; docs/forms.md, "The
// submissions list on a big store"): a contact stream of FORMSSERVICE_BIGSTORE_SIZE messages (default
// 1,000,000) built through a pipeline in a real redis-server, then the submissions list's pages (time
// per page, p50/p99, and Redis's own time per page from INFO commandstats) and the export of everything
// and of a tenth to io.Discard (rows/s and the peak heap, which must not grow with the rows). It runs
// only with FORMSSERVICE_BIGSTORE=1, and stops by itself: a fixed number of pages and two exports.
func TestBench_BigStore(t *testing.T) {
	if os.Getenv("FORMSSERVICE_BIGSTORE") != "1" {
		t.Skip("set FORMSSERVICE_BIGSTORE=1 (make bench does)")
	}
	n := 1_000_000
	if v := os.Getenv("FORMSSERVICE_BIGSTORE_SIZE"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100_000 {
			t.Fatalf("FORMSSERVICE_BIGSTORE_SIZE=%q: a number of at least 100000", v)
		}
	}
	ctx := t.Context()
	rdb := testredis.Start(t, testredis.Options{Unix: true}).Client()
	t.Cleanup(func() { rdb.Close() })
	const dead = 1000 // a deployment whose alert on dead letters was left unanswered a while
	began := time.Now()
	buildContactStore(ctx, t, rdb, n, dead)
	t.Logf("store: %d contact messages (%d dead letters) built through a pipeline in %s; Redis used_memory %s",
		n, dead, time.Since(began).Round(time.Millisecond), info(ctx, t, rdb, "memory", "used_memory_human"))

	ops := manage.New(manage.Options{Redis: rdb})
	rnd := rand.New(rand.NewPCG(1, 2))
	entry := func(i int) string { return strconv.FormatInt(storeAt(i).UnixMilli(), 10) + "-0" }
	const samples = 200
	walk := ""
	for _, c := range []struct {
		name  string
		query func() manage.Query
	}{
		{"newest page (the console's poll)", func() manage.Query { return manage.Query{Limit: 50} }},
		{"walk from the newest (Next)", func() manage.Query { return manage.Query{Limit: 50, Before: walk} }},
		{"at a random cursor", func() manage.Query { return manage.Query{Limit: 50, Before: entry(rnd.IntN(n))} }},
		{"largest page (200)", func() manage.Query { return manage.Query{Limit: manage.MaxLimit, Before: entry(rnd.IntN(n))} }},
		{"time range (10 s at random)", func() manage.Query {
			at := rnd.IntN(n - 10_000)
			return manage.Query{Limit: 50, Since: storeAt(at), Until: storeAt(at + 10_000)}
		}},
		{"state=failed at random (scan budget)", func() manage.Query {
			return manage.Query{Limit: 50, State: manage.StateFailed, Before: entry(rnd.IntN(n))}
		}},
		{"text matching nothing at random (scan budget)", func() manage.Query {
			return manage.Query{Limit: 50, Text: "grace hopper", Before: entry(rnd.IntN(n))}
		}},
	} {
		times := make([]time.Duration, 0, samples)
		before, cpuBefore := redisUsec(ctx, t, rdb), cpuTime(t)
		for range samples {
			q := c.query()
			began := time.Now()
			page, err := ops.Submissions(ctx, manage.KindContact, q)
			times = append(times, time.Since(began))
			if err != nil {
				t.Fatal(err)
			}
			walk = page.Next
		}
		cpuMs := ms(cpuTime(t)-cpuBefore) / samples
		redisMs := float64(redisUsec(ctx, t, rdb)-before) / 1000 / samples
		slices.Sort(times)
		t.Logf("page %-46s %d pages: p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms; a page's CPU: %5.2f ms here, %5.2f ms in Redis",
			c.name, samples, ms(times[samples/2]), ms(times[samples*99/100]), ms(times[samples-1]), cpuMs, redisMs)
	}

	op := ops.As(manage.Actor{Name: "cli"})
	for _, format := range []string{store.FormatJSONL, store.FormatCSV} {
		for _, rows := range []int{n / 10, n} {
			q := manage.ExportQuery{Format: format, Since: storeAt(n - rows)}
			var got int
			var err error
			cpuBefore, redisBefore := cpuTime(t), redisCPU(ctx, t, rdb)
			peak, allocs, took := heapDuring(func() { got, err = op.Export(ctx, io.Discard, manage.KindContact, q) })
			if err != nil || got != rows {
				t.Fatalf("export %s of %d rows: %d, %v", format, rows, got, err)
			}
			cpu, redisCPU := cpuTime(t)-cpuBefore, redisCPU(ctx, t, rdb)-redisBefore
			t.Logf("export %-5s %8d rows in %7s: %8.0f rows/s (%6.0f rows per CPU second here, %7.0f in Redis), peak heap %5.1f MiB, %5.0f bytes allocated a row",
				format, rows, took.Round(time.Millisecond), float64(rows)/took.Seconds(), float64(rows)/cpu.Seconds(), float64(rows)/redisCPU.Seconds(),
				float64(peak)/(1<<20), float64(allocs)/float64(rows))
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// info is one field of a section of INFO.
func info(ctx context.Context, t *testing.T, rdb redis.UniversalClient, section, field string) string {
	t.Helper()
	s, err := rdb.Info(ctx, section).Result()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return v
		}
	}
	return "?"
}

// cpuTime is the CPU this process has used (user and system): on a machine shared with other work a
// page's time moves with that work's, its CPU much less.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is the CPU the redis-server has used (INFO cpu, user and system).
func redisCPU(ctx context.Context, t *testing.T, rdb redis.UniversalClient) time.Duration {
	t.Helper()
	var total float64
	for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(info(ctx, t, rdb, "cpu", f), 64)
		if err != nil {
			t.Fatalf("INFO cpu %s: %v", f, err)
		}
		total += v
	}
	return time.Duration(total * float64(time.Second))
}

// redisUsec is the time Redis has spent in commands, all of them (INFO commandstats), in µs.
func redisUsec(ctx context.Context, t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	s, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for line := range strings.SplitSeq(s, "\n") {
		_, rest, ok := strings.Cut(line, ",usec=")
		if !ok {
			continue
		}
		v, _, _ := strings.Cut(rest, ",")
		n, _ := strconv.ParseInt(v, 10, 64)
		total += n
	}
	return total
}

// heapDuring runs fn and returns the largest heap its run reached (live and not yet collected objects,
// sampled every millisecond; after a collection before it starts), the bytes it allocated and its time.
func heapDuring(fn func()) (peak, allocated uint64, took time.Duration) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	allocsBefore := sample[1].Value.Uint64()
	var top atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > top.Load() {
				top.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	began := time.Now()
	fn()
	took = time.Since(began)
	close(done)
	wg.Wait()
	metrics.Read(sample)
	return top.Load(), sample[1].Value.Uint64() - allocsBefore, took
}
