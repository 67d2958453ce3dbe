package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/notify"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// formsRecheck is how often Forms looks for declared forms that were added or removed; formPoll how
// often a form's worker looks for new submissions (it does not block on its stream: Worker.readArgs).
const (
	formsRecheck = time.Second
	formPoll     = time.Second
)

// Forms delivers the declared forms' submissions (docs/forms.md "Your own forms"): one worker per form
// that notifies anyone (notify or autoresponder), each on its form's stream with the contact worker's
// machinery (consumer group, retries with backoff, dead letters, at-least-once) and metrics. Workers
// start and stop as a reloaded configuration declares forms.
type Forms struct {
	base               *Worker
	mail               mail.Sender
	pending, deadCount *prometheus.GaugeVec

	mu      sync.Mutex
	running map[string]*Worker // by form id, while its worker runs
	stop    map[string]context.CancelFunc

	lastTrim time.Time // of trim
}

// Forms returns the declared forms' delivery, sharing w's store, clock and metrics; mail is the shared
// mail component that takes the forms' mails (mailTo and the autoresponder).
func (w *Worker) Forms(via mail.Sender) (*Forms, error) {
	f := &Forms{
		base: w, mail: via, running: map[string]*Worker{}, stop: map[string]context.CancelFunc{},
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "formsservice_forms_declared_delivery_pending",
			Help: "A declared form's submissions read by a delivery worker and not yet delivered (waiting for a retry), by form.",
		}, []string{"form"}),
		deadCount: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "formsservice_forms_declared_delivery_dead_letters",
			Help: "A declared form's submissions in its dead letters, by form.",
		}, []string{"form"}),
	}
	for _, c := range []prometheus.Collector{f.pending, f.deadCount} {
		if err := w.reg.Register(c); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Check builds every declared form's channels under cfg, so that a webhook file that cannot be read
// stops the service at start-up, as forms.delivery's does.
func (f *Forms) Check(cfg *config.Config) error {
	for _, d := range cfg.Forms.Declared {
		if _, err := f.senders(cfg, d.ID); err != nil {
			return err
		}
	}
	return nil
}

// Run keeps a worker running for each declared form that notifies anyone, until ctx ends.
func (f *Forms) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		cfg := f.base.cfg.Current()
		want := map[string]bool{}
		if cfg != nil {
			for _, d := range cfg.Forms.Declared {
				if d.Notify != nil || d.Autoresponder != nil {
					want[d.ID] = true
				}
			}
		}
		f.mu.Lock()
		for id, cancel := range f.stop {
			if !want[id] {
				cancel()
				delete(f.stop, id)
				delete(f.running, id)
				f.pending.DeleteLabelValues(id)
				f.deadCount.DeleteLabelValues(id)
			}
		}
		for id := range want {
			if f.stop[id] != nil {
				continue
			}
			w := f.worker(id)
			wctx, cancel := context.WithCancel(ctx)
			f.stop[id], f.running[id] = cancel, w
			wg.Add(1)
			go func() { defer wg.Done(); _ = w.Run(wctx) }()
		}
		f.mu.Unlock()
		if cfg != nil {
			f.trim(ctx, cfg)
		}
		f.base.idle(ctx, formsRecheck)
	}
	return nil
}

// trim erases, every few minutes, the submissions of each declared form with a retention that are
// older than it (never one still waiting for delivery), whether the form notifies anyone or not. Every
// replica does it; it is idempotent.
func (f *Forms) trim(ctx context.Context, cfg *config.Config) {
	now := f.base.now()
	if !f.lastTrim.IsZero() && now.Sub(f.lastTrim) < maintenanceEvery {
		return
	}
	f.lastTrim = now
	for _, d := range cfg.Forms.Declared {
		r := d.Retention.D()
		if r <= 0 {
			continue
		}
		n, err := store.FormQueue(d.ID).Trim(ctx, f.base.rdb, r, d.Notify != nil || d.Autoresponder != nil, now)
		switch {
		case err != nil:
			f.base.log.Warn("form retention: trimming failed", "form", d.ID, "err", err)
		case n > 0:
			f.base.log.Info("form retention: erased old submissions", "form", d.ID, "count", n, "retention", r.String())
		}
	}
}

// Worker returns the running worker of form id, or nil (for tests that wait for its passes).
func (f *Forms) Worker(id string) *Worker {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running[id]
}

