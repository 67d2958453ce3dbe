package auditsink

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
)

// A trail's delivery state is one hash beside its stream, in the stream's Redis Cluster slot (the hash
// tag is the stream's key, so that each script below touches one slot):
//
//	owner, until   the lease: the worker that delivers this trail, and until when (ms, its clock)
//	cursor, count  the last entry delivered (or counted lost), and how many entries the stream had
//	               received up to it: XINFO's entries-added then tells how many were trimmed unsent
//	batchEnd       the last entry of the batch in flight, so that a retry, by this worker or the one
//	               that takes over, sends the same batch under the same webhook-id
//	failures, retryAt  the backoff, shared by every replica
type trail struct {
	name   string // in the payload and the webhook-id: "security" or "attempts"
	stream string
	state  string
}

var trails = []trail{
	{name: "security", stream: audit.StreamKey, state: "auth:audit:sink{" + audit.StreamKey + "}"},
	{name: "attempts", stream: audit.AttemptsKey, state: "auth:audit:attempts:sink{" + audit.AttemptsKey + "}"},
}

// idLess compares stream IDs in Lua (ms and seq fit a double exactly).
const idLess = `
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function idLess(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as < bs)
end
`

// claimScript takes or renews the lease and returns the batch to send: the one in flight, else up to
// ARGV[4] entries after the cursor. Entries trimmed before they were sent are counted (lost) and
// skipped. KEYS: stream, state. ARGV: worker, now (ms), lease (ms), batch size.
// Reply: {status, batchEnd, lost, lag, cursor, entries}; status busy (another worker holds the lease),
// wait (backing off until batchEnd, in ms), idle or batch.
var claimScript = redis.NewScript(idLess + `
local st = redis.call('HMGET', KEYS[2], 'owner', 'until', 'retryAt', 'cursor', 'count', 'batchEnd')
local now = tonumber(ARGV[2])
if st[1] and st[1] ~= ARGV[1] and tonumber(st[2]) > now then return {'busy', '', 0, 0, '', {}} end
local retryAt = tonumber(st[3] or '0')
if retryAt > now then return {'wait', tostring(retryAt), 0, 0, '', {}} end
redis.call('HSET', KEYS[2], 'owner', ARGV[1], 'until', now + tonumber(ARGV[3]))
if redis.call('EXISTS', KEYS[1]) == 0 then return {'idle', '', 0, 0, st[4] or '', {}} end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local n, added, first = 0, 0, nil
for i = 1, #info, 2 do
  if info[i] == 'length' then n = info[i + 1]
  elseif info[i] == 'entries-added' then added = info[i + 1]
  elseif info[i] == 'first-entry' and type(info[i + 1]) == 'table' then first = info[i + 1][1] end
end
local cursor, count = st[4], tonumber(st[5] or '0')
if not cursor then
  -- A new sink starts with the whole stream; what was trimmed before it existed is not its loss.
  cursor, count = '0-0', added - n
  redis.call('HSET', KEYS[2], 'cursor', cursor, 'count', count)
end
local lost = 0
if n == 0 or idLess(cursor, first) then
  -- Everything up to the first entry kept has been received and is gone: what of it the count does
  -- not cover was never sent.
  lost = math.max(added - n - count, 0)
  if lost > 0 then
    count = added - n
    redis.call('HSET', KEYS[2], 'count', count)
  end
end
local batchEnd, entries = st[6] or '', {}
if batchEnd ~= '' then
  entries = redis.call('XRANGE', KEYS[1], '(' .. cursor, batchEnd)
  if #entries == 0 then -- the batch in flight was trimmed whole (and counted above)
    cursor, batchEnd = batchEnd, ''
    redis.call('HSET', KEYS[2], 'cursor', cursor, 'batchEnd', '')
  end
end
if batchEnd == '' and n > 0 then
  entries = redis.call('XRANGE', KEYS[1], '(' .. cursor, '+', 'COUNT', tonumber(ARGV[4]))
  if #entries > 0 then
    batchEnd = entries[#entries][1]
    redis.call('HSET', KEYS[2], 'batchEnd', batchEnd)
  end
end
local status = 'batch'
if #entries == 0 then status = 'idle' end
return {status, batchEnd, lost, added - count, cursor, entries}
`)

// ackScript moves the cursor past a delivered batch, if this worker still holds the lease and the
// cursor is where its claim left it. KEYS: state. ARGV: worker, cursor, batch end, entries, now, lease.
var ackScript = redis.NewScript(`
local st = redis.call('HMGET', KEYS[1], 'owner', 'cursor', 'count')
if st[1] ~= ARGV[1] or st[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'cursor', ARGV[3], 'count', tonumber(st[3]) + tonumber(ARGV[4]), 'batchEnd', '',
  'failures', 0, 'retryAt', 0, 'until', tonumber(ARGV[5]) + tonumber(ARGV[6]))
return 1
`)

// failScript backs off after a failed call: the next attempt, by any worker, waits min * 2^(failures-1),
// at most max; this worker keeps the lease meanwhile. KEYS: state. ARGV: worker, cursor, now, min,
// max, lease (ms). Reply: the wait in ms, or -1 when the lease was lost.
var failScript = redis.NewScript(`
local st = redis.call('HMGET', KEYS[1], 'owner', 'cursor')
if st[1] ~= ARGV[1] or st[2] ~= ARGV[2] then return -1 end
local f = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local wait = math.min(tonumber(ARGV[4]) * 2 ^ math.min(f - 1, 40), tonumber(ARGV[5]))
local now = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'retryAt', now + wait, 'until', now + wait + tonumber(ARGV[6]))
return wait
`)

// releaseScript gives the lease up (a worker that stops), so that another replica takes over at once.
var releaseScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then redis.call('HSET', KEYS[1], 'until', 0) end
return 0
`)

// claim is the reply of claimScript.
type claim struct {
	status   string
	batchEnd string
	lost     int64
	lag      int64
	cursor   string
	entries  []redis.XMessage
}

func (w *Worker) claim(ctx context.Context, t trail, now time.Time) (claim, error) {
	res, err := claimScript.Run(ctx, w.rdb, []string{t.stream, t.state}, w.name, now.UnixMilli(), w.lease.Milliseconds(), w.batchSize).Slice()
	if err != nil {
		return claim{}, err
	}
	if len(res) != 6 {
		return claim{}, fmt.Errorf("audit sink: unexpected reply %v", res)
	}
	c := claim{}
	c.status, _ = res[0].(string)
	c.batchEnd, _ = res[1].(string)
	c.lost, _ = res[2].(int64)
	c.lag, _ = res[3].(int64)
	c.cursor, _ = res[4].(string)
	raw, _ := res[5].([]any)
	for _, r := range raw {
		pair, _ := r.([]any)
		if len(pair) != 2 {
			continue
		}
		id, _ := pair[0].(string)
		fields, _ := pair[1].([]any)
		m := redis.XMessage{ID: id, Values: map[string]any{}}
		for i := 0; i+1 < len(fields); i += 2 {
			k, _ := fields[i].(string)
			m.Values[k] = fields[i+1]
		}
		c.entries = append(c.entries, m)
	}
	return c, nil
}
