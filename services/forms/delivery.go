package forms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/notify"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/secretfile"

	"github.com/formsservice/formsservice/services/platform/email"
)

// Delivery of contact messages. Every replica runs a worker; they share the consumer group deliveryGroup
// on the contact stream, so each message goes to one of them. A message is acknowledged (XACK) only
// after every configured channel took it; until then it stays in the group's pending list, where it
// survives the worker, the process and — with Redis persistence — Redis itself.
//
// Retries use that pending list as their schedule: a message that failed, or whose worker died, is
// "idle" in it. Each pass lists pending messages (XPENDING with IDLE, which also gives each message's
// delivery count) and claims (XCLAIM with min-idle, an atomic test-and-take, so two replicas never take
// the same message) those idle for longer than their backoff: RetryAfter × 2^(deliveries−1), capped at
// MaxRetryInterval. This is XAUTOCLAIM's mechanism with a per-message wait, which XAUTOCLAIM's single
// min-idle cannot express. RetryAfter is at least twice an attempt's timeout (config validation), and a
// worker renews its hold on all the unfinished messages of a batch (keep) before an attempt that does
// not start right after the last renewal; so a live worker is never robbed of a message it still means
// to send, however many messages its batch holds or however slow the targets before them were.
// Delivery is at least once: a crash after sending and before XACK sends again, with the same mail
// Message-ID.
//
// Two clocks: a message's idle time is Redis's (the retry schedule and take-overs), and everything the
// worker measures itself — the age of a hold, the maintenance period, a message's age for maxAge, the
// delivered-at stamps and the delivery lag — reads the service's clock (Options.Now), so a test can move
// both on together.

const (
	readBatch        = 16
	readBlock        = 2 * time.Second
	pendingPage      = 100
	pendingPages     = 10
	idleConsumer     = 24 * time.Hour // a consumer with nothing pending and idle this long is removed
	errorPause       = time.Second
	deliveredTTL     = 30 * 24 * time.Hour
	maintenanceEvery = 10 * time.Minute
	disabledRecheck  = time.Second
)

// worker is the delivery loop of one replica.
type worker struct {
	s         *Service
	targets   *deliveryTargets
	groupOK   bool
	lastSweep time.Time      // of maintain
	badCfg    *config.Config // the configuration whose targets failed last, logged once
}

// deliveryTargets are the senders for one configuration, rebuilt when the configuration changes so that
// a reloaded relay or webhook URL takes effect without a restart.
type deliveryTargets struct {
	cfg     *config.Config
	senders []notify.Sender
}

// Run is the delivery worker; it returns when ctx ends.
func (s *Service) Run(ctx context.Context) error {
	w := &worker{s: s, targets: s.startTargets}
	for ctx.Err() == nil {
		w.maintain(ctx)
		if err := w.pass(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("contact delivery: store error; retrying", "err", err)
			sleep(ctx, errorPause)
		}
		s.passes.Add(1)
	}
	return nil
}

// pass claims due retries, then waits briefly for new messages and delivers them.
func (w *worker) pass(ctx context.Context) error {
	cfg := w.s.cfg.Current()
	d := cfg.Forms.Delivery
	if !d.Enabled() {
		w.idle(ctx, disabledRecheck)
		return nil
	}
	if w.targets == nil || w.targets.cfg != cfg {
		senders, err := buildSenders(d)
		switch {
		case err == nil:
			w.targets = &deliveryTargets{cfg: cfg, senders: senders}
		case w.targets == nil || len(w.targets.senders) == 0:
			w.badTargets(cfg, err, "nothing is delivered until it is fixed")
			w.idle(ctx, disabledRecheck)
			return nil
		default:
			// A reloaded configuration whose webhook file cannot be used: keep delivering to the last good
			// targets (read again on every pass, so a fixed file is taken up).
			w.badTargets(cfg, err, "delivering with the previous targets")
			d = w.targets.cfg.Forms.Delivery
		}
	}
	if !w.groupOK {
		if err := ensureGroup(ctx, w.s.rdb); err != nil {
			return err
		}
		w.groupOK = true
	}
	if err := w.retryDue(ctx, d); err != nil {
		return w.storeErr(err)
	}
	block := min(readBlock, d.RetryAfter.D()/2) // come back in time for due retries
	if w.s.workerWait > 0 {
		block = w.s.workerWait
	}
	streams, err := w.s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: deliveryGroup, Consumer: w.s.consumer, Streams: []string{contactStream, ">"},
		Count: readBatch, Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return w.storeErr(err)
	}
	for _, st := range streams {
		h := newHold(st.Messages, w.s.now())
		for i, msg := range st.Messages {
			h.current = i
			w.deliver(ctx, d, msg, 1, h)
		}
	}
	return nil
}

