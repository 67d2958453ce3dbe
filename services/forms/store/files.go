package store

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/redis/go-redis/v9"
)

// FileErasures is the set of the object keys of files whose submissions were erased (Forget, retention)
// and whose objects are still to be deleted from the bucket. Erasure runs where the store is (the
// admin API, the CLI), which may hold no credentials for the bucket; the forms service, which does,
// deletes the objects and takes their keys out (D77). A key stays until its object is gone, so a bucket
// that is down delays the deletion, never loses it.
const FileErasures = "fs:files:erase"

// filesOf returns the object keys of the files a stored record names (none for a contact message).
func filesOf(raw string) []string {
	if !strings.Contains(raw, `"files":`) {
		return nil
	}
	var rec struct {
		Files []File `json:"files"`
	}
	if json.Unmarshal([]byte(raw), &rec) != nil {
		return nil
	}
	keys := make([]string, 0, len(rec.Files))
	for _, f := range rec.Files {
		keys = append(keys, f.Key)
	}
	return keys
}

// queueFileErasures adds keys to FileErasures.
func queueFileErasures(ctx context.Context, rdb redis.UniversalClient, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	members := make([]any, len(keys))
	for i, k := range keys {
		members[i] = k
	}
	return rdb.SAdd(ctx, FileErasures, members...).Err()
}

// queueFilesBefore queues the files of stream's entries before minID (which a trim is about to remove).
func queueFilesBefore(ctx context.Context, rdb redis.UniversalClient, stream, minID string) error {
	var keys []string
	for start := "-"; ; {
		page, err := rdb.XRangeN(ctx, stream, start, "("+minID, exportPage).Result()
		if err != nil {
			return err
		}
		for _, m := range page {
			raw, _ := m.Values[RecordField].(string)
			keys = append(keys, filesOf(raw)...)
		}
		if len(page) < exportPage {
			break
		}
		start = "(" + page[len(page)-1].ID
	}
	return queueFileErasures(ctx, rdb, keys)
}

// PendingFileErasures returns up to n keys of FileErasures.
func PendingFileErasures(ctx context.Context, rdb redis.UniversalClient, n int) ([]string, error) {
	return rdb.SRandMemberN(ctx, FileErasures, int64(n)).Result()
}

// FileErased takes keys out of FileErasures: their objects are gone.
func FileErased(ctx context.Context, rdb redis.UniversalClient, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	members := make([]any, len(keys))
	for i, k := range keys {
		members[i] = k
	}
	return rdb.SRem(ctx, FileErasures, members...).Err()
}
