// Package backup writes the whole store — the forms' submissions and outbox, auth's users, grants,
// sessions and audit trail — to one file, and restores it into another store: standalone, Sentinel or
// Cluster, of the same or a newer Redis (or Valkey) version.
//
// It is a logical backup: every key is read with DUMP (Redis's own serialization, with its checksum)
// and written back with RESTORE, so it needs no access to the server's disk and moves data between
// kinds of deployment (the managed Redis to your own and back, a single node to a Cluster). A key's
// expiry travels as an absolute time, so a restore does not extend what was about to end.
//
// The file is gzip over a header line, framed records and a trailer with the record count and a
// SHA-256 of the records: a restore reads the file through once to check it before it writes anything,
// so a truncated or altered backup is refused whole, never half restored (docs/operations.md).
//
// The keys are read with SCAN, which is not a point-in-time snapshot: a key that exists for the whole
// backup is in it (SCAN's guarantee), and a write made during it may or may not be. Every submission
// acknowledged before the backup started is therefore in it. SCAN's guarantee holds only on one server:
// a failover in the middle (Sentinel, the HA StatefulSet's Service) would continue the old cursor on
// another server's table and skip keys silently, so the backup checks the server it reads after every
// batch and fails (ErrFailover) rather than write a trailer over a partial walk (decision D91).
package backup

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"
	"time"

	"filippo.io/age"
	"github.com/redis/go-redis/v9"
)

// Format names the file format in its header; Version is this package's.
const (
	Format  = "formsservice-backup"
	Version = 1
)

// batch is how many keys one round trip dumps or restores.
const batch = 256

// maxKeyLen and maxPayloadLen bound what a frame may claim, so a damaged file cannot make a restore
// allocate without limit (Redis's own limit on a string is 512 MiB).
const (
	maxKeyLen     = 64 << 10
	maxPayloadLen = 512 << 20
)

// Header is the file's first line.
type Header struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	// Match are the key patterns the backup was limited to (["*"] for everything).
	Match []string `json:"match"`
	// RedisVersion is the source's redis_version (a restore needs the same RDB version or a newer one).
	RedisVersion string `json:"redisVersion,omitempty"`
}

// Trailer is the file's last part: what a reader checks before it trusts the records.
type Trailer struct {
	Keys   int64  `json:"keys"`
	SHA256 string `json:"sha256"`
}

// Stats says what a backup or a restore did.
type Stats struct {
	Header Header
	// Keys is how many keys were written (a backup) or found in the file (a restore).
	Keys int64
	// Restored is how many keys a restore wrote; Expired how many it skipped because their time had
	// passed since the backup; Foreign how many it skipped because they are not the product's
	// (RestoreOptions.AllKeys).
	Restored, Expired, Foreign int64
	// ByPrefix counts the keys by the part of their name before the first ':' ("forms", "auth", …).
	ByPrefix map[string]int64
	// Bytes is the size of the file's keys and values as DUMP serializes them (Check): less than they
	// take in a server's memory, never more than a little (DUMP compresses long strings), so a target
	// without this much room certainly cannot hold them.
	Bytes int64
	// SHA256 is the records' checksum as the trailer states it (Check): what names one backup.
	SHA256 string
}

func (s *Stats) count(key string) {
	if s.ByPrefix == nil {
		s.ByPrefix = map[string]int64{}
	}
	p, _, ok := strings.Cut(key, ":")
	if !ok {
		p = "(other)"
	}
	s.ByPrefix[p]++
}

