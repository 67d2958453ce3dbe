package manage_test

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/forms/manage"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The operations run on real redis-server processes, and the listings also on the dev server's
// embedded store (miniredis), which `make run` serves the admin API from.

// fixture is a store with the operations on it and the changes they recorded.
type fixture struct {
	t   *testing.T
	rdb redis.UniversalClient
	st  *store.Store
	ops *manage.Ops

	mu     sync.Mutex
	events []event
}

type event struct {
	by manage.Actor
	manage.Change
}

func newFixture(t *testing.T, embedded bool) *fixture {
	t.Helper()
	var rdb redis.UniversalClient
	if embedded {
		m := miniredis.RunT(t)
		rdb = redis.NewClient(&redis.Options{Addr: m.Addr()})
	} else {
		rdb = testredis.Start(t).Client()
	}
	t.Cleanup(func() { rdb.Close() })
	st, err := store.New(rdb, store.Options{Off: true})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, rdb: rdb, st: st}
	f.ops = manage.New(manage.Options{Redis: rdb, Audit: func(_ context.Context, by manage.Actor, c manage.Change) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.events = append(f.events, event{by, c})
	}})
	return f
}

// both runs a test on redis-server and on miniredis.
func both(t *testing.T, test func(t *testing.T, f *fixture)) {
	for _, embedded := range []bool{false, true} {
		name := "redis-server"
		if embedded {
			name = "miniredis"
		}
		t.Run(name, func(t *testing.T) { test(t, newFixture(t, embedded)) })
	}
}

var (
	client = netip.MustParseAddr("192.0.2.1")
	cli    = manage.Actor{Name: "cli", Detail: map[string]string{"osUser": "ops"}}
	spam   = store.Verdict{Spam: true, Score: 6, Reasons: []string{"links", "phrases"}}
)

// newest is the message ID of q's newest entry in stream.
func (f *fixture) newest(stream string) string {
	f.t.Helper()
	msgs, err := f.rdb.XRevRangeN(f.t.Context(), stream, "+", "-", 1).Result()
	if err != nil || len(msgs) != 1 {
		f.t.Fatalf("newest of %s: %v %v", stream, msgs, err)
	}
	return store.MessageID(msgs[0])
}

// contact stores a contact message (spam with verdict v) and returns its ID.
func (f *fixture) contact(name, address, message string, v store.Verdict) string {
	f.t.Helper()
	rec := store.AppendContactRecord(nil, store.ContactRecord{Name: name, Email: address, Topic: "general", Message: message,
		ReceivedAt: time.Now().UTC(), Origin: "https://www.example.com"})
	r, err := f.st.AddContactJudged(f.t.Context(), client, 0, store.Idempotency{}, rec, v, config.DurabilityProcess)
	if err != nil || r.Outcome != store.Stored {
		f.t.Fatalf("contact: %+v %v", r, err)
	}
	if v.Spam {
		return f.newest(store.ContactSpam)
	}
	return f.newest(store.ContactStream)
}

// submit stores a submission of declared form form (its unique field email) and returns its ID.
func (f *fixture) submit(form, address, company string, v store.Verdict) string {
	f.t.Helper()
	rec, err := store.AppendFormRecord(nil, store.FormRecord{Form: form, ReceivedAt: time.Now().UTC(), Origin: "https://www.example.com",
		Fields: store.Values{{Name: "email", Value: address}, {Name: "company", Value: company}, {Name: "topics", Value: []string{"api", "billing"}}}})
	if err != nil {
		f.t.Fatal(err)
	}
	unique := store.UniqueValue(config.FieldEmail, address)
	r, err := f.st.AddSubmission(f.t.Context(), store.Submission{Form: form, Client: client, Record: rec, Unique: unique, Verdict: v},
		config.DurabilityProcess)
	if err != nil || r.Outcome != store.Stored {
		f.t.Fatalf("submit %s: %+v %v", form, r, err)
	}
	q := store.FormQueue(form)
	if v.Spam {
		return f.newest(q.Spam)
	}
	return f.newest(q.Stream)
}

// publish publishes a catalogue declaring demo (and the forms named).
func (f *fixture) publish(ids ...string) {
	f.t.Helper()
	var declared []config.DeclaredForm
	for _, id := range ids {
		declared = append(declared, config.DeclaredForm{ID: id, Title: "Form " + id, Unique: "email",
			Notify: &config.FormNotify{MailTo: []string{"team@example.com"}}, Fields: []config.FormField{
				{Name: "email", Type: config.FieldEmail, Required: true}, {Name: "company", Label: "Company", Type: config.FieldText},
				{Name: "topics", Type: config.FieldManyOf, Choices: []string{"api", "billing"}}}})
	}
	if err := store.PublishCatalog(f.t.Context(), f.rdb, declared, time.Now()); err != nil {
		f.t.Fatal(err)
	}
}

// read takes n new entries of q for delivery (they are then pending: delivering).
func (f *fixture) read(q store.Queue, n int64) []redis.XMessage {
	f.t.Helper()
	if err := q.EnsureGroup(f.t.Context(), f.rdb); err != nil {
		f.t.Fatal(err)
	}
	res, err := f.rdb.XReadGroup(f.t.Context(), &redis.XReadGroupArgs{Group: store.DeliveryGroup, Consumer: "worker",
		Streams: []string{q.Stream, ">"}, Count: n}).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return res[0].Messages
}

// page lists every page of form's submissions that q selects, and the IDs in order.
func (f *fixture) pages(form string, q manage.Query) (ids []string, pages int) {
	f.t.Helper()
	for {
		p, err := f.ops.Submissions(f.t.Context(), form, q)
		if err != nil {
			f.t.Fatalf("submissions %s %+v: %v", form, q, err)
		}
		pages++
		for _, s := range p.Submissions {
			ids = append(ids, s.ID)
		}
		if p.Next == "" || pages > 1000 {
			return ids, pages
		}
		q.Before = p.Next
	}
}

func (f *fixture) kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		out = append(out, e.Kind+" "+e.Detail["form"]+" "+e.Detail["id"])
	}
	return out
}

func reversed(ids []string) []string {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }
