package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/clientip"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A declared form's keys (docs/forms.md "Your own forms") carry the form's own hash tag, {form:<id>},
// so that each form's keys live in one slot (one script call decides a submission atomically, as for
// the built-in forms) and different forms spread over the masters of a Redis Cluster.
//
//	fs:{form:<id>}:messages    stream: one entry per stored submission (field RecordField: the record)
//	fs:{form:<id>}:unique      hash: the unique field's value -> the stream entry that holds it
//	fs:{form:<id>}:rate:<ip>   the client's rate-limit window on this form
//	fs:{form:<id>}:idem:<hash> an Idempotency-Key's record: "<hash of the submission>:<first answer>"
//	fs:{form:<id>}:run:<call>  a script call's answer, for a second run of the same call
//	fs:{form:<id>}:optin:...   the double opt-in's pending submissions and mails (formoptin.go)
func formPrefix(id string) string { return "fs:{form:" + id + "}:" }

// FormStream is where a declared form's submissions are stored, in order.
func FormStream(id string) string { return formPrefix(id) + "messages" }

// FormUnique is the declared form's hash of unique values.
func FormUnique(id string) string { return formPrefix(id) + "unique" }

// formLua: KEYS run, stream, unique hash, spam folder, per-day counts (daily.go), the double opt-in's
// pending hash, expiry set and outbox (formoptin.go), then per submission its rate key, idempotency
// key, in-flight key and resend key; ARGV per submission: limit, record, the hash of the submission when an
// Idempotency-Key was sent (else ""), "1" when the answer waits for durability, the unique value (else
// ""), the spam verdict (as contactLua's), and for the double opt-in (else "") the pending entry's id,
// when it expires (ms), the resend window (ms) and the canonical address. Answers as contactLua's, plus 2 (a unique value stored
// before: duplicate) and 6 (a replay of a duplicate). The idempotency record keeps the first answer, so
// that a replay answers as the first did. Spam is answered as ham would be (a unique value seen before
// is a duplicate), and its unique value is not recorded: spam must not take a genuine sender's value.
//
// With the double opt-in, ham is not stored in the stream but kept pending (pendLua) until its link is
// followed; a pending value submitted again is a duplicate whose mail is queued again as the
// waitlist's is (at most MaxResends times, the window doubling).
var formLua = firstRun + rateLimitLua + spamLua + tallyLua + pendLua + `
local F, K, A = 8, 4, 10
for i = 1, (#KEYS - F) / K do
  local k = F + K*(i - 1)
  local kr, ki, kb, ks = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  local a = A*(i - 1)
  local hash, uniq, optin = ARGV[a + 3], ARGV[a + 5], ARGV[a + 7]
  local r = rate(kr, tonumber(ARGV[a + 1]))
  if r == 0 then
    local seen = false
    if hash ~= '' then seen = redis.call('GET', ki) end
    if seen then
      local h, first = string.match(seen, '^(%x+):(%d)$')
      if h ~= hash then r = 4
      elseif redis.call('EXISTS', kb) == 1 then r = 5
      elseif first == '2' then r = 6
      else r = 3 end
    else
      local held = false
      if uniq ~= '' then held = redis.call('HGET', KEYS[3], uniq) end
      if held then
        r = 2
        if optin ~= '' and ARGV[a + 6] == '' then resend(held, ks, ARGV[a + 8], ARGV[a + 9]) end
      elseif optin ~= '' and ARGV[a + 6] == '' then
        pend(optin, ARGV[a + 2], uniq, ARGV[a + 10], ARGV[a + 8], ARGV[a + 9], ks)
        r = 1
      else
        local id = keep(KEYS[2], KEYS[4], ARGV[a + 2], ARGV[a + 6])
        count(ARGV[a + 6])
        if id and uniq ~= '' then redis.call('HSET', KEYS[3], uniq, id) end
        r = 1
      end
      if hash ~= '' then
        redis.call('SET', ki, hash .. ':' .. r, 'PX', ` + ms(idempotencyLifetime) + `)
        if ARGV[a + 4] == '1' then redis.call('SET', kb, KEYS[1], 'PX', ` + ms(inFlightLifetime) + `) end
      end
    end
  end
  out[i] = r
end
tally(KEYS[5])
return remember(KEYS[1], out)
`

// formIdemKey is where a declared form's Idempotency-Key keeps its record (see IdempotencyRecordKey).
func formIdemKey(form string, idem Idempotency) string {
	return idempotencyKey(formPrefix(form)+"idem:", idem.Origin, idem.Key)
}