// badTargets logs, once per configuration, that its delivery targets cannot be built.
func (w *worker) badTargets(cfg *config.Config, err error, consequence string) {
	if w.badCfg == cfg {
		return
	}
	w.badCfg = cfg
	w.s.log.Error("contact delivery: the configured targets cannot be used; "+consequence, "err", err)
}

// storeErr notes a lost consumer group (Redis restarted without its data) so the next pass recreates it.
func (w *worker) storeErr(err error) error {
	if strings.Contains(err.Error(), "NOGROUP") {
		w.groupOK = false
	}
	return err
}

// ensureGroup creates the consumer group (and the stream) when missing. It starts at the beginning of
// the stream: messages stored while no delivery target was configured are delivered once one is.
func ensureGroup(ctx context.Context, rdb redis.UniversalClient) error {
	err := rdb.XGroupCreateMkStream(ctx, contactStream, deliveryGroup, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return err
	}
	return nil
}

// retryDue claims and delivers pending messages whose backoff has passed, and updates the pending gauge.
func (w *worker) retryDue(ctx context.Context, d config.Delivery) error {
	rdb := w.s.rdb
	if sum, err := rdb.XPending(ctx, contactStream, deliveryGroup).Result(); err == nil {
		w.s.m.deliveryPending.Set(float64(sum.Count))
	} else {
		return err
	}
	if n, err := rdb.XLen(ctx, deadStream).Result(); err == nil {
		w.s.m.deadLetterCount.Set(float64(n))
	} else {
		return err
	}
	start := "-"
	for range pendingPages {
		pend, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: contactStream, Group: deliveryGroup, Idle: d.RetryAfter.D(),
			Start: start, End: "+", Count: pendingPage,
		}).Result()
		if err != nil {
			return err
		}
		for _, p := range pend {
			wait := backoff(p.RetryCount, d)
			if p.Idle < wait {
				continue
			}
			msgs, err := rdb.XClaim(ctx, &redis.XClaimArgs{
				Stream: contactStream, Group: deliveryGroup, Consumer: w.s.consumer,
				MinIdle: wait, Messages: []string{p.ID},
			}).Result()
			if err != nil {
				return err
			}
			for _, msg := range msgs {
				// XCLAIM counted this delivery: it is attempt RetryCount+1.
				w.deliver(ctx, d, msg, p.RetryCount+1, newHold([]redis.XMessage{msg}, w.s.now()))
			}
			if ctx.Err() != nil {
				return nil
			}
		}
		if len(pend) < pendingPage {
			return nil
		}
		start = "(" + pend[len(pend)-1].ID
	}
	return nil
}

// lastAttempt reports whether a failed attempt ends delivery: the maxAttempts-th, or one of a message
// older than maxAge (zero, before defaults are applied, means no limit).
func lastAttempt(d config.Delivery, attempt int64, age time.Duration) bool {
	return (d.MaxAttempts > 0 && attempt >= int64(d.MaxAttempts)) || (d.MaxAge > 0 && age >= d.MaxAge.D())
}

// backoff is the idle time after which a message delivered n times is tried again.
func backoff(n int64, d config.Delivery) time.Duration {
	wait := d.RetryAfter.D()
	for i := int64(1); i < n && wait < d.MaxRetryInterval.D(); i++ {
		wait *= 2
	}
	return min(wait, d.MaxRetryInterval.D())
}

// hold is a worker's claim on the messages of one read (or one claim) that it has not finished yet.
// Their idle time in the pending list is what another replica takes as "abandoned", so it is renewed
// for all of them together before an attempt that does not start right after the last renewal.
type hold struct {
	ids     []string        // the messages read together, in order
	current int             // ids[current:] are not finished yet
	at      time.Time       // when they were read, claimed or last renewed (by the service's clock)
	lost    map[string]bool // taken over by another replica (or acknowledged elsewhere): not to be sent
	failed  bool            // a renewal failed (the store is failing): the rest stay pending for retryDue
}

func newHold(msgs []redis.XMessage, now time.Time) *hold {
	h := &hold{at: now, lost: map[string]bool{}}
	for _, m := range msgs {
		h.ids = append(h.ids, m.ID)
	}
	return h
}

