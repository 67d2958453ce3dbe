package manage

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// ErrUnknownForm says that no form has the id: not a built-in one, not in the catalogue the forms
// service published, and no stored submission names it.
var ErrUnknownForm = errors.New("no such form")

// ErrNotSubmissions says that the form keeps no submissions: the waitlist keeps entries (Waitlist).
var ErrNotSubmissions = errors.New("the waitlist keeps entries, not submissions")

// The kinds of form.
const (
	KindContact  = "contact"
	KindWaitlist = "waitlist"
	KindDeclared = "declared"
)

// Form is a form as the operations show it.
type Form struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Kind is contact or waitlist (the built-in forms) or declared.
	Kind string `json:"kind"`
	// Declared: the forms service serves it now (the built-in forms always; a declared form when the
	// catalogue it published lists it). A form no longer declared still holds what it stored.
	Declared bool                 `json:"declared"`
	Fields   []store.CatalogField `json:"fields"`
	Unique   string               `json:"unique,omitempty"`
	// Notifies (declared forms): it delivers its submissions or answers their senders.
	Notifies  *bool  `json:"notifies,omitempty"`
	Retention string `json:"retention,omitempty"`
	Counts    Counts `json:"counts"`
	// Daily is what the form kept on each of the last days asked for (oldest first, today's last: the
	// store's day, UTC), for a chart; absent unless asked for (FormsDaily).
	Daily []store.DayCount `json:"daily,omitempty"`
}

// MaxDays bounds the days FormsDaily reads: a year and a day.
const MaxDays = 366

// Counts are what a form holds: a form's submissions in its inbox (delivered or not), in its spam folder,
// and its dead letters; the waitlist's entries and how many of them wait for their confirmation.
type Counts struct {
	Submissions *int64 `json:"submissions,omitempty"`
	Spam        *int64 `json:"spam,omitempty"`
	DeadLetters *int64 `json:"dead_letters,omitempty"`
	Entries     *int64 `json:"entries,omitempty"`
	Pending     *int64 `json:"pending,omitempty"`
}

// The built-in forms' fields (docs/forms.md "Requests").
var (
	contactFields = []store.CatalogField{
		{Name: "name", Type: string(config.FieldText), Required: true},
		{Name: "email", Type: string(config.FieldEmail), Required: true},
		{Name: "organization", Type: string(config.FieldText)},
		{Name: "topic", Type: string(config.FieldOneOf), Choices: []string{"general", "sales", "support", "partnership", "press"}},
		{Name: "message", Type: string(config.FieldLongText), Required: true},
	}
	waitlistFields = []store.CatalogField{
		{Name: "email", Type: string(config.FieldEmail), Required: true},
		{Name: "consent", Type: string(config.FieldConsent), Required: true},
		{Name: "name", Type: string(config.FieldText)},
		{Name: "association", Type: string(config.FieldText)},
		{Name: "role", Type: string(config.FieldOneOf), Choices: []string{"admin", "officer", "member", "other"}},
		{Name: "size", Type: string(config.FieldOneOf), Choices: []string{"1–50", "51–250", "251–1,000", "1,000+"}},
	}
)

// catalogue is what is known of the forms: the catalogue the forms service published and the declared
// forms that stored a submission.
type catalogue struct {
	published   store.Catalog
	publishedOK bool
	stored      []string
}

func (o *Ops) catalogue(ctx context.Context) (catalogue, error) {
	var c catalogue
	var err error
	if c.published, c.publishedOK, err = store.ReadCatalog(ctx, o.rdb); err != nil {
		return c, failed(err)
	}
	c.stored, err = store.KnownForms(ctx, o.rdb)
	return c, failed(err)
}

// declared is the catalogue's form id, if it lists one.
func (c catalogue) declared(id string) (store.CatalogForm, bool) {
	for _, f := range c.published.Forms {
		if f.ID == id {
			return f, true
		}
	}
	return store.CatalogForm{}, false
}

// ids are every form's id: the built-in ones, then the declared ones (listed or stored), sorted.
func (c catalogue) ids() []string {
	var declared []string
	for _, f := range c.published.Forms {
		declared = append(declared, f.ID)
	}
	declared = append(declared, c.stored...)
	slices.Sort(declared)
	return append([]string{KindContact, KindWaitlist}, slices.Compact(declared)...)
}

func (c catalogue) knows(id string) bool {
	_, listed := c.declared(id)
	return id == KindContact || id == KindWaitlist || listed || slices.Contains(c.stored, id)
}

// form is the form id as the catalogue knows it, without its counts.
func (c catalogue) form(id string) Form {
	switch id {
	case KindContact:
		return Form{ID: id, Title: "Contact", Kind: KindContact, Declared: true, Fields: contactFields}
	case KindWaitlist:
		return Form{ID: id, Title: "Waitlist", Kind: KindWaitlist, Declared: true, Fields: waitlistFields, Unique: "email"}
	}
	f := Form{ID: id, Title: id, Kind: KindDeclared, Fields: []store.CatalogField{}}
	if d, ok := c.declared(id); ok {
		notifies := d.Notifies
		f.Declared, f.Fields, f.Unique, f.Notifies, f.Retention = true, d.Fields, d.Unique, &notifies, d.Retention
		if d.Title != "" {
			f.Title = d.Title
		}
	}
	return f
}

