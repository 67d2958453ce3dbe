package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// TrimContactMessages erases contact messages stored before now−retention, and dead letters that died
// before then. When delivery is on it never erases a message still waiting for it: the cut stops at the
// oldest pending message and at the first message the delivery group has not read yet. A message whose
// delivery was given up is no longer pending (it moved to the dead letters), so it holds nothing back.
// It returns how many entries it erased.
func TrimContactMessages(ctx context.Context, rdb redis.UniversalClient, retention time.Duration, deliveryOn bool, now time.Time) (int64, error) {
	return ContactQueue.Trim(ctx, rdb, retention, deliveryOn, now)
}

// Trim erases the queue's entries stored before now−retention and its dead letters that died before
// then, as TrimContactMessages says. A declared form's unique values go with their entries. Its spam
// folder is trimmed by the same retention: spam waits for no delivery.
func (q Queue) Trim(ctx context.Context, rdb redis.UniversalClient, retention time.Duration, deliveryOn bool, now time.Time) (int64, error) {
	n, err := q.trimDelivered(ctx, rdb, retention, deliveryOn, now)
	if err != nil {
		return n, err
	}
	spam, err := q.trimSpam(ctx, rdb, now.Add(-retention))
	return n + spam, err
}

// trimDelivered is Trim without the spam folder.
func (q Queue) trimDelivered(ctx context.Context, rdb redis.UniversalClient, retention time.Duration, deliveryOn bool, now time.Time) (int64, error) {
	cutoff := now.Add(-retention).UnixMilli()
	minID := strconv.FormatInt(cutoff, 10) + "-0"
	if deliveryOn {
		groups, err := rdb.XInfoGroups(ctx, q.Stream).Result()
		if err != nil && !isNoSuchKey(err) {
			return 0, err
		}
		found := false
		for _, g := range groups {
			if g.Name != DeliveryGroup {
				continue
			}
			found = true
			// Everything after the last message the group read is unread, so undelivered.
			if firstUnread := nextID(g.LastDeliveredID); idLess(firstUnread, minID) {
				minID = firstUnread
			}
		}
		if !found {
			return 0, nil // the worker has not started reading: nothing is known to be delivered
		}
		sum, err := rdb.XPending(ctx, q.Stream, DeliveryGroup).Result()
		if err != nil {
			return 0, err
		}
		if sum.Count > 0 && idLess(sum.Lower, minID) {
			minID = sum.Lower
		}
	}
	if q.holdsFiles() { // the trimmed submissions' files go with them (files.go)
		if err := queueFilesBefore(ctx, rdb, q.Stream, minID); err != nil {
			return 0, err
		}
		if err := queueFilesBefore(ctx, rdb, q.DeadLetters, strconv.FormatInt(cutoff, 10)+"-0"); err != nil {
			return 0, err
		}
	}
	n, err := rdb.XTrimMinID(ctx, q.Stream, minID).Result()
	if err != nil {
		return n, err
	}
	if q.unique != "" {
		if err := dropUniqueBefore(ctx, rdb, q.unique, minID); err != nil {
			return n, err
		}
	}
	// Where trimmed messages had moved to: an entry below minID is trimmed, in the folder too (its cut
	// is the retention's, at or after minID).
	if err := dropUniqueBefore(ctx, rdb, q.Moved, minID); err != nil {
		return n, err
	}
	// Dead letters keep their own copy of the message; they go after retention too, counted from when
	// delivery was given up, so an operator has the whole retention period to look at them.
	dead, err := rdb.XTrimMinID(ctx, q.DeadLetters, strconv.FormatInt(cutoff, 10)+"-0").Result()
	return n + dead, err
}

// dropUniqueBefore removes the unique values whose entry (the hash's value) is older than minID, so that
// a trimmed submission's address neither stays stored nor keeps its owner from sending the form again;
// and of the moved index (Queue.Moved), the records of trimmed messages.
func dropUniqueBefore(ctx context.Context, rdb redis.UniversalClient, key, minID string) error {
	var cursor uint64
	for {
		kv, next, err := rdb.HScan(ctx, key, cursor, "*", 500).Result()
		if err != nil {
			return err
		}
		var old []string
		for i := 0; i+1 < len(kv); i += 2 {
			if idLess(kv[i+1], minID) {
				old = append(old, kv[i])
			}
		}
		if len(old) > 0 {
			if err := rdb.HDel(ctx, key, old...).Err(); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

func isNoSuchKey(err error) bool { return strings.Contains(err.Error(), "no such key") }

// idLess compares stream IDs "ms-seq".
func idLess(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am < bm || (am == bm && as < bs)
}

func splitID(id string) (uint64, uint64) {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	s, _ := strconv.ParseUint(seq, 10, 64)
	return m, s
}

func nextID(id string) string {
	m, s := splitID(id)
	return strconv.FormatUint(m, 10) + "-" + strconv.FormatUint(s+1, 10)
}
