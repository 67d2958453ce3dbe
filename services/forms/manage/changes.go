package manage

import (
	"context"
	"strconv"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/email"
)

// The operators' changes. Each records one event per thing changed, naming the form and the
// submission's ID (never a field's value: the ID is what export, the webhook and the dead letters name
// it by), once the change is made.

// DeleteSubmission erases the submission id of form as `forget` erases what holds an address: its entry,
// its delivery state, its dead letters, its unique value (form.submission_deleted). folder "" takes it
// from either folder, store.FolderSpam only from the spam folder. It returns the folder it was in.
func (op Operator) DeleteSubmission(ctx context.Context, form, id, folder string) (string, error) {
	q, err := op.o.queueOf(ctx, form)
	if err != nil {
		return "", err
	}
	at, err := store.EraseSubmission(ctx, op.o.rdb, q, id, folder)
	if err != nil {
		return "", failed(err)
	}
	op.record(ctx, SubmissionDeleted, map[string]string{"form": form, "id": id, "folder": at.Folder})
	return at.Folder, nil
}

// Release hands the submission id of form's spam folder to delivery: delivered once, under its ID
// (form.spam_released). store.ErrNotInFolder when it is in the inbox (released already, or never spam),
// store.ErrNoSuchSubmission when it is nowhere.
func (op Operator) Release(ctx context.Context, form, id string) error {
	q, err := op.o.queueOf(ctx, form)
	if err != nil {
		return err
	}
	if _, err := store.Locate(ctx, op.o.rdb, q, id); err != nil {
		return failed(err)
	}
	if err := store.ReleaseSpam(ctx, op.o.rdb, q, id); err != nil {
		return failed(err)
	}
	op.record(ctx, SpamReleased, map[string]string{"form": form, "id": id})
	return nil
}

// MarkSpam moves the submission id of form's inbox to its spam folder: not delivered any more if it was
// not yet, its dead letters gone, released again under its ID (form.spam_marked). store.ErrInFolder when
// it is spam already.
func (op Operator) MarkSpam(ctx context.Context, form, id string) error {
	q, err := op.o.queueOf(ctx, form)
	if err != nil {
		return err
	}
	if err := store.MarkSpam(ctx, op.o.rdb, q, id); err != nil {
		return failed(err)
	}
	op.record(ctx, SpamMarked, map[string]string{"form": form, "id": id})
	return nil
}

// RetryDeadLetters hands form's dead letters named by ids (their submissions' IDs; all when ids is
// empty) back to delivery, every channel again, each under its ID (form.dead_letter_retried, one per
// dead letter). It returns the IDs handed back; store.ErrNoSuchDeadLetter names an ID that is none.
func (op Operator) RetryDeadLetters(ctx context.Context, form string, ids []string) ([]string, error) {
	q, err := op.o.queueOf(ctx, form)
	if err != nil {
		return nil, err
	}
	done, err := q.RetryDeadLetters(ctx, op.o.rdb, ids)
	for _, id := range done {
		op.record(ctx, DeadLetterRetried, map[string]string{"form": form, "id": id})
	}
	return done, failed(err)
}

// DiscardDeadLetters deletes form's dead letters named by ids (all when ids is empty): the submissions
// stay stored until retention or erasure (form.dead_letter_discarded, one per dead letter).
func (op Operator) DiscardDeadLetters(ctx context.Context, form string, ids []string) ([]string, error) {
	q, err := op.o.queueOf(ctx, form)
	if err != nil {
		return nil, err
	}
	done, err := q.DropDeadLetters(ctx, op.o.rdb, ids)
	for _, id := range done {
		op.record(ctx, DeadLetterDiscarded, map[string]string{"form": form, "id": id})
	}
	return done, failed(err)
}

// Erase erases an address (compared in its canonical form) from every form: the waitlist entry and its
// queued confirmation mails, the contact messages, every declared form's submissions, their dead letters
// and spam (store.Forget; a GDPR erasure request). It is recorded as form.address_erased with what it
// erased, counted, and never the address: the trail must not keep what was erased.
func (op Operator) Erase(ctx context.Context, address string) (store.ForgetReport, error) {
	if _, ok := email.Canonical(address); !ok {
		return store.ForgetReport{}, &FieldError{"email", "not a valid e-mail address"}
	}
	rep, err := store.Forget(ctx, op.o.rdb, address)
	forms := 0
	for _, ids := range rep.FormSubmissions {
		forms += len(ids)
	}
	op.record(ctx, AddressErased, map[string]string{
		"waitlist": strconv.Itoa(rep.WaitlistEntries), "contact": strconv.Itoa(len(rep.ContactMessages)), "forms": strconv.Itoa(forms),
		"deadLetters": strconv.Itoa(rep.DeadLetters + rep.FormDeadLetters), "spam": strconv.Itoa(rep.Spam),
		"confirmationMails": strconv.Itoa(rep.ConfirmationMails), "complete": strconv.FormatBool(err == nil)})
	return rep, failed(err)
}
