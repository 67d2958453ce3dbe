// Package manage is what can be done with the forms' stored data whatever the door (docs/architecture.md
// D63): the forms with their counts; a form's submissions, listed with filters a page at a time, read one
// by one, exported as a stream; the waitlist's entries with their opt-in state; the dead letters. And the
// operators' changes — erase a submission, release one from the spam folder or mark one as spam, retry or
// discard a dead letter, erase an address everywhere (forget), export — each recorded with who made it
// (Actor). The doors are the CLI (`formsservice export`, `forget`, `spam`, `deliveries`) and the admin API
// (services/auth/admin, served by the auth service on the same store). It needs Redis and nothing of
// HTTP, of the forms service's configuration (the declared forms are read from the catalogue the forms
// service publishes in the store) or of the provider.
package manage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// Actor is who makes a change, as the audit trail names it.
type Actor struct {
	// Name is "cli" or "admin" (the audit trail's actors).
	Name string
	// Client is the OAuth client the admin API was called with ("" for the CLI).
	Client string
	// Detail says who within the door: the CLI's operating-system user (osUser), the admin API's token
	// subject (actorSub). Every event of the change carries it.
	Detail map[string]string
}

// Change is one recorded change: its kind and its detail (identifiers and counts, never an address or a
// field's value).
type Change struct {
	Kind   string
	Detail map[string]string
}

// The kinds of the changes, as the audit trail names them (services/auth/audit declares each; a test
// holds the two lists equal).
const (
	SubmissionDeleted   = "form.submission_deleted"
	SpamReleased        = "form.spam_released"
	SpamMarked          = "form.spam_marked"
	DeadLetterRetried   = "form.dead_letter_retried"
	DeadLetterDiscarded = "form.dead_letter_discarded"
	Exported            = "form.exported"
	AddressErased       = "form.address_erased"
	FileLinkMade        = "form.file_link_made"
)

// Kinds lists every kind of change.
var Kinds = []string{SubmissionDeleted, SpamReleased, SpamMarked, DeadLetterRetried, DeadLetterDiscarded, Exported, AddressErased, FileLinkMade}

// ErrUnavailable wraps the store's failures: the request was fine, the store did not answer.
var ErrUnavailable = storeerr.Unavailable("forms store unavailable")

// Options are the operations' dependencies.
type Options struct {
	Redis redis.UniversalClient
	// Audit records a change (the door's audit trail); nil records nothing.
	Audit func(context.Context, Actor, Change)
}

// Ops are the reads, and the changes made as an Actor (As).
type Ops struct {
	rdb   redis.UniversalClient
	audit func(context.Context, Actor, Change)
}

// New returns the operations on the store of o.Redis.
func New(o Options) *Ops {
	if o.Audit == nil {
		o.Audit = func(context.Context, Actor, Change) {}
	}
	return &Ops{rdb: o.Redis, audit: o.Audit}
}

// Operator is the changes, made as one Actor.
type Operator struct {
	o  *Ops
	by Actor
}

// As returns the changes made as by.
func (o *Ops) As(by Actor) Operator { return Operator{o: o, by: by} }

// Ops are the reads the operator's changes are made beside.
func (op Operator) Ops() *Ops { return op.o }

// record writes a change to the trail, with the actor's detail.
func (op Operator) record(ctx context.Context, kind string, detail map[string]string) {
	d := maps.Clone(op.by.Detail)
	if d == nil {
		d = map[string]string{}
	}
	maps.Copy(d, detail)
	op.o.audit(context.WithoutCancel(ctx), op.by, Change{Kind: kind, Detail: d})
}

// FieldError is a query the operations refuse: the field (a query parameter's name) and what is wrong.
type FieldError struct{ Field, Problem string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// failed passes on what the caller can act on (a known refusal, a record that is not JSON) and wraps
// everything else as the store's failure.
func failed(err error) error {
	var field *FieldError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil, errors.Is(err, ErrUnavailable), errors.As(err, &field), errors.As(err, &syntax), errors.As(err, &typ),
		errors.Is(err, ErrUnknownForm), errors.Is(err, ErrNotSubmissions), errors.Is(err, store.ErrNoSuchSubmission),
		errors.Is(err, store.ErrNotInFolder), errors.Is(err, store.ErrInFolder), errors.Is(err, store.ErrNoSuchDeadLetter),
		errors.Is(err, errWriter):
		return err
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// errWriter marks a failure to write an export (the reader went away): not the store's.
var errWriter = errors.New("writing the export")
