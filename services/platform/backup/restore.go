package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Source opens the backup file; a restore opens it twice (check, then restore), so a file on disk or
// a downloaded copy, never a stream read once.
type Source func() (io.ReadCloser, error)

// RestoreOptions configure Restore.
type RestoreOptions struct {
	// Replace overwrites keys that exist in the target. Without it a target that holds any key is
	// refused (ErrNotEmpty) before anything is written.
	Replace bool
	// Read says which files may be read: the identities of an encrypted one, or that a clear one may.
	Read ReadOptions
	// AllKeys restores every key of the file. Without it only the product's keys are written
	// (OurPrefixes), and the others are counted in Stats.Foreign: a backup of a Redis shared with other
	// programs restores only what is ours, and a file cannot write into another program's keys.
	AllKeys bool
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// OurPrefixes are the beginnings of every key the services write (the forms', the provider's).
var OurPrefixes = []string{"fs:", "forms:", "auth:"}

// ours reports whether a key is the product's.
func ours(key string) bool {
	for _, p := range OurPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// ErrNotEmpty is a restore refused because the target store holds keys already.
var ErrNotEmpty = errors.New("the target store is not empty")

// Restore checks the whole backup first (ErrDamaged: nothing written), then writes every key whose
// time has not passed, with its expiry, into rdb. A Cluster target is fine: each key goes to its slot.
func Restore(ctx context.Context, rdb redis.UniversalClient, open Source, o RestoreOptions) (Stats, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	st, err := check(open, o.Read)
	if err != nil {
		return st, err
	}
	if !o.Replace {
		n, err := keysIn(ctx, rdb)
		if err != nil {
			return st, err
		}
		if n > 0 {
			return st, fmt.Errorf("%w: it holds %d key(s); restore into an empty store, or replace what is there", ErrNotEmpty, n)
		}
	}
	f, err := open()
	if err != nil {
		return st, err
	}
	defer f.Close()
	rd, err := newReader(f, o.Read)
	if err != nil {
		return st, err
	}
	pending := make([]record, 0, batch)
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		err := restoreBatch(ctx, rdb, pending, o.Replace, rd.header.RedisVersion)
		pending = pending[:0]
		return err
	}
	for {
		rec, ok, err := rd.next()
		if err != nil { // checked a moment ago: the file changed under us
			return st, err
		}
		if !ok {
			break
		}
		if !o.AllKeys && !ours(rec.key) {
			st.Foreign++
			continue
		}
		if rec.expireAt != 0 && rec.expireAt <= now().UnixMilli() {
			st.Expired++
			continue
		}
		pending = append(pending, rec)
		st.Restored++
		if len(pending) == batch {
			if err := flush(); err != nil {
				return st, err
			}
		}
	}
	return st, flush()
}

// check reads the whole file once and checks its trailer.
func check(open Source, o ReadOptions) (Stats, error) {
	f, err := open()
	if err != nil {
		return Stats{}, err
	}
	defer f.Close()
	return Check(f, o)
}

// restoreBatch writes one batch in one round trip per node. RESTORE … ABSTTL keeps each key's end as
// it was; a key that exists is an error unless replace (BUSYKEY: someone wrote meanwhile).
func restoreBatch(ctx context.Context, rdb redis.UniversalClient, recs []record, replace bool, from string) error {
	cmds := make([]*redis.Cmd, len(recs))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range recs {
			args := []any{"RESTORE", r.key, r.expireAt, r.payload}
			if r.expireAt != 0 {
				args = append(args, "ABSTTL")
			}
			if replace {
				args = append(args, "REPLACE")
			}
			cmds[i] = p.Do(ctx, args...)
		}
		return nil
	})
	if err == nil {
		return nil
	}
	for i, c := range cmds {
		if c.Err() != nil {
			if strings.HasPrefix(c.Err().Error(), "BUSYKEY") {
				return fmt.Errorf("%w: %q was written during the restore", ErrNotEmpty, recs[i].key)
			}
			// "DUMP payload version or checksum are wrong": a target older than the source.
			return fmt.Errorf("restore: RESTORE %q: %w (the backup is from Redis %s; a target must be the same version or newer)", recs[i].key, c.Err(), from)
		}
	}
	return fmt.Errorf("restore: %w", err)
}

// keysIn counts the keys of every master.
func keysIn(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	var total int64
	err := forEachMaster(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		n, err := node.DBSize(ctx).Result()
		total += n
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("restore: counting the target's keys: %w", err)
	}
	return total, nil
}