// renewHoldScript resets the idle time of each pending message that this consumer still holds (XCLAIM
// with JUSTID leaves the delivery count, and so the backoff, alone), and answers the IDs it no longer
// holds.
var renewHoldScript = redis.NewScript(`
local lost = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  if #redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1, ARGV[2]) == 0 then
    lost[#lost + 1] = id
  else
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'JUSTID')
  end
end
return lost`)

// keep reports whether this worker still holds message id, renewing the hold on every unfinished
// message once it is Timeout/2 old: an attempt then ends well inside RetryAfter (at least 2 × Timeout),
// however many messages came before it in the batch and however slow their targets were.
func (w *worker) keep(ctx context.Context, d config.Delivery, h *hold, id string) bool {
	if h.failed {
		return false // asked once and logged once per batch
	}
	if now := w.s.now(); now.Sub(h.at) >= d.Timeout.D()/2 {
		args := []any{deliveryGroup, w.s.consumer}
		for _, r := range h.ids[h.current:] {
			if !h.lost[r] {
				args = append(args, r)
			}
		}
		lost, err := renewHoldScript.Run(ctx, w.s.rdb, []string{contactStream}, args...).StringSlice()
		if err != nil {
			w.s.log.Warn("contact delivery: could not renew the hold on messages; leaving them pending", "err", err)
			h.failed = true
			return false
		}
		for _, l := range lost {
			h.lost[l] = true
			w.s.log.Info("contact delivery: another replica took a message over; not sending it twice", "id", l)
		}
		h.at = now
	}
	return !h.lost[id]
}

// deliver sends msg to every channel that has not taken it yet and acknowledges it when all have. A
// failure leaves it pending for retryDue, or makes it a dead letter when it was the last attempt (the
// maxAttempts-th, or one after maxAge). attempt counts from 1 (a retry: channels may already have taken
// it); h is the worker's hold on it and on the messages read with it.
func (w *worker) deliver(ctx context.Context, d config.Delivery, msg redis.XMessage, attempt int64, h *hold) {
	retry := attempt > 1
	s := w.s
	m, ok := decodeStored(msg)
	if !ok {
		// Not something this service wrote; acknowledging it keeps it from blocking the queue forever.
		s.log.Error("contact delivery: unreadable stream entry; skipping it", "id", msg.ID)
		_ = s.rdb.XAck(ctx, contactStream, deliveryGroup, msg.ID).Err()
		return
	}
	senders := w.targets.senders
	done := map[string]string{}
	if retry && len(senders) > 1 {
		var err error
		if done, err = s.rdb.HGetAll(ctx, deliveredKey(msg.ID)).Result(); err != nil {
			return // the store is failing; the message stays pending
		}
	}
	var failure error
	var failedCh string
	for _, snd := range senders {
		ch := snd.Channel()
		if done[ch] != "" {
			continue
		}
		if !w.keep(ctx, d, h, msg.ID) {
			return // taken over, acknowledged elsewhere, or the store is failing: not ours to send now
		}
		s.m.deliveryAttempts.WithLabelValues(ch).Inc()
		actx, cancel := context.WithTimeout(ctx, d.Timeout.D())
		err := snd.Send(actx, m)
		cancel()
		if err != nil {
			failure, failedCh = err, ch
			s.m.deliveryFailures.WithLabelValues(ch).Inc()
			s.log.Warn("contact delivery failed", "id", msg.ID, "channel", ch, "attempt", attempt, "err", err)
			continue
		}
		if len(senders) > 1 {
			pipe := s.rdb.TxPipeline()
			pipe.HSet(ctx, deliveredKey(msg.ID), ch, s.now().UTC().Format(time.RFC3339))
			pipe.Expire(ctx, deliveredKey(msg.ID), deliveredTTL)
			_, _ = pipe.Exec(ctx)
		}
	}
	if failure != nil {
		if lastAttempt(d, attempt, s.now().Sub(streamTime(msg.ID))) {
			record, _ := msg.Values[contactRecordField].(string)
			w.deadLetter(ctx, msg.ID, record, failedCh, attempt, failure)
		}
		return
	}
	pipe := s.rdb.TxPipeline()
	pipe.XAck(ctx, contactStream, deliveryGroup, msg.ID)
	pipe.Del(ctx, deliveredKey(msg.ID))
	if _, err := pipe.Exec(ctx); err != nil {
		s.log.Warn("contact delivery: acknowledging failed; the message may be sent again", "id", msg.ID, "err", err)
		return
	}
	s.m.deliveryLag.Observe(s.now().Sub(streamTime(msg.ID)).Seconds())
	s.log.Info("contact message delivered", "id", msg.ID, "channels", len(senders))
}

