// Package delivery is the delivery worker of the forms: it sends each stored contact message to the
// operating team (by SMTP and webhook, through package notify), retries what failed, and gives up on a
// message, moving it to the dead letters, after forms.delivery.maxAttempts attempts or maxAge.
//
// Every replica runs a worker; they share the consumer group store.DeliveryGroup on the contact stream, so
// each message goes to one of them. A message is acknowledged (XACK) only after every configured channel
// took it; until then it stays in the group's pending list, where it survives the worker, the process
// and — with Redis persistence — Redis itself.
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
// delivered-at stamps and the delivery lag — reads the worker's clock (Options.Now), so a test can move
// both on together.
package delivery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/notify"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

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

// Options are the worker's dependencies.
type Options struct {
	Config config.Source
	Redis  redis.UniversalClient
	Logger *slog.Logger
	// Registerer receives the worker's metrics (the process's shared registry).
	Registerer prometheus.Registerer
	// ConsumerName names this replica's delivery consumer; default hostname-<random hex>.
	ConsumerName string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// DevMail, in the dev server only, takes contact messages as mail while forms.delivery names no
	// SMTP relay, so that the dev outbox (/dev/mail/) shows them.
	DevMail *DevMail
}

// DevMail is where the dev server's contact mail goes: Sender (the platform's mail, which without a
// relay is the dev outbox), addressed To.
type DevMail struct {
	Sender mail.Sender
	To     string
}

// Worker is the delivery loop of one replica (a server.Runner).
type Worker struct {
	cfg      config.Source
	rdb      redis.UniversalClient
	log      *slog.Logger
	m        *metrics
	now      func() time.Time
	consumer string
	dev      *DevMail

	src source // what this worker delivers
	// pollEvery, when set (a declared form's worker), makes reads not block: the worker looks for new
	// messages this often instead (readArgs).
	pollEvery time.Duration
	reg       prometheus.Registerer
	// targets are the senders of the configuration in use: at first those of the configuration at
	// start-up, built (and a webhook's urlFile read) by New so that a missing or wrong file stops the
	// service before it serves.
	targets *targets
	groupOK bool
	// deployment is the store's identity (store.DeploymentID), read with the group: a part of every
	// mail's Message-ID, so that two deployments never share one.
	deployment string
	lastSweep  time.Time      // of maintain
	badCfg     *config.Config // the configuration whose targets failed last, logged once

	// passes counts the worker's completed passes (Run's loop), so that a test can wait until a whole
	// pass ran after some change instead of sleeping for "the worker had its chance".
	passes atomic.Int64
	// workerWait, when set (by the package's tests, before Run), replaces the worker's waits for work —
	// the XREADGROUP block and the recheck of a configuration without targets — so that a pass takes
	// milliseconds. It is a poll latency; no schedule depends on it (retries follow Redis idle times).
	workerWait time.Duration
}

// New builds the worker. It refuses a configuration whose delivery targets cannot be built (a webhook
// urlFile or secretFile that cannot be read or used).
func New(o Options) (*Worker, error) {
	if o.Config == nil || o.Redis == nil {
		return nil, errors.New("delivery: Config and Redis are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ConsumerName == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		o.ConsumerName = host + "-" + hex.EncodeToString(b)
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	w := &Worker{cfg: o.Config, rdb: o.Redis, log: o.Logger, m: m, now: o.Now, consumer: o.ConsumerName, dev: o.DevMail, reg: o.Registerer}
	w.src = w.contactSource()
	if cfg := o.Config.Current(); cfg != nil {
		senders, err := w.src.senders(cfg)
		if err != nil {
			return nil, err
		}
		w.targets = &targets{cfg: cfg, senders: senders}
	}
	return w, nil
}

// source is what a worker delivers: a queue of the store, the channels that take its messages under a
// configuration, and how a stored record becomes a message (source.go holds the declared forms').
type source struct {
	q store.Queue
	// enabled reports whether anything takes the queue's messages under cfg.
	enabled func(cfg *config.Config) bool
	// senders builds the channels for cfg; it reads files (a webhook's urlFile and secretFile), so it
	// runs at start-up and when the configuration changes.
	senders func(cfg *config.Config) ([]notify.Sender, error)
	decode  func(msg redis.XMessage, deployment string) (notify.Message, bool)
	// pending and deadCount are the queue's gauges.
	pending, deadCount prometheus.Gauge
}

// contactSource is the contact messages': forms.delivery's targets, or the dev mail.
func (w *Worker) contactSource() source {
	return source{
		q:       store.ContactQueue,
		enabled: func(cfg *config.Config) bool { return cfg.Forms.Delivery.Enabled() || w.dev != nil },
		senders: func(cfg *config.Config) ([]notify.Sender, error) { return buildSenders(cfg.Forms.Delivery, w.dev) },
		decode:  decodeStored,
		pending: w.m.deliveryPending, deadCount: w.m.deadLetterCount,
	}
}

// Run is the delivery loop; it returns when ctx ends. A worker runs one loop.
func (w *Worker) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		w.maintain(ctx)
		if err := w.pass(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("contact delivery: store error; retrying", "err", err)
			sleep(ctx, errorPause)
		}
		w.passes.Add(1)
	}
	return nil
}

