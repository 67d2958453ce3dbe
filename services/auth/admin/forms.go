package admin

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/bearer"
	"github.com/formsservice/formsservice/services/forms/manage"
	"github.com/formsservice/formsservice/services/forms/store"
)

// The forms' resources (docs/architecture.md D63): the forms with their counts, a form's submissions
// (listed with filters a page at a time, one by one, erased, released from the spam folder, marked as
// spam, exported as a stream: forms_export.go), its dead letters (listed, retried, discarded), the
// waitlist's entries with their opt-in state, and the erasure of an address everywhere. The auth
// service serves them on the forms' store (the same Redis), through package manage, which the CLI's
// forms commands call too; the declared forms are read from the catalogue the forms service publishes
// there.

// formsRead and formsWrite are the scopes of the forms' routes (D50).
var (
	formsRead  = bearer.Need{AnyScope: []string{bearer.FormsRead}}
	formsWrite = bearer.Need{AnyScope: []string{bearer.FormsWrite}}
)

// FormsAudit records the forms' changes made through the admin API in the provider's audit trail:
// the change's kind and detail, the API as actor, the token's client and subject.
func FormsAudit(record func(context.Context, audit.Event)) func(context.Context, manage.Actor, manage.Change) {
	return func(ctx context.Context, by manage.Actor, c manage.Change) {
		record(ctx, audit.Event{Kind: audit.Kind(c.Kind), Outcome: audit.Success, Actor: by.Name, Client: by.Client, Detail: c.Detail})
	}
}

// formsOperator is the forms' changes made as the caller (as operator is for accounts).
func (h *Handler) formsOperator(p bearer.Principal) manage.Operator {
	return h.o.Forms.As(manage.Actor{Name: audit.ActorAdmin, Client: p.ClientID, Detail: map[string]string{audit.DetailActorSub: p.Subject}})
}

// formsFail answers an error of the forms' operations: a refused query as 400 naming its field, an
// unknown form, submission or dead letter as 404, a state that refuses the change as 409, the rest as
// fail does.
func (h *Handler) formsFail(w http.ResponseWriter, r *http.Request, err error) {
	var field *manage.FieldError
	switch {
	case errors.As(err, &field):
		badRequest(w, field.Field, field.Problem)
	case errors.Is(err, manage.ErrUnknownForm):
		problem(w, http.StatusNotFound, "No such form.", nil)
	case errors.Is(err, manage.ErrNotSubmissions):
		problem(w, http.StatusNotFound, "The waitlist keeps entries, not submissions: "+Prefix+"/waitlist/entries.", nil)
	case errors.Is(err, store.ErrNoSuchSubmission):
		problem(w, http.StatusNotFound, "No such submission.", nil)
	case errors.Is(err, store.ErrNoSuchDeadLetter):
		problem(w, http.StatusNotFound, "No such dead letter.", nil)
	case errors.Is(err, store.ErrNotInFolder):
		problem(w, http.StatusConflict, "The submission is not in the spam folder (released already, or never spam).", nil)
	case errors.Is(err, store.ErrInFolder):
		problem(w, http.StatusConflict, "The submission is in the spam folder already.", nil)
	default:
		h.fail(w, r, err)
	}
}

// Opaque cursors: a submissions listing's is the form, the folder and the last entry examined; a dead
// letters listing's the form and the last dead letter; the waitlist's the last entry's place and address.
const (
	submissionsCursorPrefix = "s1:"
	deadCursorPrefix        = "d1:"
	waitlistCursorPrefix    = "w1:"
)

