package store

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestContactRetention_ErasesOldMessagesButNeverUndeliveredOnes(t *testing.T) {
	st, _ := testStore(t)
	for range 3 {
		addContact(t, st, "ada@example.com")
	}
	ids := func() []string {
		msgs, err := st.rdb.XRange(t.Context(), ContactStream, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.ID)
		}
		return out
	}
	all := ids()
	later := time.Now().Add(time.Hour) // every message is older than a 30-minute retention by then
	const retention = 30 * time.Minute

	// Nothing is older than the retention yet.
	if n, err := TrimContactMessages(t.Context(), st.rdb, retention, true, time.Now()); err != nil || n != 0 {
		t.Fatalf("erased %d (%v) of fresh messages", n, err)
	}
	// Delivery on, but the group has read nothing: everything is undelivered.
	if err := EnsureDeliveryGroup(t.Context(), st.rdb); err != nil {
		t.Fatal(err)
	}
	if n, _ := TrimContactMessages(t.Context(), st.rdb, retention, true, later); n != 0 {
		t.Fatalf("erased %d unread messages", n)
	}
	// The first is delivered (acknowledged), the second pending, the third unread.
	read, err := st.rdb.XReadGroup(t.Context(), &redis.XReadGroupArgs{Group: DeliveryGroup, Consumer: "w", Streams: []string{ContactStream, ">"}, Count: 2, Block: -1}).Result()
	if err != nil || len(read[0].Messages) != 2 {
		t.Fatal(err)
	}
	st.rdb.XAck(t.Context(), ContactStream, DeliveryGroup, all[0])
	if n, err := TrimContactMessages(t.Context(), st.rdb, retention, true, later); err != nil || n != 1 {
		t.Fatalf("erased %d (%v), want the delivered one", n, err)
	}
	if got := ids(); len(got) != 2 || got[0] != all[1] {
		t.Fatalf("left %v, want %v", got, all[1:])
	}
	// Without delivery, age alone decides.
	if n, _ := TrimContactMessages(t.Context(), st.rdb, retention, false, later); n != 2 {
		t.Fatalf("erased %d, want 2", n)
	}
}

func TestStreamIDs_Compare(t *testing.T) {
	cases := []struct {
		a, b string
		less bool
	}{{"1-0", "2-0", true}, {"2-0", "1-5", false}, {"10-0", "9-9", false}, {"5-1", "5-2", true}, {"5-2", "5-2", false}}
	for _, c := range cases {
		if idLess(c.a, c.b) != c.less {
			t.Errorf("idLess(%s, %s) != %v", c.a, c.b, c.less)
		}
	}
	if nextID("17-4") != "17-5" {
		t.Error("nextID")
	}
}
