package delivery

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// hold is a worker's claim on the messages of one read (or one claim) that it has not finished yet.
// Their idle time in the pending list is what another replica takes as "abandoned", so it is renewed
// for all of them together before an attempt that does not start right after the last renewal.
type hold struct {
	ids     []string        // the messages read together, in order
	current int             // ids[current:] are not finished yet
	at      time.Time       // when they were read, claimed or last renewed (by the worker's clock)
	lost    map[string]bool // taken over by another replica (or acknowledged elsewhere): not to be sent
	failed  bool            // a renewal failed (the store is failing): the rest stay pending for retryDue
}

func newHold(msgs []redis.XMessage, now time.Time) *hold {
	h := &hold{at: now, lost: map[string]bool{}}
	for _, m := range msgs {
		h.ids = append(h.ids, m.ID)
	}
	return h
}
