package accounts

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/passwords"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// An operator's changes to accounts (docs/architecture.md D59): one implementation behind two doors, the
// `formsservice users` commands and the admin API (/admin/v1/users). Each change is recorded in the audit
// trail with who made it (Actor), the same kinds and details whichever door it came through.

// Actor is who makes an operator's change, as the audit trail names it.
type Actor struct {
	// Name is audit.ActorCLI or audit.ActorAdmin.
	Name string
	// Client is the OAuth client the admin API was called with ("" for the CLI).
	Client string
	// Detail says who within the door: the OS user of the CLI (osUser), the token's subject of the admin
	// API (audit.DetailActorSub). Every event of the change carries it.
	Detail map[string]string
}

// Operator is the operators' changes, made as one Actor.
type Operator struct {
	o  *Ops
	by Actor
}

// As returns the operators' changes made as by.
func (o *Ops) As(by Actor) Operator { return Operator{o: o, by: by} }

// record writes one event of the change to the trail.
func (op Operator) record(ctx context.Context, kind audit.Kind, userID string, detail map[string]string) {
	d := maps.Clone(op.by.Detail)
	if d == nil && len(detail) > 0 {
		d = map[string]string{}
	}
	maps.Copy(d, detail)
	op.o.audit(ctx, audit.Event{Kind: kind, Outcome: audit.Success, User: userID, Actor: op.by.Name, Client: op.by.Client, Detail: d})
}

// Counts is the detail of a sign-out everywhere: how many grants and sessions ended.
func Counts(grants, sessions int) map[string]string {
	return map[string]string{"grants": strconv.Itoa(grants), "sessions": strconv.Itoa(sessions)}
}

// NewAccount is an account an operator creates.
type NewAccount struct {
	Email, Name string
	// Password is judged by the rules for new passwords (package passwords). Empty: the account gets a
	// random password nobody is told, and its owner chooses one with "Forgot password?" (a reset link
	// to the address), which the operator tells them to use.
	Password string
	// Verified creates the account with its address verified (the operator checked it).
	Verified bool
}

// WeakPasswordError is a new password the rules refuse.
type WeakPasswordError struct{ Reason passwords.Reason }

func (e *WeakPasswordError) Error() string {
	return fmt.Sprintf("password refused (%s): %s", e.Reason, e.Reason.Message())
}

// Create creates an account (user.created; detail verified).
func (op Operator) Create(ctx context.Context, a NewAccount) (*users.User, error) {
	pw := a.Password
	if pw == "" {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		pw = base64.RawURLEncoding.EncodeToString(b)
	} else if weak := passwords.Judge(pw, a.Email, a.Name); weak != passwords.OK {
		return nil, &WeakPasswordError{Reason: weak}
	}
	u, err := op.o.users.Create(ctx, a.Email, a.Name, pw)
	if err != nil {
		return nil, err
	}
	var detail map[string]string
	if a.Verified {
		if err := op.o.users.SetVerified(ctx, u.ID, u.Email); err != nil {
			return u, fmt.Errorf("created %s (id %s), but its address was not marked verified: %w", u.Email, u.ID, err)
		}
		u.EmailVerified = true
		detail = map[string]string{"verified": "true"}
	}
	if a.Password == "" {
		if detail == nil {
			detail = map[string]string{}
		}
		detail["password"] = "none"
	}
	op.record(ctx, audit.UserCreated, u.ID, detail)
	return u, nil
}

// SignOut ends every grant and sign-in session of u (user.signout_everywhere; detail grants, sessions).
func (op Operator) SignOut(ctx context.Context, u *users.User) (grants, sessions int, err error) {
	grants, sessions, err = op.o.SignOutEverywhere(ctx, u.ID)
	if err != nil {
		return grants, sessions, err
	}
	op.record(ctx, audit.SignOutEverywhere, u.ID, Counts(grants, sessions))
	return grants, sessions, nil
}

// Disable refuses u's sign-ins from now on and signs it out everywhere (user.disabled, then
// user.signout_everywhere): its sessions end, its grants are revoked, and a refresh token it holds is
// refused (the token endpoint asks whether its user is disabled too).
func (op Operator) Disable(ctx context.Context, u *users.User) (grants, sessions int, err error) {
	if _, err := op.o.users.SetDisabled(ctx, u.Email, true); err != nil {
		return 0, 0, err
	}
	u.Disabled = true
	op.record(ctx, audit.UserDisabled, u.ID, nil)
	return op.SignOut(ctx, u)
}

// Enable lets a disabled u sign in again (user.enabled).
func (op Operator) Enable(ctx context.Context, u *users.User) error {
	if _, err := op.o.users.SetDisabled(ctx, u.Email, false); err != nil {
		return err
	}
	u.Disabled = false
	op.record(ctx, audit.UserEnabled, u.ID, nil)
	return nil
}

// AddGroups makes u a member of groups (user.group_added per group added); u's groups are updated.
func (op Operator) AddGroups(ctx context.Context, u *users.User, groups []string) (added []string, err error) {
	after, added, err := op.o.users.AddGroups(ctx, u.Email, groups)
	if err != nil {
		return nil, err
	}
	op.groupsChanged(ctx, u, after, added, nil)
	return added, nil
}