// formBatchers holds one batcher per declared form, made on the form's first submission: a form
// declared by a reloaded configuration needs no restart.
type formBatchers struct {
	mu    sync.Mutex
	m     map[string]*batcher
	known map[string]bool // ids recorded in formsIndex
}

func (s *Store) formBatcher(id string) *batcher {
	s.forms.mu.Lock()
	defer s.forms.mu.Unlock()
	if s.forms.m == nil {
		s.forms.m = map[string]*batcher{}
	}
	b := s.forms.m[id]
	if b == nil {
		b = newBatcher(s.rdb, s.guard, formLua, []string{FormStream(id), FormUnique(id), FormQueue(id).Spam, FormDaily(id),
			FormPending(id), formExpiry(id), FormOutbox(id)}, formPrefix(id)+"run:")
		s.forms.m[id] = b
	}
	return b
}

// Submission is one submission of a declared form.
type Submission struct {
	Form   string // the form's id
	Client netip.Addr
	Limit  int // the client's rate limit per minute on this form; 0: none
	Idem   Idempotency
	Record []byte // the record (AppendFormRecord)
	// Unique is the canonical value of the form's unique field; "" when the form has none.
	Unique string
	// Verdict is the submission's spam verdict: ham is stored for delivery, spam in the form's spam
	// folder or nowhere.
	Verdict Verdict
	// OptIn, when set (a form with the double opt-in, whose unique field is an e-mail field), keeps ham
	// pending until the address confirms it (formoptin.go); Unique is then the canonical address.
	OptIn *OptIn
}

// AddSubmission stores a declared form's submission unless its unique value or its Idempotency-Key
// was seen before, within the client's rate limit, as durable as level asks (see AddWaitlist).
func (s *Store) AddSubmission(ctx context.Context, sub Submission, level config.Durability) (Result, error) {
	if err := s.guard.Allow(ctx, level); err != nil {
		return Result{}, err
	}
	// Recorded before the first submission is stored, so that no stored one escapes erasure.
	if err := s.registerForm(ctx, sub.Form); err != nil {
		return Result{}, err
	}
	p := formPrefix(sub.Form)
	op := storeOp{level: level}
	hash, waits, idemKey := "", "0", formIdemKey(sub.Form, sub.Idem)
	if sub.Idem.Key != "" {
		sum := sha256.Sum256(sub.Idem.Message)
		hash = hex.EncodeToString(sum[:])
		if level != config.DurabilityProcess {
			waits = "1"
			op.settle = idemKey + ":busy"
		}
	}
	optin, until, resend, resendKey := "", int64(0), int64(0), p+"optin:resend:-"
	if o := sub.OptIn; o != nil && sub.Unique != "" {
		optin, until, resend = o.ID, o.Until.UnixMilli(), max(o.ResendAfter.Milliseconds(), 1)
		resendKey = formResendKey(sub.Form, sub.Unique)
	}
	op.keys = []string{p + "rate:" + clientip.Key(sub.Client), idemKey, idemKey + ":busy", resendKey}
	op.args = []any{sub.Limit, string(sub.Record), hash, waits, sub.Unique, sub.Verdict.arg(), optin, until, resend, sub.Unique}
	n, err := s.formBatcher(sub.Form).do(ctx, op)
	if err != nil {
		return Result{}, err
	}
	return scriptResult(n)
}

// formsIndex lists the ids of the declared forms that ever stored a submission, so that erasure and
// export find every form's stream without the configuration that declared it (a form since removed
// still holds personal data until it is erased).
const formsIndex = "fs:{forms}:ids"

// KnownForms returns the ids of every declared form that stored a submission, sorted.
func KnownForms(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	ids, err := rdb.SMembers(ctx, formsIndex).Result()
	slices.Sort(ids)
	return ids, err
}

// registerForm records form id in formsIndex once per process (again after a failure).
func (s *Store) registerForm(ctx context.Context, id string) error {
	s.forms.mu.Lock()
	done := s.forms.known[id]
	s.forms.mu.Unlock()
	if done {
		return nil
	}
	if err := s.rdb.SAdd(ctx, formsIndex, id).Err(); err != nil {
		return err
	}
	s.forms.mu.Lock()
	if s.forms.known == nil {
		s.forms.known = map[string]bool{}
	}
	s.forms.known[id] = true
	s.forms.mu.Unlock()
	return nil
}