func encodeCursor(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// decodeCursor is the cursor's text after prefix, or false when it is not a cursor of that kind.
func decodeCursor(c, prefix string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return strings.CutPrefix(string(b), prefix)
}

// formOf is the form the path names (/admin/v1/forms/{form}/…).
func formOf(r *http.Request) string { return segment(r, 1) }

// submissionID is the submission (or dead letter) the path names, segment i: 400 naming id when it is
// not one.
func submissionID(w http.ResponseWriter, r *http.Request, i int) (string, bool) {
	id := segment(r, i)
	if !store.ValidStreamID(id) {
		badRequest(w, "id", "not a submission ID (<milliseconds>-<sequence>)")
		return "", false
	}
	return id, true
}

// listForms is GET /admin/v1/forms?days=: every form with its counts, and with days (1 to 366) what
// each kept on each of the last days (the console's chart).
func (h *Handler) listForms(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	var forms []manage.Form
	var published time.Time
	var err error
	if v := r.URL.Query().Get("days"); v != "" {
		days, perr := strconv.Atoi(v)
		if perr != nil || days < 1 || days > manage.MaxDays {
			badRequest(w, "days", "a number of days from 1 to "+strconv.Itoa(manage.MaxDays))
			return
		}
		forms, published, err = h.o.Forms.FormsDaily(r.Context(), days)
	} else {
		forms, published, err = h.o.Forms.Forms(r.Context())
	}
	if err != nil {
		h.formsFail(w, r, err)
		return
	}
	out := struct {
		Forms       []manage.Form `json:"forms"`
		PublishedAt *time.Time    `json:"published_at,omitempty"`
	}{Forms: forms}
	if !published.IsZero() {
		out.PublishedAt = &published
	}
	writeJSON(w, http.StatusOK, out)
}

// getForm is GET /admin/v1/forms/{form}.
func (h *Handler) getForm(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	f, err := h.o.Forms.Form(r.Context(), formOf(r))
	if err != nil {
		h.formsFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// submissionsQuery reads a listing's (or an export's) filters: folder, state, q, since, until. It
// answers 400 naming the parameter (and returns false) when one is refused.
func submissionsQuery(w http.ResponseWriter, r *http.Request) (manage.Query, bool) {
	v := r.URL.Query()
	q := manage.Query{Folder: v.Get("folder"), State: v.Get("state"), Text: strings.TrimSpace(v.Get("q"))}
	if !utf8.ValidString(q.Text) || utf8.RuneCountInString(q.Text) > manage.MaxText {
		badRequest(w, "q", "at most "+strconv.Itoa(manage.MaxText)+" characters of text")
		return q, false
	}
	now := time.Now()
	var err error
	if q.Since, err = audit.ParseTime(v.Get("since"), now); err != nil {
		badRequest(w, "since", err.Error())
		return q, false
	}
	if q.Until, err = audit.ParseTime(v.Get("until"), now); err != nil {
		badRequest(w, "until", err.Error())
		return q, false
	}
	return q, true
}

// listSubmissions is GET /admin/v1/forms/{form}/submissions?folder=&state=&q=&since=&until=&cursor=&limit=:
// the form's submissions, the newest first, a page at a time.
func (h *Handler) listSubmissions(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	form := formOf(r)
	q, ok := submissionsQuery(w, r)
	if !ok {
		return
	}
	if q.Limit, ok = limitOf(w, r); !ok {
		return
	}
	folder := q.Folder
	if folder == "" {
		folder = store.FolderInbox
	}
	if c := r.URL.Query().Get("cursor"); c != "" {
		rest, ok := decodeCursor(c, submissionsCursorPrefix+form+":"+folder+":")
		if !ok || !store.ValidStreamID(rest) {
			badRequest(w, "cursor", "not a cursor of this listing")
			return
		}
		q.Before = rest
	}
	page, err := h.o.Forms.Submissions(r.Context(), form, q)
	if err != nil {
		h.formsFail(w, r, err)
		return
	}
	out := struct {
		Submissions []manage.Submission `json:"submissions"`
		NextCursor  string              `json:"next_cursor,omitempty"`
	}{Submissions: page.Submissions}
	if page.Next != "" {
		out.NextCursor = encodeCursor(submissionsCursorPrefix + form + ":" + folder + ":" + page.Next)
	}
	writeJSON(w, http.StatusOK, out)
}

// getSubmission is GET /admin/v1/forms/{form}/submissions/{id}, in either folder.
func (h *Handler) getSubmission(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	id, ok := submissionID(w, r, 3)
	if !ok {
		return
	}
	s, err := h.o.Forms.Submission(r.Context(), formOf(r), id)
	if err != nil {
		h.formsFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// deleteSubmission is DELETE /admin/v1/forms/{form}/submissions/{id}: the erasure `formsservice forget`
// makes of what holds an address, of this one submission, in either folder.
func (h *Handler) deleteSubmission(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	id, ok := submissionID(w, r, 3)
	if !ok {
		return
	}
	if _, err := h.formsOperator(p).DeleteSubmission(r.Context(), formOf(r), id, ""); err != nil {
		h.formsFail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// moveSubmission is POST /admin/v1/forms/{form}/submissions/{id}/release (out of the spam folder, to
// delivery) and …/spam (into it): the submission as it is then.
func (h *Handler) moveSubmission(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	id, ok := submissionID(w, r, 3)
	if !ok || !decode(w, r, &struct{}{}, true) {
		return
	}
	form, op := formOf(r), h.formsOperator(p)
	var err error
	if segment(r, 4) == "release" {
		err = op.Release(r.Context(), form, id)
	} else {
		err = op.MarkSpam(r.Context(), form, id)
	}
	if err != nil {
		h.formsFail(w, r, err)
		return
	}
	h.getSubmission(w, r, p)
}

// listDeadLetters is GET /admin/v1/forms/{form}/dead-letters?cursor=&limit=: the latest given up first.
func (h *Handler) listDeadLetters(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	form := formOf(r)
	limit, ok := limitOf(w, r)
	if !ok {
		return
	}
	before := ""
	if c := r.URL.Query().Get("cursor"); c != "" {
		if before, ok = decodeCursor(c, deadCursorPrefix+form+":"); !ok || !store.ValidStreamID(before) {
			badRequest(w, "cursor", "not a cursor of this listing")
			return
		}
	}
	dead, next, err := h.o.Forms.DeadLetters(r.Context(), form, before, limit)
	if err != nil {
		h.formsFail(w, r, err)
		return
	}
	out := struct {
		DeadLetters []manage.DeadLetter `json:"dead_letters"`
		NextCursor  string              `json:"next_cursor,omitempty"`
	}{DeadLetters: dead}
	if next != "" {
		out.NextCursor = encodeCursor(deadCursorPrefix + form + ":" + next)
	}
	writeJSON(w, http.StatusOK, out)
}

// retryDeadLetter is POST /admin/v1/forms/{form}/dead-letters/{id}/retry: the submission handed back to
// delivery under its ID, as it is then.
func (h *Handler) retryDeadLetter(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	id, ok := submissionID(w, r, 3)
	if !ok || !decode(w, r, &struct{}{}, true) {
		return
	}
	done, err := h.formsOperator(p).RetryDeadLetters(r.Context(), formOf(r), []string{id})
	if err == nil && len(done) == 0 {
		err = store.ErrNoSuchDeadLetter // retried or discarded by someone else meanwhile
	}
	if err != nil {
		h.formsFail(w, r, err)
		return
	}
	h.getSubmission(w, r, p)
}

// discardDeadLetter is DELETE /admin/v1/forms/{form}/dead-letters/{id}: the dead letter goes, the
// submission stays stored.
func (h *Handler) discardDeadLetter(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	id, ok := submissionID(w, r, 3)
	if !ok {
		return
	}
	done, err := h.formsOperator(p).DiscardDeadLetters(r.Context(), formOf(r), []string{id})
	if err == nil && len(done) == 0 {
		err = store.ErrNoSuchDeadLetter
	}
	if err != nil {
		h.formsFail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listWaitlist is GET /admin/v1/waitlist/entries?state=&q=&cursor=&limit=: the entries with their opt-in
// state, the latest signed up first.
func (h *Handler) listWaitlist(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	v := r.URL.Query()
	q := manage.WaitlistQuery{State: v.Get("state"), Text: strings.TrimSpace(v.Get("q"))}
	if !utf8.ValidString(q.Text) || utf8.RuneCountInString(q.Text) > manage.MaxText {
		badRequest(w, "q", "at most "+strconv.Itoa(manage.MaxText)+" characters of text")
		return
	}
	var ok bool
	if q.Limit, ok = limitOf(w, r); !ok {
		return
	}
	if c := v.Get("cursor"); c != "" {
		rest, ok := decodeCursor(c, waitlistCursorPrefix)
		index, address, cut := strings.Cut(rest, ":")
		n, err := strconv.ParseInt(index, 10, 64)
		if !ok || !cut || err != nil || n < 0 || address == "" {
			badRequest(w, "cursor", "not a cursor of this listing")
			return
		}
		q.Before = &manage.WaitlistPosition{Index: n, Email: address}
	}
	page, err := h.o.Forms.Waitlist(r.Context(), q)
	if err != nil {
		h.formsFail(w, r, err)
		return
	}
	out := struct {
		Entries    []manage.WaitlistEntry `json:"entries"`
		NextCursor string                 `json:"next_cursor,omitempty"`
	}{Entries: page.Entries}
	if n := page.Next; n != nil {
		out.NextCursor = encodeCursor(waitlistCursorPrefix + strconv.FormatInt(n.Index, 10) + ":" + n.Email)
	}
	writeJSON(w, http.StatusOK, out)
}

// eraseAddress is POST /admin/v1/erasures with {"email": …}: the address erased from every form, as
// `formsservice forget` erases it; answers what was erased.
func (h *Handler) eraseAddress(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	var in struct {
		Email string `json:"email"`
	}
	if !decode(w, r, &in, false) {
		return
	}
	if strings.TrimSpace(in.Email) == "" {
		badRequest(w, "email", "required")
		return
	}
	rep, err := h.formsOperator(p).Erase(r.Context(), in.Email)
	if err != nil {
		h.formsFail(w, r, err)
		return
	}
	if rep.FormSubmissions == nil {
		rep.FormSubmissions = map[string][]string{}
	}
	writeJSON(w, http.StatusOK, rep)
}
