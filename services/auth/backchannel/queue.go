// Package backchannel tells relying parties that a person's sign-in ended (OpenID Connect Back-Channel
// Logout 1.0): which clients to tell when a browser session ends or an account is signed out everywhere
// (Notifier), a durable queue of the logout tokens to send in Redis (Queue), and the worker that signs
// each token when it sends it and retries with backoff (Worker). The sign-out never waits for a relying
// party: it only queues (D60).
package backchannel

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// ErrUnavailable wraps Redis failures.
var ErrUnavailable = storeerr.Unavailable("back-channel logout queue unavailable")

// Job is one logout token to send: to which client, about whom (the subject, the session, or both), and
// how many attempts failed so far.
type Job struct {
	ID       string `json:"i"`
	Client   string `json:"c"`
	Subject  string `json:"s,omitempty"`
	SID      string `json:"d,omitempty"`
	Attempts int    `json:"a,omitempty"`
}

// Queue is the jobs in Redis: a sorted set of job IDs scored by when each is due (Unix ms) and a hash of
// the jobs, both under one hash tag, so that each step is one script or transaction on one slot.
type Queue struct{ rdb redis.UniversalClient }

// NewQueue returns the queue in rdb.
func NewQueue(rdb redis.UniversalClient) *Queue { return &Queue{rdb: rdb} }

const (
	dueKey  = "auth:backchannel:{queue}:due"
	jobsKey = "auth:backchannel:{queue}:jobs"
)

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Add queues jobs, due at once (at). Jobs without an ID get one.
func (q *Queue) Add(ctx context.Context, at time.Time, jobs ...Job) error {
	if len(jobs) == 0 {
		return nil
	}
	_, err := q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, j := range jobs {
			if j.ID == "" {
				j.ID = newID()
			}
			b, err := json.Marshal(j)
			if err != nil {
				return err
			}
			p.HSet(ctx, jobsKey, j.ID, b)
			p.ZAdd(ctx, dueKey, redis.Z{Score: float64(at.UnixMilli()), Member: j.ID})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// claimScript takes up to ARGV[3] jobs due by ARGV[1] (Unix ms) and makes them due again at ARGV[2]
// (the lease): a worker that dies while it sends leaves them to be sent again, and no other worker takes
// them meanwhile. An ID without its job is dropped. KEYS: due, jobs.
var claimScript = redis.NewScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, id in ipairs(ids) do
  local j = redis.call('HGET', KEYS[2], id)
  if j then
    redis.call('ZADD', KEYS[1], ARGV[2], id)
    out[#out + 1] = j
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out
`)

// Claim takes up to n jobs due at now, leased until now+lease.
func (q *Queue) Claim(ctx context.Context, now time.Time, lease time.Duration, n int) ([]Job, error) {
	if n <= 0 {
		return nil, nil
	}
	res, err := claimScript.Run(ctx, q.rdb, []string{dueKey, jobsKey},
		strconv.FormatInt(now.UnixMilli(), 10), strconv.FormatInt(now.Add(lease).UnixMilli(), 10), n).StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	jobs := make([]Job, 0, len(res))
	for _, v := range res {
		var j Job
		if json.Unmarshal([]byte(v), &j) == nil && j.ID != "" {
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}

// Done removes a job (sent, given up or dropped).
func (q *Queue) Done(ctx context.Context, id string) error {
	_, err := q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, dueKey, id)
		p.HDel(ctx, jobsKey, id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// Retry stores j (its attempts counted) due again at at.
func (q *Queue) Retry(ctx context.Context, j Job, at time.Time) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	_, err = q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, jobsKey, j.ID, b)
		p.ZAdd(ctx, dueKey, redis.Z{Score: float64(at.UnixMilli()), Member: j.ID})
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// Pending is how many jobs are queued (due or waiting for a retry).
func (q *Queue) Pending(ctx context.Context) (int64, error) {
	n, err := q.rdb.ZCard(ctx, dueKey).Result()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return n, nil
}

// Jobs lists the queued jobs with when each is due (tests and diagnostics).
func (q *Queue) Jobs(ctx context.Context) (map[Job]time.Time, error) {
	due, err := q.rdb.ZRangeWithScores(ctx, dueKey, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	out := make(map[Job]time.Time, len(due))
	for _, z := range due {
		id, _ := z.Member.(string)
		v, err := q.rdb.HGet(ctx, jobsKey, id).Result()
		if err != nil {
			continue
		}
		var j Job
		if json.Unmarshal([]byte(v), &j) == nil {
			out[j] = time.UnixMilli(int64(z.Score))
		}
	}
	return out, nil
}