// pass claims due retries, then waits briefly for new messages and delivers them.
func (w *Worker) pass(ctx context.Context) error {
	cfg := w.cfg.Current()
	d := cfg.Forms.Delivery // the retry settings; the targets are the source's
	if !w.src.enabled(cfg) {
		w.idle(ctx, disabledRecheck)
		return nil
	}
	if w.targets == nil || w.targets.cfg != cfg {
		senders, err := w.src.senders(cfg)
		switch {
		case err == nil:
			w.targets = &targets{cfg: cfg, senders: senders}
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
		if err := w.src.q.EnsureGroup(ctx, w.rdb); err != nil {
			return err
		}
		dep, err := store.DeploymentID(ctx, w.rdb)
		if err != nil {
			return err
		}
		w.deployment, w.groupOK = dep, true
	}
	if err := w.retryDue(ctx, d); err != nil {
		return w.storeErr(err)
	}
	streams, err := w.rdb.XReadGroup(ctx, w.readArgs(d)).Result()
	if errors.Is(err, redis.Nil) {
		if w.pollEvery > 0 {
			w.idle(ctx, w.pollEvery) // nothing new: the next look in a moment, not at once
		}
		return nil
	}
	if err != nil {
		return w.storeErr(err)
	}
	for _, st := range streams {
		h := newHold(st.Messages, w.now())
		for i, msg := range st.Messages {
			h.current = i
			w.deliver(ctx, d, msg, 1, h)
		}
	}
	return nil
}

// readArgs is the worker's read of new messages. The contact worker blocks on its stream for up to
// readBlock (a message is delivered the moment it is stored); a declared form's worker (pollEvery set)
// does not block: a blocking read holds one of the shared client's connections for its whole wait, and
// a hundred forms' workers would hold the connections the submissions need. It looks again every
// pollEvery instead.
func (w *Worker) readArgs(d config.Delivery) *redis.XReadGroupArgs {
	block := min(readBlock, d.RetryAfter.D()/2) // come back in time for due retries
	if w.workerWait > 0 {
		block = w.workerWait
	}
	if w.pollEvery > 0 {
		block = -1 // no BLOCK argument: answered at once
	}
	return &redis.XReadGroupArgs{Group: store.DeliveryGroup, Consumer: w.consumer, Streams: []string{w.src.q.Stream, ">"},
		Count: readBatch, Block: block}
}

// badTargets logs, once per configuration, that its delivery targets cannot be built.
func (w *Worker) badTargets(cfg *config.Config, err error, consequence string) {
	if w.badCfg == cfg {
		return
	}
	w.badCfg = cfg
	w.log.Error("contact delivery: the configured targets cannot be used; "+consequence, "err", err)
}

// storeErr notes a lost consumer group (Redis restarted without its data) so the next pass recreates it.
func (w *Worker) storeErr(err error) error {
	if strings.Contains(err.Error(), "NOGROUP") {
		w.groupOK = false
	}
	return err
}

// retryDue claims and delivers pending messages whose backoff has passed, and updates the pending gauge.
func (w *Worker) retryDue(ctx context.Context, d config.Delivery) error {
	rdb := w.rdb
	if sum, err := rdb.XPending(ctx, w.src.q.Stream, store.DeliveryGroup).Result(); err == nil {
		w.src.pending.Set(float64(sum.Count))
	} else {
		return err
	}
	if n, err := rdb.XLen(ctx, w.src.q.DeadLetters).Result(); err == nil {
		w.src.deadCount.Set(float64(n))
	} else {
		return err
	}
	start := "-"
	for range pendingPages {
		pend, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: w.src.q.Stream, Group: store.DeliveryGroup, Idle: d.RetryAfter.D(),
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
				Stream: w.src.q.Stream, Group: store.DeliveryGroup, Consumer: w.consumer,
				MinIdle: wait, Messages: []string{p.ID},
			}).Result()
			if err != nil {
				return err
			}
			for _, msg := range msgs {
				// XCLAIM counted this delivery: it is attempt RetryCount+1.
				w.deliver(ctx, d, msg, p.RetryCount+1, newHold([]redis.XMessage{msg}, w.now()))
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
func (w *Worker) keep(ctx context.Context, d config.Delivery, h *hold, id string) bool {
	if h.failed {
		return false // asked once and logged once per batch
	}
	if now := w.now(); now.Sub(h.at) >= d.Timeout.D()/2 {
		args := []any{store.DeliveryGroup, w.consumer}
		for _, r := range h.ids[h.current:] {
			if !h.lost[r] {
				args = append(args, r)
			}
		}
		lost, err := renewHoldScript.Run(ctx, w.rdb, []string{w.src.q.Stream}, args...).StringSlice()
		if err != nil {
			w.log.Warn("contact delivery: could not renew the hold on messages; leaving them pending", "err", err)
			h.failed = true
			return false
		}
		for _, l := range lost {
			h.lost[l] = true
			w.log.Info("contact delivery: another replica took a message over; not sending it twice", "id", l)
		}
		h.at = now
	}
	return !h.lost[id]
}

// deliver sends msg to every channel that has not taken it yet and acknowledges it when all have. A
// failure leaves it pending for retryDue, or makes it a dead letter when it was the last attempt (the
// maxAttempts-th, or one after maxAge). attempt counts from 1 (a retry: channels may already have taken
// it); h is the worker's hold on it and on the messages read with it.
func (w *Worker) deliver(ctx context.Context, d config.Delivery, msg redis.XMessage, attempt int64, h *hold) {
	retry := attempt > 1
	m, ok := w.src.decode(msg, w.deployment)
	if !ok {
		// Not something this service wrote; acknowledging it keeps it from blocking the queue forever.
		w.log.Error("contact delivery: unreadable stream entry; skipping it", "id", msg.ID)
		_ = w.rdb.XAck(ctx, w.src.q.Stream, store.DeliveryGroup, msg.ID).Err()
		return
	}
	senders := w.targets.senders
	done := map[string]string{}
	if retry && len(senders) > 1 {
		var err error
		if done, err = w.rdb.HGetAll(ctx, w.src.q.DeliveredKey(msg.ID)).Result(); err != nil {
			return // the store is failing; the message stays pending
		}
	}
	var failure, permanent error
	var failedCh, permanentCh string
	for _, snd := range senders {
		ch, key := snd.Channel(), channelKey(snd)
		if done[key] != "" {
			continue
		}
		if !w.keep(ctx, d, h, msg.ID) {
			return // taken over, acknowledged elsewhere, or the store is failing: not ours to send now
		}
		w.m.deliveryAttempts.WithLabelValues(ch).Inc()
		actx, cancel := context.WithTimeout(ctx, d.Timeout.D())
		err := snd.Send(actx, m)
		cancel()
		if err != nil {
			failure, failedCh = err, ch
			w.m.deliveryFailures.WithLabelValues(ch).Inc()
			if isPermanent(err) && permanent == nil {
				permanent, permanentCh = err, ch
			}
			w.log.Warn("contact delivery failed", "id", m.ID, "channel", ch, "attempt", attempt, "permanent", isPermanent(err), "err", err)
			continue
		}
		if len(senders) > 1 {
			pipe := w.rdb.TxPipeline()
			pipe.HSet(ctx, w.src.q.DeliveredKey(msg.ID), key, w.now().UTC().Format(time.RFC3339))
			pipe.Expire(ctx, w.src.q.DeliveredKey(msg.ID), deliveredTTL)
			_, _ = pipe.Exec(ctx)
		}
	}
	switch {
	case permanent != nil:
		// The relay refused this message for good (a 5xx to its sender, a recipient or its content): the
		// same message would be refused on every attempt, so it is given up at once, with the answer.
		w.giveUp(ctx, msg, permanentCh, attempt, permanent)
		return
	case failure != nil:
		if lastAttempt(d, attempt, w.now().Sub(store.StreamTime(msg.ID))) {
			w.giveUp(ctx, msg, failedCh, attempt, failure)
		}
		return
	}
	pipe := w.rdb.TxPipeline()
	pipe.XAck(ctx, w.src.q.Stream, store.DeliveryGroup, msg.ID)
	pipe.Del(ctx, w.src.q.DeliveredKey(msg.ID))
	if _, err := pipe.Exec(ctx); err != nil {
		w.log.Warn("contact delivery: acknowledging failed; the message may be sent again", "id", msg.ID, "err", err)
		return
	}
	w.m.deliveryLag.Observe(w.now().Sub(store.StreamTime(msg.ID)).Seconds())
	w.log.Info("contact message delivered", "id", m.ID, "channels", len(senders))
}

// giveUp moves the message of stream entry msg to the dead letters, if this worker still holds it.
func (w *Worker) giveUp(ctx context.Context, msg redis.XMessage, channel string, attempts int64, cause error) {
	id := store.MessageID(msg)
	moved, err := w.src.q.MoveToDeadLetters(ctx, w.rdb, w.consumer, msg, cause.Error(), channel, attempts)
	if err != nil {
		w.log.Warn("contact delivery: moving a message to the dead letters failed; it stays pending", "id", id, "err", err)
		return
	}
	if moved {
		w.m.deadLetters.WithLabelValues(channel).Inc()
		w.log.Error("contact delivery: giving up on a message; it is now a dead letter (formsservice deliveries list)",
			"id", id, "channel", channel, "attempts", attempts, "err", cause)
	}
}

// maintain runs the housekeeping every few minutes (and on the first pass): erasing contact messages
// past their retention, and forgetting consumers of replicas long gone. Every replica does it; both are
// idempotent.
func (w *Worker) maintain(ctx context.Context) {
	now := w.now()
	if !w.lastSweep.IsZero() && now.Sub(w.lastSweep) < maintenanceEvery {
		return
	}
	w.lastSweep = now
	cfg := w.cfg.Current()
	f := cfg.Forms
	if r := f.ContactRetention.D(); r > 0 && w.src.q.Name == store.ContactQueue.Name {
		n, err := store.TrimContactMessages(ctx, w.rdb, r, w.src.enabled(cfg), now)
		if err != nil {
			w.log.Warn("contact retention: trimming failed", "err", err)
		} else if n > 0 {
			w.log.Info("contact retention: erased old messages", "count", n, "retention", r.String())
		}
	}
	if w.src.enabled(cfg) {
		w.sweepConsumers(ctx)
	}
}

// sweepConsumers removes consumers of replicas long gone that hold nothing, so the group's consumer
// list does not grow with every restart. Consumers with pending messages are kept: retryDue takes
// their messages over, and the group removes nothing it still needs.
func (w *Worker) sweepConsumers(ctx context.Context) {
	cs, err := w.rdb.XInfoConsumers(ctx, w.src.q.Stream, store.DeliveryGroup).Result()
	if err != nil {
		return
	}
	for _, c := range cs {
		if c.Name != w.consumer && c.Pending == 0 && c.Idle > idleConsumer {
			_ = w.rdb.XGroupDelConsumer(ctx, w.src.q.Stream, store.DeliveryGroup, c.Name).Err()
		}
	}
}

// idle waits d for something to do, or the shorter workerWait a test harness set.
func (w *Worker) idle(ctx context.Context, d time.Duration) {
	if w.workerWait > 0 {
		d = w.workerWait
	}
	sleep(ctx, d)
}

// isPermanent reports an error that says the same message cannot succeed on a retry: a relay's 5xx to
// the transaction (services/platform/mail's RelayError), or a message the mail component refuses to
// compose. Its Permanent method is the contract; no sender type is named here.
func isPermanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
