package manage_test

import (
	"context"
	"io"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/forms/manage"
	"github.com/formsservice/formsservice/services/forms/store"
)

// A page of the submissions list costs the same on a big store as on a small one (docs/forms.md, "The
// submissions list on a big store"): the same Redis commands reading the same number of entries. Work
// is counted, not timed; the times are the benchmark's (TestBench_BigStore).

// bigStoreStart is the first entry's millisecond in the stores built here: entry i is at start+i ms.
var bigStoreStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// buildContactStore fills the contact stream with n messages, entry i at bigStoreStart+i ms, through a
// pipeline, as a store that has run a long time looks: the delivery group has read the oldest nine
// tenths, and the delivery of dead messages spread over the oldest quarter was given up (a dead letter
// each, dying in the same millisecond).
func buildContactStore(ctx context.Context, tb testing.TB, rdb redis.UniversalClient, n, dead int) {
	tb.Helper()
	const chunk = 5000
	rec := store.ContactRecord{Name: "Ada Lovelace", Email: "ada@example.com", Topic: "general", Origin: "https://www.example.com",
		Message: "Please call me back about the analytical engine; the numbers are ready."}
	var buf []byte
	for lo := 0; lo < n; lo += chunk {
		pipe := rdb.Pipeline()
		for i := lo; i < min(lo+chunk, n); i++ {
			at := bigStoreStart.Add(time.Duration(i) * time.Millisecond)
			rec.ReceivedAt = at
			buf = store.AppendContactRecord(buf[:0], rec)
			id := strconv.FormatInt(at.UnixMilli(), 10) + "-0"
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: store.ContactStream, ID: id, Values: []any{store.RecordField, string(buf)}})
			if dead > 0 && i < n/4 && i%max(1, n/4/dead) == 0 {
				pipe.XAdd(ctx, &redis.XAddArgs{Stream: store.DeadLetterStream, ID: strconv.FormatInt(at.UnixMilli(), 10) + "-1",
					Values: []any{"id", id, "entry", id, store.RecordField, string(buf), "reason", "webhook: 503", "channel", "webhook", "attempts", "8"}})
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			tb.Fatalf("building the store: %v", err)
		}
	}
	last := strconv.FormatInt(bigStoreStart.Add(time.Duration(n*9/10)*time.Millisecond).UnixMilli(), 10) + "-0"
	if err := rdb.XGroupCreate(ctx, store.ContactStream, store.DeliveryGroup, last).Err(); err != nil {
		tb.Fatal(err)
	}
}

// storeAt is the time of entry i of a built store.
func storeAt(i int) time.Time { return bigStoreStart.Add(time.Duration(i) * time.Millisecond) }

// workCounter counts, per command name, the commands a client sends and the entries their answers
// carry (stream entries, pending entries): what a page costs Redis.
type workCounter struct {
	mu      sync.Mutex
	on      bool
	cmds    map[string]int
	entries int
	largest int // the most entries one answer carried
}

func (w *workCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *workCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		w.count(cmd)
		return err
	}
}

func (w *workCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			w.count(c)
		}
		return err
	}
}

func (w *workCounter) count(cmd redis.Cmder) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.on {
		return
	}
	w.cmds[cmd.Name()]++
	n := 0
	switch c := cmd.(type) {
	case *redis.XMessageSliceCmd:
		n = len(c.Val())
	case *redis.XPendingExtCmd:
		n = len(c.Val())
	}
	w.entries += n
	w.largest = max(w.largest, n)
}

// measure counts what fn asks of Redis.
func (w *workCounter) measure(fn func()) (cmds map[string]int, entries, largest int) {
	w.mu.Lock()
	w.on, w.cmds, w.entries, w.largest = true, map[string]int{}, 0, 0
	w.mu.Unlock()
	fn()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = false
	return w.cmds, w.entries, w.largest
}

// bigStore is a built store of n messages with a client that counts its work.
type bigStore struct {
	ops  *manage.Ops
	work *workCounter
}

func newBigStore(t *testing.T, n int) bigStore {
	t.Helper()
	rdb := testredis.Start(t, testredis.Options{Unix: true}).Client()
	t.Cleanup(func() { rdb.Close() })
	buildContactStore(t.Context(), t, rdb, n, n/4) // the dead letters grow with the store too
	w := &workCounter{}
	rdb.AddHook(w)
	return bigStore{ops: manage.New(manage.Options{Redis: rdb}), work: w}
}