// RemoveGroups takes u out of groups (user.group_removed per group removed); u's groups are updated.
func (op Operator) RemoveGroups(ctx context.Context, u *users.User, groups []string) (removed []string, err error) {
	after, removed, err := op.o.users.RemoveGroups(ctx, u.Email, groups)
	if err != nil {
		return nil, err
	}
	op.groupsChanged(ctx, u, after, nil, removed)
	return removed, nil
}

// SetGroups makes groups u's groups, in one step (an event per group added or removed).
func (op Operator) SetGroups(ctx context.Context, u *users.User, groups []string) (added, removed []string, err error) {
	after, added, removed, err := op.o.users.SetGroups(ctx, u.Email, groups)
	if err != nil {
		return nil, nil, err
	}
	op.groupsChanged(ctx, u, after, added, removed)
	return added, removed, nil
}

func (op Operator) groupsChanged(ctx context.Context, u, after *users.User, added, removed []string) {
	u.Groups = after.Groups
	for _, g := range added {
		op.record(ctx, audit.GroupAdded, u.ID, map[string]string{"group": g})
	}
	for _, g := range removed {
		op.record(ctx, audit.GroupRemoved, u.ID, map[string]string{"group": g})
	}
}

// ResetMFA removes u's second factor and its recovery codes, for a person who lost both (ASVS 2.5.7;
// user.mfa_reset, detail recoveryLeft). It reports false, and records nothing, when u had none.
func (op Operator) ResetMFA(ctx context.Context, u *users.User) (removed bool, recoveryLeft int, err error) {
	factors := mfa.NewStore(op.o.rdb, mfa.Sealer{}, op.o.now) // removing needs no key: nothing is opened
	st, err := factors.Status(ctx, u.ID)
	if err != nil {
		return false, 0, err
	}
	if !st.TOTP && st.RecoveryLeft == 0 {
		return false, 0, nil
	}
	if err := factors.Remove(ctx, u.ID); err != nil {
		return false, 0, err
	}
	op.record(ctx, audit.UserMFAReset, u.ID, map[string]string{"recoveryLeft": strconv.Itoa(st.RecoveryLeft)})
	return true, st.RecoveryLeft, nil
}

// SendVerification mails u the link that verifies its address, as a sign-up does
// (email.verification_sent, detail trigger: the actor's name). It refuses a disabled account
// (users.ErrDisabled) and a verified one (ErrAlreadyVerified). lang is one of page.Languages (English
// when not). Without a mail relay nothing is sent and mail.ErrNoRelay returned.
func (op Operator) SendVerification(ctx context.Context, u *users.User, lang string) error {
	switch {
	case u.Disabled:
		return users.ErrDisabled
	case u.EmailVerified:
		return ErrAlreadyVerified
	}
	if op.o.mail.Mail == nil {
		return mail.ErrNoRelay
	}
	href, err := op.o.VerificationLink(ctx, u, "")
	if err != nil {
		return err
	}
	valid := op.o.auth().VerificationLinkLifetime.D()
	m, err := op.o.linkMail(verifyMail, page.Match(lang, ""), u, "", href, valid)
	if err != nil {
		return err
	}
	// Sent now, through the relay in force, and without a relay an error (mail.ErrNoRelay): an
	// operator asked for this mail and is told that it was not sent.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := op.o.mail.Mail.Send(ctx, m); err != nil {
		return err
	}
	op.record(ctx, audit.VerificationSent, u.ID, map[string]string{"trigger": op.by.Name})
	return nil
}

// Delete deletes u (user.deleted), then what it leaves behind: its grants and sessions, its passkeys,
// its second factor. Once the record is gone nothing of that signs anyone in, so a failure after it is
// reported but the account stays deleted.
func (op Operator) Delete(ctx context.Context, u *users.User) (grants int, err error) {
	deleted, err := op.o.users.Delete(ctx, u.Email)
	if err != nil {
		return 0, err
	}
	if deleted.ID != u.ID {
		// The address was taken by another account between the caller's read and this one: it is that
		// account that is gone now. Say so rather than report u deleted.
		op.record(ctx, audit.UserDeleted, deleted.ID, nil)
		return 0, fmt.Errorf("accounts: %s named another account (%s) when it was deleted: %w", u.Email, deleted.ID, users.ErrNotFound)
	}
	op.record(ctx, audit.UserDeleted, u.ID, nil)
	return op.forget(ctx, u.ID)
}

// forget ends what a deleted account leaves behind.
func (op Operator) forget(ctx context.Context, id string) (grants int, err error) {
	grants, _, err = op.o.SignOutEverywhere(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("%w: revoking its tokens failed (they stop working anyway, since the user is gone): %w", ErrLeftBehind, err)
	}
	if err := passkey.NewStore(op.o.rdb, nil).RemoveAll(ctx, id); err != nil {
		return grants, fmt.Errorf("%w: removing its passkeys failed (they sign nobody in, since the user is gone): %w", ErrLeftBehind, err)
	}
	if err := mfa.NewStore(op.o.rdb, mfa.Sealer{}, nil).Forget(ctx, id); err != nil {
		return grants, fmt.Errorf("%w: its second factor was not erased: %w", ErrLeftBehind, err)
	}
	return grants, nil
}

// ErrLeftBehind: an account was deleted, but something it held was not removed after it.
var ErrLeftBehind = errors.New("the account was deleted, but not all it held")