// decodeStored turns a stream entry into the message the team receives.
func decodeStored(msg redis.XMessage) (notify.Message, bool) {
	raw, ok := msg.Values[contactRecordField].(string)
	if !ok {
		return notify.Message{}, false
	}
	var rec contactRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec.Email == "" {
		return notify.Message{}, false
	}
	addr := rec.Email
	if ascii, ok := email.ASCII(addr); ok {
		addr = ascii // a mail header wants the ASCII domain
	}
	received := rec.ReceivedAt
	if received.IsZero() {
		received = streamTime(msg.ID)
	}
	return notify.Message{
		ID: msg.ID, ReceivedAt: received, Name: rec.Name, Email: addr, Organization: rec.Organization,
		Topic: rec.Topic, Text: rec.Message, Origin: rec.Origin,
	}, true
}

// buildSenders makes the senders for d. It reads a webhook's urlFile, so that New can refuse to start
// on a missing or wrong file (it runs at start-up) and a reload picks up the file a new configuration
// names.
func buildSenders(d config.Delivery) ([]notify.Sender, error) {
	var out []notify.Sender
	if d.SMTP != nil {
		out = append(out, notify.NewSMTP(*d.SMTP))
	}
	if d.Webhook != nil {
		u, err := webhookURL(*d.Webhook)
		if err != nil {
			return nil, err
		}
		wh := notify.NewWebhook(u, nil)
		if f := d.Webhook.SecretFile; f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("forms.delivery.webhook.secretFile: cannot read the signing secret: %w", err)
			}
			if wh, err = wh.WithSecret(strings.TrimSpace(string(b))); err != nil {
				return nil, fmt.Errorf("forms.delivery.webhook.secretFile: %s: %w", f, err)
			}
		}
		out = append(out, wh)
	}
	return out, nil
}

// webhookURL is the webhook's address: url, or the trimmed content of urlFile. Errors name the file,
// never its content, which is a secret.
func webhookURL(w config.Webhook) (string, error) {
	if w.URLFile == "" {
		return w.URL, nil
	}
	u, err := secretfile.Read(w.URLFile)
	if err != nil {
		return "", fmt.Errorf("forms.delivery.webhook.urlFile: cannot read the webhook URL: %w", err)
	}
	if err := config.CheckWebhookURL(u); err != nil {
		return "", fmt.Errorf("forms.delivery.webhook.urlFile: the content of %s %w", w.URLFile, err)
	}
	return u, nil
}

// maintain runs the housekeeping every few minutes (and on the first pass): erasing contact messages
// past their retention, and forgetting consumers of replicas long gone. Every replica does it; both are
// idempotent.
func (w *worker) maintain(ctx context.Context) {
	now := w.s.now()
	if !w.lastSweep.IsZero() && now.Sub(w.lastSweep) < maintenanceEvery {
		return
	}
	w.lastSweep = now
	f := w.s.cfg.Current().Forms
	if r := f.ContactRetention.D(); r > 0 {
		n, err := trimContactMessages(ctx, w.s.rdb, r, f.Delivery.Enabled(), now)
		if err != nil {
			w.s.log.Warn("contact retention: trimming failed", "err", err)
		} else if n > 0 {
			w.s.log.Info("contact retention: erased old messages", "count", n, "retention", r.String())
		}
	}
	if f.Delivery.Enabled() {
		w.sweepConsumers(ctx)
	}
}

// sweepConsumers removes consumers of replicas long gone that hold nothing, so the group's consumer
// list does not grow with every restart. Consumers with pending messages are kept: retryDue takes
// their messages over, and the group removes nothing it still needs.
func (w *worker) sweepConsumers(ctx context.Context) {
	cs, err := w.s.rdb.XInfoConsumers(ctx, contactStream, deliveryGroup).Result()
	if err != nil {
		return
	}
	for _, c := range cs {
		if c.Name != w.s.consumer && c.Pending == 0 && c.Idle > idleConsumer {
			_ = w.s.rdb.XGroupDelConsumer(ctx, contactStream, deliveryGroup, c.Name).Err()
		}
	}
}

// idle waits d for something to do, or the shorter workerWait a test harness set.
func (w *worker) idle(ctx context.Context, d time.Duration) {
	if w.s.workerWait > 0 {
		d = w.s.workerWait
	}
	sleep(ctx, d)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