func TestSubmissions_PageCostsTheSameOnATenTimesBiggerStore(t *testing.T) {
	const small = 2000
	stores := map[int]bigStore{small: newBigStore(t, small), 10 * small: newBigStore(t, 10*small)}
	// Each query is asked of both stores at the same place from their newest end.
	queries := map[string]func(n int) manage.Query{
		"newest":    func(int) manage.Query { return manage.Query{Limit: 50} },
		"max limit": func(int) manage.Query { return manage.Query{Limit: manage.MaxLimit} },
		"cursor": func(n int) manage.Query {
			return manage.Query{Limit: 50, Before: strconv.FormatInt(storeAt(n-500).UnixMilli(), 10) + "-0"}
		},
		"time range": func(n int) manage.Query {
			return manage.Query{Limit: 50, Since: storeAt(n - 1000), Until: storeAt(n - 700)}
		},
		"since": func(n int) manage.Query { return manage.Query{Limit: 50, Since: storeAt(n / 2)} },
	}
	for name, query := range queries {
		t.Run(name, func(t *testing.T) {
			type cost struct {
				cmds             map[string]int
				entries, largest int
			}
			costs := map[int]cost{}
			for n, s := range stores {
				var page manage.Page
				var err error
				cmds, entries, largest := s.work.measure(func() { page, err = s.ops.Submissions(t.Context(), manage.KindContact, query(n)) })
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Submissions) != query(n).Limit || page.Next == "" {
					t.Fatalf("store of %d: %d submissions, next %q: want a full page and more", n, len(page.Submissions), page.Next)
				}
				costs[n] = cost{cmds, entries, largest}
			}
			a, b := costs[small], costs[10*small]
			if !maps.Equal(a.cmds, b.cmds) || a.entries != b.entries {
				t.Errorf("a page of a store of %d cost %v reading %d entries; of %d: %v reading %d", small, a.cmds, a.entries, 10*small, b.cmds, b.entries)
			}
			if limit := query(small).Limit; a.entries > 2*limit+2 {
				t.Errorf("a page of %d read %d entries (%v): more than the page's and their pending entries", limit, a.entries, a.cmds)
			}
		})
	}
}

func TestSubmissions_StatesOnABigStore_FailedWhereTheDeadLettersAre(t *testing.T) {
	const n = 2000
	s := newBigStore(t, n)
	for _, c := range []struct {
		name  string
		until int
		want  string
	}{
		{"oldest quarter: given up", n/4 - 1, manage.StateFailed},
		{"read by delivery: delivered", n / 2, manage.StateDelivered},
		{"not read yet: queued", n - 1, manage.StateQueued},
	} {
		t.Run(c.name, func(t *testing.T) {
			page, err := s.ops.Submissions(t.Context(), manage.KindContact, manage.Query{Limit: 20, Until: storeAt(c.until)})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Submissions) != 20 {
				t.Fatalf("%d submissions, want 20", len(page.Submissions))
			}
			for _, sub := range page.Submissions {
				if sub.State != c.want {
					t.Fatalf("submission %s: state %s, want %s", sub.ID, sub.State, c.want)
				}
			}
		})
	}
}

// An export reads the store a page at a time: its largest read is one page whatever the store's size
// (so what it holds does not grow with the rows; the benchmark measures the heap).
func TestExport_ReadsAPageAtATimeWhateverTheSize(t *testing.T) {
	const small = 2000
	for _, n := range []int{small, 10 * small} {
		s := newBigStore(t, n)
		var rows int
		var err error
		cmds, _, largest := s.work.measure(func() {
			rows, err = s.ops.As(cli).Export(t.Context(), io.Discard, manage.KindContact, manage.ExportQuery{Format: store.FormatJSONL})
		})
		if err != nil || rows != n {
			t.Fatalf("store of %d: exported %d rows, %v", n, rows, err)
		}
		if largest != 500 || cmds["xrange"] != n/500+1 {
			t.Errorf("store of %d: read %v, the largest answer %d entries: want pages of 500", n, cmds, largest)
		}
	}
}
