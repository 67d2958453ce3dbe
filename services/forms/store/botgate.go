package store

import (
	"context"
	"net/netip"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/clientip"
	"github.com/formsservice/formsservice/services/platform/config"
)

// beforeBotLua counts a submission against its client's rate limit and says whether its
// Idempotency-Key is known: KEYS run, rate key, then the idempotency key when one was sent; ARGV the
// limit. It answers {rate, seen}: rate as the store scripts' (0, or minus the milliseconds left of the
// window), seen 1 when the key has a record. Its run key makes a second run of the same call (a
// client retry after a read timeout) answer the first run's answer instead of counting again.
var beforeBotLua = firstRun + rateLimitLua + `
local r = rate(KEYS[2], tonumber(ARGV[1]))
local seen = 0
if r == 0 and KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then seen = 1 end
out = {r, seen}
return remember(KEYS[1], out)`

var beforeBotScript = redis.NewScript(beforeBotLua)

// Gate is what BeforeBotCheck found.
type Gate struct {
	// Limited, when set, is the 429 to answer (Outcome RateLimited, RetryAfter).
	Limited *Result
	// Seen says the submission's Idempotency-Key has a record: the store answers it (a replay, 422 or
	// 409), so no bot check is needed and no token is spent.
	Seen bool
}

// BeforeBotCheck runs, for a site with a bot check, what must come before asking the CAPTCHA provider
// (docs/forms.md, order of checks): the durability guard (nothing is verified for a submission that
// would be refused anyway), the client's rate limit, counted here so that a client past it asks the
// provider nothing, and whether its Idempotency-Key is known. The submission is then stored with a limit
// of 0: it was counted.
func (s *Store) BeforeBotCheck(ctx context.Context, waitlist bool, client netip.Addr, limit int, idem Idempotency, level config.Durability) (Gate, error) {
	if err := s.guard.Allow(ctx, level); err != nil {
		return Gate{}, err
	}
	tag, rate, idemKey := "fs:{contact}", contactRatePrefix, IdempotencyRecordKey(idem.Origin, idem.Key)
	if waitlist {
		tag, rate, idemKey = "fs:{waitlist}", waitlistRatePrefix, idempotencyKey(waitlistIdemPrefix, idem.Origin, idem.Key)
	}
	return s.beforeBot(ctx, tag+runPrefix, rate+clientip.Key(client), idemKey, limit, idem)
}

// BeforeBotCheckForm is BeforeBotCheck for a declared form's submission (declared.go's keys).
func (s *Store) BeforeBotCheckForm(ctx context.Context, form string, client netip.Addr, limit int, idem Idempotency, level config.Durability) (Gate, error) {
	if err := s.guard.Allow(ctx, level); err != nil {
		return Gate{}, err
	}
	p := formPrefix(form)
	return s.beforeBot(ctx, p+"run:", p+"rate:"+clientip.Key(client), formIdemKey(form, idem), limit, idem)
}

func (s *Store) beforeBot(ctx context.Context, runPrefix, rateKey, idemKey string, limit int, idem Idempotency) (Gate, error) {
	keys := []string{runPrefix + randomHex(16), rateKey}
	if idem.Key != "" {
		keys = append(keys, idemKey)
	}
	res, err := beforeBotScript.Run(ctx, s.rdb, keys, limit).Int64Slice()
	if err != nil {
		return Gate{}, err
	}
	if len(res) != 2 {
		return Gate{}, errShortAnswer
	}
	if res[0] < 0 {
		r, _ := scriptResult(res[0])
		return Gate{Limited: &r}, nil
	}
	return Gate{Seen: res[1] == 1}, nil
}
