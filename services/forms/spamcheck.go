package forms

import (
	"context"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formsservice/formsservice/services/forms/spam"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// spamRules holds a configuration's compiled spam rules by form id ("" for /contact), made on first use.
type spamRules struct{ m sync.Map }

func (r *spamRules) of(forms *config.Forms, form *config.DeclaredForm) *spam.Rules {
	id := ""
	if form != nil {
		id = form.ID
	}
	if got, ok := r.m.Load(id); ok {
		return got.(*spam.Rules)
	}
	got, _ := r.m.LoadOrStore(id, spam.RulesOf(forms.SpamOf(form)))
	return got.(*spam.Rules)
}

// newSpamCounter is formsservice_forms_spam_total.
func newSpamCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_forms_spam_total",
		Help: "Submissions judged spam, by form (contact or a declared form's id) and reason (once per reason the verdict names, and once as reason=\"all\").",
	}, []string{"form", "reason"})
}

// judge gives a submission of form (nil: /contact) its spam verdict (docs/forms.md "Spam"): the form's
// rules over the submission and over how often its content came lately, counted in the store within
// ctx (a failed count is neutral: the store call that follows answers the outage). It counts spam in the
// metric. A form whose spam action is off gets no verdict.
func (s *Service) judge(ctx context.Context, live *liveConfig, form *config.DeclaredForm, sub spam.Submission) store.Verdict {
	settings := live.cfg.Forms.SpamOf(form)
	if settings.ActionOf() == config.SpamOff {
		return store.Verdict{}
	}
	q, name := store.ContactQueue, "contact"
	if form != nil {
		q, name = store.FormQueue(form.ID), form.ID
	}
	var sig spam.Signals
	if fp := spam.Fingerprint(sub.Text); fp != "" {
		if n, err := store.CountContent(ctx, s.rdb, q, fp); err == nil {
			sig.Seen = n
		}
	}
	v := live.spam.of(&live.cfg.Forms, form).Score(sub, sig)
	if !v.Spam {
		return store.Verdict{Score: v.Score, Reasons: v.Reasons}
	}
	s.m.spam.WithLabelValues(name, "all").Inc()
	for _, r := range v.Reasons {
		s.m.spam.WithLabelValues(name, r).Inc()
	}
	return store.Verdict{Spam: true, Refuse: settings.ActionOf() == config.SpamRefuse, Score: v.Score, Reasons: v.Reasons}
}

// contactSpam is what the scorer reads of a contact message.
func contactSpam(msg Contact, client netip.Addr) spam.Submission {
	return spam.Submission{Email: msg.Email, Text: []string{msg.Message}, Other: []string{msg.Name, msg.Organization}, Client: client}
}

// declaredSpam is what the scorer reads of a declared form's submission: its first e-mail field, its
// long texts as the message, its other texts and kept fields beside them.
func declaredSpam(form *config.DeclaredForm, fields, additional store.Values, client netip.Addr) spam.Submission {
	sub := spam.Submission{Client: client}
	for _, fd := range form.Fields {
		v, _ := fields.Get(fd.Name).(string)
		switch {
		case v == "":
		case fd.Type == config.FieldEmail && sub.Email == "":
			sub.Email = v
		case fd.Type == config.FieldLongText:
			sub.Text = append(sub.Text, v)
		case fd.Type == config.FieldText || fd.Type == config.FieldURL:
			sub.Other = append(sub.Other, v)
		}
	}
	for _, a := range additional {
		if v, ok := a.Value.(string); ok {
			sub.Other = append(sub.Other, v)
		}
	}
	return sub
}
