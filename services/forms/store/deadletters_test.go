package store

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestDeadLetterScript_SecondRunOfTheCall_DoesNothing(t *testing.T) {
	st, _ := testStore(t)
	ctx := t.Context()
	if err := EnsureDeliveryGroup(ctx, st.rdb); err != nil {
		t.Fatal(err)
	}
	addContact(t, st, "ada@example.com")
	msgs := st.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: DeliveryGroup, Consumer: "c1", Streams: []string{ContactStream, ">"}, Block: -1}).Val()
	id := msgs[0].Messages[0].ID
	keys := []string{ContactStream, DeadLetterStream, DeliveredKey(id)}
	for run := range 2 { // what a client retry after a lost answer does
		n, err := deadLetterScript.Run(ctx, st.rdb, keys, DeliveryGroup, "c1", id, "{}", "boom", "smtp", 3, id).Int()
		if err != nil || n != 1-run {
			t.Fatalf("run %d: %d, %v", run, n, err)
		}
	}
	if n := st.rdb.XLen(ctx, DeadLetterStream).Val(); n != 1 {
		t.Fatalf("%d dead letters, want 1", n)
	}
	// Another consumer's message is not this one's to give up.
	addContact(t, st, "ada@example.com")
	other := st.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: DeliveryGroup, Consumer: "c2", Streams: []string{ContactStream, ">"}, Block: -1}).Val()[0].Messages[0].ID
	if n, _ := deadLetterScript.Run(ctx, st.rdb, []string{ContactStream, DeadLetterStream, DeliveredKey(other)}, DeliveryGroup, "c1", other, "{}", "x", "smtp", 1, other).Int(); n != 0 {
		t.Fatal("a message held by another consumer was moved")
	}
}
