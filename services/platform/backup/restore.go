package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
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
	// After runs once every key is written, before the restore counts as finished (the CLI signs every
	// account out there): when it fails, the restore may be run again like an interrupted one.
	After func(context.Context) error
}

// MarkerKey is written into the target before a restore writes its first key, holding the backup's
// checksum, and removed when it has finished: a restore interrupted halfway (a killed pod, a lost
// connection) can be run again, into the store it half filled, and ends where a whole one would (D91).
const MarkerKey = "fs:restore:in-progress"

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
	replace := o.Replace
	marker, err := rdb.Get(ctx, MarkerKey).Result()
	switch {
	case err == nil && marker != st.SHA256 && !o.Replace:
		return st, fmt.Errorf("%w: a restore of another backup (records' SHA-256 %s) was interrupted in it; restore that one again, replace what is there, or empty the store", ErrNotEmpty, idPrefix(marker))
	case err == nil && marker != st.SHA256: // replacing what another, interrupted restore wrote
		if err := rdb.Set(ctx, MarkerKey, st.SHA256, 0).Err(); err != nil {
			return st, fmt.Errorf("restore: writing %s: %w", MarkerKey, err)
		}
	case err == nil:
		// The same backup, interrupted: its keys are written again over what the first try wrote.
		replace = true
	case !errors.Is(err, redis.Nil):
		return st, fmt.Errorf("restore: reading %s: %w", MarkerKey, err)
	default:
		if !o.Replace {
			n, err := keysIn(ctx, rdb)
			if err != nil {
				return st, err
			}
			if n > 0 {
				return st, fmt.Errorf("%w: it holds %d key(s); restore into an empty store, or replace what is there", ErrNotEmpty, n)
			}
		}
		if err := roomFor(ctx, rdb, st.Bytes); err != nil {
			return st, err
		}
		if err := rdb.Set(ctx, MarkerKey, st.SHA256, 0).Err(); err != nil {
			return st, fmt.Errorf("restore: writing %s: %w", MarkerKey, err)
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
		err := restoreBatch(ctx, rdb, pending, replace, rd.header.RedisVersion)
		pending = pending[:0]
		return err
	}
	var read int64
	for {
		rec, ok, err := rd.next()
		if err != nil { // checked a moment ago: the file changed under us
			return st, err
		}
		if !ok {
			break
		}
		read++
		if rec.key == MarkerKey { // a backup of a store a restore was filling: not the data
			continue
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
	if err := flush(); err != nil {
		return st, err
	}
	// The second reading (an object read from the bucket again) must be the file that was checked;
	// when not, the marker stays and the restore is run again once the file holds still.
	if sum, err := rd.trailer(read); err != nil || sum != st.SHA256 {
		return st, fmt.Errorf("restore: the backup changed between its check and its writing: %w", errors.Join(err, ErrDamaged))
	}
	if o.After != nil {
		if err := o.After(ctx); err != nil {
			return st, err
		}
	}
	if err := rdb.Del(ctx, MarkerKey).Err(); err != nil {
		return st, fmt.Errorf("restore: every key is written, but %s could not be removed: %w", MarkerKey, err)
	}
	return st, nil
}

// ErrNoRoom is a restore refused because the target's maxmemory leaves too little room for the backup.
var ErrNoRoom = errors.New("the target store has too little memory for the backup")

// roomFor refuses a restore that cannot fit: the backup's keys and values (need, as DUMP serializes
// them, which is less than they take in memory) against maxmemory less used_memory, summed over the
// masters. A master without maxmemory has no such limit, and nothing is refused.
func roomFor(ctx context.Context, rdb redis.UniversalClient, need int64) error {
	var limit, used int64
	unlimited := false
	err := forEachMaster(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		info, err := node.Info(ctx, "memory").Result()
		if err != nil {
			return err
		}
		var max, now int64
		for _, line := range strings.Split(info, "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			switch k {
			case "maxmemory":
				max, _ = strconv.ParseInt(v, 10, 64)
			case "used_memory":
				now, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		if max == 0 {
			unlimited = true
		}
		limit += max
		used += now
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore: reading the target's memory: %w", err)
	}
	if unlimited || need <= limit-used {
		return nil
	}
	return fmt.Errorf("%w: the backup's keys and values take at least %s, the target has %s free (maxmemory %s, %s used); raise maxmemory or restore into a bigger store — nothing was written",
		ErrNoRoom, mib(need), mib(max(limit-used, 0)), mib(limit), mib(used))
}

// mib says a size in MiB, to a tenth.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

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