// Forms lists every form with its counts, and when the forms service last published its declared
// forms (zero when none has).
func (o *Ops) Forms(ctx context.Context) ([]Form, time.Time, error) {
	c, err := o.catalogue(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	var forms []Form
	for _, id := range c.ids() {
		forms = append(forms, c.form(id))
	}
	if err := o.count(ctx, forms, 0); err != nil {
		return nil, time.Time{}, err
	}
	return forms, c.published.PublishedAt, nil
}

// FormsDaily is Forms with each form's counts of the last days (1 to MaxDays), in the same round trip.
func (o *Ops) FormsDaily(ctx context.Context, days int) ([]Form, time.Time, error) {
	c, err := o.catalogue(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	var forms []Form
	for _, id := range c.ids() {
		forms = append(forms, c.form(id))
	}
	if err := o.count(ctx, forms, min(max(days, 1), MaxDays)); err != nil {
		return nil, time.Time{}, err
	}
	return forms, c.published.PublishedAt, nil
}

// Form is one form with its counts.
func (o *Ops) Form(ctx context.Context, id string) (Form, error) {
	c, err := o.catalogue(ctx)
	if err != nil {
		return Form{}, err
	}
	if id != KindWaitlist {
		if _, err := o.queueOf(ctx, id); err != nil {
			return Form{}, err
		}
	}
	forms := []Form{c.form(id)}
	err = o.count(ctx, forms, 0)
	return forms[0], err
}

// count fills in the forms' counts, and with days > 0 their per-day counts, in one round trip (one per
// master of a Cluster).
func (o *Ops) count(ctx context.Context, forms []Form, days int) error {
	pipe := o.rdb.Pipeline()
	var daily []store.DailyCmd
	var storeNow *redis.TimeCmd
	if days > 0 {
		storeNow = pipe.Time(ctx) // the day the counts go by (daily.go)
		for i := range forms {
			daily = append(daily, store.ReadDaily(ctx, pipe, dailyOf(forms[i])))
		}
	}
	type pending struct {
		into *int64
		cmd  *redis.IntCmd
	}
	var cmds []pending
	for i := range forms {
		c := &forms[i].Counts
		if forms[i].Kind == KindWaitlist {
			c.Entries, c.Pending = new(int64), new(int64)
			cmds = append(cmds, pending{c.Entries, pipe.HLen(ctx, store.WaitlistEntries)}, pending{c.Pending, pipe.ZCard(ctx, store.WaitlistPending)})
			continue
		}
		q := queueFor(forms[i].ID)
		c.Submissions, c.Spam, c.DeadLetters = new(int64), new(int64), new(int64)
		cmds = append(cmds, pending{c.Submissions, pipe.XLen(ctx, q.Stream)}, pending{c.Spam, pipe.XLen(ctx, q.Spam)},
			pending{c.DeadLetters, pipe.XLen(ctx, q.DeadLetters)})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return failed(err)
	}
	for _, p := range cmds {
		*p.into = p.cmd.Val()
	}
	for i, d := range daily {
		forms[i].Daily = d.Days(storeNow.Val(), days)
	}
	return nil
}

// dailyOf is where form f's per-day counts are.
func dailyOf(f Form) string {
	switch f.Kind {
	case KindWaitlist:
		return store.WaitlistDaily
	case KindContact:
		return store.ContactDaily
	}
	return store.FormDaily(f.ID)
}

func queueFor(id string) store.Queue {
	if id == KindContact {
		return store.ContactQueue
	}
	return store.FormQueue(id)
}

// queueOf is the queue of form id's submissions: ErrNotSubmissions for the waitlist, ErrUnknownForm for
// a form nothing knows.
func (o *Ops) queueOf(ctx context.Context, id string) (store.Queue, error) {
	switch {
	case id == KindContact:
		return store.ContactQueue, nil
	case id == KindWaitlist:
		return store.Queue{}, ErrNotSubmissions
	case !config.ValidFormID(id):
		return store.Queue{}, ErrUnknownForm
	}
	c, err := o.catalogue(ctx)
	if err != nil {
		return store.Queue{}, err
	}
	q := store.FormQueue(id)
	if c.knows(id) {
		return q, nil
	}
	// Neither declared now nor recorded as storing: a form may still hold something (a spam folder, dead
	// letters) written before the record of the forms that stored was kept.
	n, err := o.rdb.Exists(ctx, q.Stream, q.Spam, q.DeadLetters).Result()
	if err != nil {
		return store.Queue{}, failed(err)
	}
	if n == 0 {
		return store.Queue{}, ErrUnknownForm
	}
	return q, nil
}
