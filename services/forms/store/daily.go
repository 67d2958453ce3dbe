package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Per-day counts (D80): what each form received, day by day, for the console's chart. They are counted
// by the script that stores the submissions, in the same call, so they cost no round trip and agree
// with what was stored: a second run of a call (its run key) counts nothing twice, and a replay, a
// duplicate, a refusal or a rate-limited request is no arrival. The day is the store's own (Redis TIME,
// UTC): the clock that also stamps the submissions' stream IDs, so a day's count and the submissions
// listed with since/until of that day agree. A hash per form, one field a day ("<days since 1970>",
// and "<day>:spam" for the spam folder), about 40 bytes a day: 15 KB for a year of a form. The counts
// say what arrived; erasing a submission later does not take it back.
//
//	fs:{contact}:daily, fs:{waitlist}:daily, fs:{form:<id>}:daily   hash: day → count
const (
	ContactDaily  = "fs:{contact}:daily"
	WaitlistDaily = "fs:{waitlist}:daily"
)

// FormDaily is a declared form's per-day counts.
func FormDaily(id string) string { return formPrefix(id) + "daily" }

// tallyLua counts a call's arrivals: count(verdict) for each submission kept (spamLua's verdict: ""
// ham, "-" refused and kept nowhere, else spam), or arrived = arrived + 1; then tally(daily key) once
// after the loop, so a batch of 64 costs one HINCRBY, not 64.
const tallyLua = `
local arrived, arrivedSpam = 0, 0
local function count(verdict)
  if verdict == '' then arrived = arrived + 1 elseif verdict ~= '-' then arrivedSpam = arrivedSpam + 1 end
end
local function tally(key)
  if arrived == 0 and arrivedSpam == 0 then return end
  local day = tostring(math.floor(tonumber(redis.call('TIME')[1]) / 86400))
  if arrived > 0 then redis.call('HINCRBY', key, day, arrived) end
  if arrivedSpam > 0 then redis.call('HINCRBY', key, day .. ':spam', arrivedSpam) end
end
`

// DayCount is what a form received on one day (UTC): submissions kept in its inbox (the waitlist: new
// sign-ups), and submissions kept in its spam folder.
type DayCount struct {
	Date        string `json:"date"` // YYYY-MM-DD
	Submissions int64  `json:"submissions"`
	Spam        int64  `json:"spam"`
}

// DailyCmd is a pipelined read of one form's per-day counts: Days fills in the last n days.
type DailyCmd struct{ all *redis.MapStringStringCmd }

// ReadDaily queues the read of daily (ContactDaily, WaitlistDaily or FormDaily) on pipe.
func ReadDaily(ctx context.Context, pipe redis.Pipeliner, daily string) DailyCmd {
	return DailyCmd{all: pipe.HGetAll(ctx, daily)}
}

// Days are the last n days up to and including today's (UTC, the day of now), oldest first, every day
// present (0 when nothing arrived).
func (c DailyCmd) Days(now time.Time, n int) []DayCount {
	today := now.UTC().Unix() / 86400
	out := make([]DayCount, n)
	for i := range out {
		day := today - int64(n-1-i)
		out[i].Date = time.Unix(day*86400, 0).UTC().Format(time.DateOnly)
	}
	for field, v := range c.all.Val() {
		dayText, spam := strings.CutSuffix(field, ":spam")
		day, err := strconv.ParseInt(dayText, 10, 64)
		count, err2 := strconv.ParseInt(v, 10, 64)
		i := day - (today - int64(n-1))
		if err != nil || err2 != nil || i < 0 || i >= int64(n) {
			continue
		}
		if spam {
			out[i].Spam = count
		} else {
			out[i].Submissions = count
		}
	}
	return out
}