// worker makes form id's worker: the base worker's settings on the form's queue. Targets that cannot
// be built (a webhook file missing) are logged by the worker and retried on each pass.
func (f *Forms) worker(id string) *Worker {
	b := f.base
	w := &Worker{cfg: b.cfg, rdb: b.rdb, log: b.log.With("form", id), m: b.m, now: b.now, consumer: b.consumer,
		reg: b.reg, workerWait: b.workerWait, pollEvery: formPoll}
	w.src = source{
		q: store.FormQueue(id),
		enabled: func(cfg *config.Config) bool {
			d := cfg.Forms.FindDeclared(id)
			return d != nil && (d.Notify != nil || d.Autoresponder != nil)
		},
		senders: func(cfg *config.Config) ([]notify.Sender, error) { return f.senders(cfg, id) },
		decode: func(msg redis.XMessage, deployment string) (notify.Message, bool) {
			cfg := w.cfg.Current()
			return decodeForm(msg, deployment, cfg.Forms.FindDeclared(id), fileLinker(cfg, w.now, w.log))
		},
		pending: f.pending.WithLabelValues(id), deadCount: f.deadCount.WithLabelValues(id),
	}
	return w
}

// senders are form id's channels: one mail to its mailTo, each webhook, and the autoresponder.
func (f *Forms) senders(cfg *config.Config, id string) ([]notify.Sender, error) {
	d := cfg.Forms.FindDeclared(id)
	if d == nil {
		return nil, nil
	}
	var out []notify.Sender
	if n := d.Notify; n != nil {
		if len(n.MailTo) > 0 {
			out = append(out, notify.NewMail(f.mail, config.SMTP{To: n.MailTo, Subject: "[form]"}))
		}
		for i, wh := range n.Webhooks {
			s, err := buildWebhook(wh, fmt.Sprintf("forms.declared[%s].notify.webhooks[%d]", id, i))
			if err != nil {
				return nil, err
			}
			// Each webhook is its own channel in the record of who took a message, so that a retry
			// after one of them failed sends to that one only.
			out = append(out, keyed{Sender: s, key: fmt.Sprintf("webhook.%d", i)})
		}
	}
	if d.Autoresponder != nil {
		out = append(out, notify.NewAutoresponder(f.mail, *d, store.NewAnswerLimit(f.base.rdb, id, notify.AnswerEvery)))
	}
	return out, nil
}

// keyed is a sender recorded under its own key among several of one channel.
type keyed struct {
	notify.Sender
	key string
}

// channelKey is what records that sender s took a message: its channel, or its own key among several.
func channelKey(s notify.Sender) string {
	if k, ok := s.(keyed); ok {
		return k.key
	}
	return s.Channel()
}

// decodeForm turns a declared form's stream entry into the message its channels get, labelled from
// form's declaration (nil when the form is no longer declared: the names stand for the labels).
func decodeForm(msg redis.XMessage, deployment string, form *config.DeclaredForm, link linker) (notify.Message, bool) {
	raw, ok := msg.Values[store.RecordField].(string)
	if !ok {
		return notify.Message{}, false
	}
	var rec store.FormRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec.Form == "" {
		return notify.Message{}, false
	}
	sub := &notify.FormSubmission{ID: rec.Form}
	replyField := ""
	if form != nil {
		sub.Title = form.Title
		if form.Autoresponder != nil {
			replyField = form.Autoresponder.ResponderField(*form)
		}
	}
	m := notify.Message{ID: store.MessageID(msg), Deployment: deployment, ReceivedAt: rec.ReceivedAt, Origin: rec.Origin, Form: sub}
	for _, v := range rec.Fields {
		label := v.Name
		if form != nil {
			for _, fd := range form.Fields {
				if fd.Name == v.Name {
					label = fd.DisplayLabel()
					if fd.Type == config.FieldEmail && m.Email == "" && (replyField == "" || replyField == fd.Name) {
						m.Email, _ = v.Value.(string)
					}
				}
			}
		}
		if v.Name == "name" {
			m.Name, _ = v.Value.(string)
		}
		sub.Fields = append(sub.Fields, notify.FormField{Name: v.Name, Label: label, Value: v.Value})
	}
	sub.Fields = append(sub.Fields, fileFields(rec.Files, form, link)...)
	for _, v := range rec.Additional {
		sub.Fields = append(sub.Fields, notify.FormField{Name: v.Name, Label: v.Name, Value: v.Value})
	}
	if m.ReceivedAt.IsZero() {
		m.ReceivedAt = store.StreamTime(m.ID)
	}
	return m, true
}