// Options configure Write.
type Options struct {
	// Match limits the backup to keys matching any of these SCAN patterns; none is every key. The
	// patterns must not overlap (a key matching two would be written twice).
	Match []string
	// Recipients encrypt the file (age, encryption.go); none writes it in clear.
	Recipients []age.Recipient
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Write writes every key of rdb (every master's, on a Cluster) to w.
func Write(ctx context.Context, rdb redis.UniversalClient, w io.Writer, o Options) (Stats, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	match := o.Match
	if len(match) == 0 {
		match = []string{"*"}
	}
	st := Stats{Header: Header{Format: Format, Version: Version, CreatedAt: now().UTC().Truncate(time.Second), Match: match}}
	st.Header.RedisVersion = redisVersion(ctx, rdb)

	ew, err := encrypt(w, o.Recipients)
	if err != nil {
		return st, fmt.Errorf("backup: %w", err)
	}
	zw := gzip.NewWriter(ew)
	bw := bufio.NewWriterSize(zw, 64<<10)
	head, _ := json.Marshal(st.Header)
	if _, err := bw.Write(append(head, '\n')); err != nil {
		return st, err
	}
	sum := sha256.New()
	rec := &recordWriter{w: io.MultiWriter(bw, sum)}
	err = forEachMaster(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		first, err := serverOf(ctx, node)
		if err != nil {
			return err
		}
		for _, pattern := range match {
			var cursor uint64
			for {
				keys, next, err := node.Scan(ctx, cursor, pattern, batch).Result()
				if err != nil {
					return fmt.Errorf("backup: scanning the keys: %w", err)
				}
				if err := dumpBatch(ctx, node, keys, now, rec, &st); err != nil {
					return err
				}
				// After the batch's reads: a failover before or during them shows here.
				if err := first.same(ctx, node); err != nil {
					return err
				}
				if cursor = next; cursor == 0 {
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	// The end: an empty key, then the trailer as JSON.
	if err := rec.end(); err != nil {
		return st, err
	}
	tr, _ := json.Marshal(Trailer{Keys: st.Keys, SHA256: hex.EncodeToString(sum.Sum(nil))})
	if _, err := bw.Write(append(tr, '\n')); err != nil {
		return st, err
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	if err := zw.Close(); err != nil {
		return st, err
	}
	return st, ew.Close() // the last chunk, without which a reader calls the file cut short
}

// dumpBatch reads one SCAN batch's values and expiries in one round trip and frames them. A key gone
// since SCAN (ended or deleted) is left out.
func dumpBatch(ctx context.Context, node redis.UniversalClient, keys []string, now func() time.Time, rec *recordWriter, st *Stats) error {
	if len(keys) == 0 {
		return nil
	}
	dumps := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	_, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			dumps[i] = p.Dump(ctx, k)
			ttls[i] = p.PTTL(ctx, k)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("backup: reading the keys: %w", err)
	}
	at := now()
	for i, k := range keys {
		payload, err := dumps[i].Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return fmt.Errorf("backup: DUMP %q: %w", k, err)
		}
		var expireAt int64 // ms since the epoch; 0 is "never"
		switch ttl := ttls[i].Val(); {
		case ttl == -2*time.Nanosecond || ttl == -2*time.Millisecond: // gone between DUMP and PTTL
			continue
		case ttl > 0:
			expireAt = at.Add(ttl).UnixMilli()
		}
		if err := rec.write(k, expireAt, payload); err != nil {
			return err
		}
		st.Keys++
		st.count(k)
	}
	return nil
}

// forEachMaster runs fn on every master of a Cluster, one after another, or once on any other client.
func forEachMaster(ctx context.Context, rdb redis.UniversalClient, fn func(context.Context, redis.UniversalClient) error) error {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return fn(ctx, rdb)
	}
	// ForEachMaster calls its function on every master at once, from goroutines of its own: collect
	// them under a lock, then back them up one after another (one stream, one order).
	var mu sync.Mutex
	var masters []*redis.Client
	if err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		masters = append(masters, c)
		return nil
	}); err != nil {
		return fmt.Errorf("backup: listing the cluster's masters: %w", err)
	}
	for _, m := range masters {
		if err := fn(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// ErrFailover is a backup stopped because the server it read changed under it (a failover, a restart,
// a replica's full resync): SCAN's cursor is only valid on the server that gave it, so the walk may
// have skipped keys. Another try starts a new walk on the new primary.
var ErrFailover = errors.New("the Redis server changed during the backup (a failover or a restart); the backup is incomplete and was not kept — run it again")

// server is what identifies the server a SCAN walk reads: its process (run_id), its role, and its
// replication history (master_replid, which a promotion or a full resync changes).
type server struct {
	runID, role, replID string
}

// serverOf reads the identity of the server node talks to now.
func serverOf(ctx context.Context, node redis.UniversalClient) (server, error) {
	info, err := node.Info(ctx, "server", "replication").Result()
	if err != nil {
		return server{}, fmt.Errorf("backup: reading the server's INFO: %w", err)
	}
	var s server
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "run_id":
			s.runID = v
		case "role":
			s.role = v
		case "master_replid":
			s.replID = v
		}
	}
	if s.runID == "" || s.role == "" {
		return server{}, errors.New("backup: the server's INFO names no run_id or role; the backup cannot tell a failover from a whole walk")
	}
	return s, nil
}

// same checks that node still talks to the server the walk started on.
func (s server) same(ctx context.Context, node redis.UniversalClient) error {
	now, err := serverOf(ctx, node)
	if err != nil {
		return err
	}
	if now != s {
		return fmt.Errorf("%w (run_id %s → %s, role %s → %s, master_replid %s → %s)",
			ErrFailover, idPrefix(s.runID), idPrefix(now.runID), s.role, now.role, idPrefix(s.replID), idPrefix(now.replID))
	}
	return nil
}

// idPrefix is an id's first 8 characters, enough to tell two apart in a message.
func idPrefix(id string) string { return id[:min(len(id), 8)] }

// redisVersion is the server's redis_version ("" when INFO does not say).
func redisVersion(ctx context.Context, rdb redis.UniversalClient) string {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return ""
}

// recordWriter frames records: uvarint key length, key, varint expiry (ms since the epoch, 0 none),
// uvarint payload length, payload. An empty key ends the records.
type recordWriter struct {
	w   io.Writer
	buf [3 * binary.MaxVarintLen64]byte
}

func (r *recordWriter) write(key string, expireAt int64, payload string) error {
	n := binary.PutUvarint(r.buf[:], uint64(len(key)))
	if _, err := r.w.Write(r.buf[:n]); err != nil {
		return err
	}
	if _, err := io.WriteString(r.w, key); err != nil {
		return err
	}
	n = binary.PutVarint(r.buf[:], expireAt)
	n += binary.PutUvarint(r.buf[n:], uint64(len(payload)))
	if _, err := r.w.Write(r.buf[:n]); err != nil {
		return err
	}
	_, err := io.WriteString(r.w, payload)
	return err
}

func (r *recordWriter) end() error {
	_, err := r.w.Write([]byte{0})
	return err
}

// record is one key as the file holds it.
type record struct {
	key      string
	expireAt int64
	payload  string
}

// ErrDamaged is a file that is not a whole backup of this format: truncated, altered, or something else.
var ErrDamaged = errors.New("not a whole formsservice backup")

func damaged(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrDamaged, fmt.Sprintf(format, a...))
}

// reader reads a backup file: the header, then the records, then the trailer.
type reader struct {
	br     *bufio.Reader
	sum    hash.Hash
	header Header
}

// hashingReader feeds every byte read to the record checksum.
type hashingReader struct {
	r   *bufio.Reader
	sum hash.Hash
}

func (h hashingReader) ReadByte() (byte, error) {
	b, err := h.r.ReadByte()
	if err == nil {
		h.sum.Write([]byte{b})
	}
	return b, err
}

func (h hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.sum.Write(p[:n])
	return n, err
}

func newReader(r io.Reader, o ReadOptions) (*reader, error) {
	r, err := o.open(r)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, damaged("not gzip: %v", err)
	}
	br := bufio.NewReaderSize(zr, 64<<10)
	line, err := br.ReadSlice('\n')
	if err != nil {
		return nil, damaged("no header line: %v", err)
	}
	var h Header
	if err := json.Unmarshal(line, &h); err != nil || h.Format != Format {
		return nil, damaged("the first line is not a %s header", Format)
	}
	if h.Version != Version {
		return nil, fmt.Errorf("backup: the file is version %d of the format; this formsservice reads version %d", h.Version, Version)
	}
	return &reader{br: br, sum: sha256.New(), header: h}, nil
}

// next returns the next record, or ok false at the end of the records.
func (r *reader) next() (rec record, ok bool, err error) {
	hr := hashingReader{r: r.br, sum: r.sum}
	klen, err := binary.ReadUvarint(hr)
	if err != nil {
		return rec, false, damaged("cut short in a record: %v", err)
	}
	if klen == 0 {
		return rec, false, nil
	}
	if klen > maxKeyLen {
		return rec, false, damaged("a key of %d bytes", klen)
	}
	key := make([]byte, klen)
	if _, err := io.ReadFull(hr, key); err != nil {
		return rec, false, damaged("cut short in a key: %v", err)
	}
	if rec.expireAt, err = binary.ReadVarint(hr); err != nil {
		return rec, false, damaged("cut short in a record: %v", err)
	}
	plen, err := binary.ReadUvarint(hr)
	if err != nil {
		return rec, false, damaged("cut short in a record: %v", err)
	}
	if plen > maxPayloadLen {
		return rec, false, damaged("a value of %d bytes", plen)
	}
	payload := make([]byte, plen)
	if _, err := io.ReadFull(hr, payload); err != nil {
		return rec, false, damaged("cut short in a value: %v", err)
	}
	rec.key, rec.payload = string(key), string(payload)
	return rec, true, nil
}

// trailer reads the trailer after the last record and checks it against what was read; it returns
// the records' SHA-256.
func (r *reader) trailer(keys int64) (string, error) {
	line, err := r.br.ReadSlice('\n')
	if err != nil {
		return "", damaged("no trailer: %v", err)
	}
	var t Trailer
	if err := json.Unmarshal(line, &t); err != nil {
		return "", damaged("the trailer is not JSON")
	}
	if t.Keys != keys {
		return "", damaged("the trailer counts %d keys, the file holds %d", t.Keys, keys)
	}
	if got := hex.EncodeToString(r.sum.Sum(nil)); got != t.SHA256 {
		return "", damaged("the records' SHA-256 is %s, the trailer says %s", got, t.SHA256)
	}
	if _, err := r.br.ReadByte(); err != io.EOF {
		return "", damaged("data after the trailer")
	}
	return t.SHA256, nil
}

// Check reads a whole backup and checks its trailer, writing nothing: what a restore does first.
func Check(r io.Reader, o ReadOptions) (Stats, error) {
	rd, err := newReader(r, o)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Header: rd.header}
	for {
		rec, ok, err := rd.next()
		if err != nil {
			return st, err
		}
		if !ok {
			break
		}
		st.Keys++
		st.Bytes += int64(len(rec.key) + len(rec.payload))
		st.count(rec.key)
	}
	st.SHA256, err = rd.trailer(st.Keys)
	return st, err
}
