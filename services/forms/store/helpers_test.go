package store

import (
	"net/netip"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/redisclient"
)

func testStore(t *testing.T) (*Store, *testredis.Server) {
	t.Helper()
	srv := testredis.Start(t, testredis.Options{AppendFsync: "no"}) // what the default level, process, needs
	rdb, err := redisclient.New(config.Redis{URL: srv.URL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	st, err := New(rdb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st, srv
}

// addContact stores a contact message from address as POST /contact does (its record, through the same
// script, at the default durability) and fails the test unless it was stored.
func addContact(t *testing.T, st *Store, address string) {
	t.Helper()
	rec := AppendContactRecord(nil, ContactRecord{Name: "Ada Lovelace", Email: address, Topic: "general",
		Message: "Hello there, a question about pricing.", ReceivedAt: time.Now().UTC(), Origin: "https://www.example.com"})
	r, err := st.AddContact(t.Context(), netip.MustParseAddr("127.0.0.1"), 0, Idempotency{}, rec, config.DurabilityProcess)
	if err != nil || r.Outcome != Stored {
		t.Fatalf("storing a contact message: %+v, %v", r, err)
	}
}
