// Package admin is the area of the provider's admin API, /admin/v1/…: a resource server of the provider
// itself, whose every route but its description is behind package bearer's check (the audience
// <issuer>/admin, the route's scope, a live grant, and for a person the admin group; docs/architecture.md
// D50). Its resources (D59): who called (whoami), the accounts (users, their sessions and grants, and the
// operators' changes, made by package accounts' Operator as the CLI makes them), the audit trail and the
// registered OAuth clients; and the forms' data (D63: forms, submissions, dead letters, the waitlist,
// erasure), on the forms' store through package services/forms/manage, as the CLI's forms commands. Every answer is JSON, every refusal an RFC 9457 problem, and every route is
// described by the OpenAPI 3.1 document openapi.yaml, served at GET /admin/v1/openapi.yaml.
package admin

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/bearer"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/forms/manage"
)

// Prefix is the path every route of the API is under.
const Prefix = "/admin/v1"

// Sessions lists a user's sign-in sessions (sso.Store).
type Sessions interface {
	List(ctx context.Context, userID string) ([]sso.Info, error)
}

// Grants lists a user's grants (store.Store).
type Grants interface {
	Grants(ctx context.Context, subject string) ([]store.Grant, error)
}

// Trail pages through the audit trail (audit.Store).
type Trail interface {
	Page(ctx context.Context, f audit.Filter, after *audit.Cursor, limit int) ([]audit.Entry, *audit.Cursor, error)
}

// Options are the area's dependencies.
type Options struct {
	Bearer   *bearer.Checker
	Realm    *realm.Source
	Users    *users.Store
	Accounts *accounts.Ops
	Sessions Sessions
	Grants   Grants
	Trail    Trail
	// Forms are the forms' data on the same store (forms.go, D63).
	Forms *manage.Ops
	Log   *slog.Logger // default: discard
}

// Handler serves the admin API: one handler per route, each named for what it does (routes.go mounts
// them).
type Handler struct {
	o Options

	Whoami  http.HandlerFunc // GET /admin/v1/whoami: the caller's principal (any admin scope)
	OpenAPI http.HandlerFunc // GET /admin/v1/openapi.yaml: the API's description (no token)

	Users            http.HandlerFunc // GET /admin/v1/users
	User             http.HandlerFunc // GET /admin/v1/users/{id}
	CreateUser       http.HandlerFunc // POST /admin/v1/users
	DisableUser      http.HandlerFunc // POST /admin/v1/users/{id}/disable
	EnableUser       http.HandlerFunc // POST /admin/v1/users/{id}/enable
	SetGroups        http.HandlerFunc // PUT /admin/v1/users/{id}/groups
	ResetMFA         http.HandlerFunc // DELETE /admin/v1/users/{id}/mfa
	UserFactors      http.HandlerFunc // GET /admin/v1/users/{id}/factors
	RemovePasskey    http.HandlerFunc // DELETE /admin/v1/users/{id}/passkeys/{passkey}
	SendVerification http.HandlerFunc // POST /admin/v1/users/{id}/verification
	SignOut          http.HandlerFunc // POST /admin/v1/users/{id}/sign-out
	DeleteUser       http.HandlerFunc // DELETE /admin/v1/users/{id}
	UserSessions     http.HandlerFunc // GET /admin/v1/users/{id}/sessions
	UserGrants       http.HandlerFunc // GET /admin/v1/users/{id}/grants

	Audit   http.HandlerFunc // GET /admin/v1/audit
	Clients http.HandlerFunc // GET /admin/v1/clients
	Client  http.HandlerFunc // GET /admin/v1/clients/{id}

	// The forms' resources (forms.go, forms_export.go).
	Forms             http.HandlerFunc // GET /admin/v1/forms
	Form              http.HandlerFunc // GET /admin/v1/forms/{form}
	Submissions       http.HandlerFunc // GET /admin/v1/forms/{form}/submissions
	ExportSubmissions fiber.Handler    // GET /admin/v1/forms/{form}/submissions/export (streamed)
	Submission        http.HandlerFunc // GET /admin/v1/forms/{form}/submissions/{id}
	DeleteSubmission  http.HandlerFunc // DELETE /admin/v1/forms/{form}/submissions/{id}
	ReleaseSubmission http.HandlerFunc // POST /admin/v1/forms/{form}/submissions/{id}/release
	MarkSpam          http.HandlerFunc // POST /admin/v1/forms/{form}/submissions/{id}/spam
	FileLink          http.HandlerFunc // POST /admin/v1/forms/{form}/submissions/{id}/files/{file}/link
	DeadLetters       http.HandlerFunc // GET /admin/v1/forms/{form}/dead-letters
	RetryDeadLetter   http.HandlerFunc // POST /admin/v1/forms/{form}/dead-letters/{id}/retry
	DiscardDeadLetter http.HandlerFunc // DELETE /admin/v1/forms/{form}/dead-letters/{id}
	Waitlist          http.HandlerFunc // GET /admin/v1/waitlist/entries
	ExportWaitlist    fiber.Handler    // GET /admin/v1/waitlist/entries/export (streamed)
	Erase             http.HandlerFunc // POST /admin/v1/erasures
}

// The scopes each kind of route needs (D50, D59). The clients are read with either scope of the areas
// that name them (a grant's client, an event's client).
var (
	usersRead   = bearer.Need{AnyScope: []string{bearer.UsersRead}}
	usersWrite  = bearer.Need{AnyScope: []string{bearer.UsersWrite}}
	auditRead   = bearer.Need{AnyScope: []string{bearer.AuditRead}}
	clientsRead = bearer.Need{AnyScope: []string{bearer.UsersRead, bearer.AuditRead}}
	anyAdmin    = bearer.Need{AnyScope: bearer.AdminScopes}
)

// New builds the area.
func New(o Options) *Handler {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{o: o}
	guard := func(need bearer.Need, fn func(http.ResponseWriter, *http.Request, bearer.Principal)) http.HandlerFunc {
		return o.Bearer.Handle(need, fn).ServeHTTP
	}
	h.Whoami = guard(anyAdmin, whoami)
	h.OpenAPI = serveDocument
	h.Users = guard(usersRead, h.listUsers)
	h.User = guard(usersRead, h.getUser)
	h.CreateUser = guard(usersWrite, h.createUser)
	h.DisableUser = guard(usersWrite, h.disableUser)
	h.EnableUser = guard(usersWrite, h.enableUser)
	h.SetGroups = guard(usersWrite, h.setGroups)
	h.ResetMFA = guard(usersWrite, h.resetMFA)
	h.UserFactors = guard(usersRead, h.userFactors)
	h.RemovePasskey = guard(usersWrite, h.removePasskey)
	h.SendVerification = guard(usersWrite, h.sendVerification)
	h.SignOut = guard(usersWrite, h.signOut)
	h.DeleteUser = guard(usersWrite, h.deleteUser)
	h.UserSessions = guard(usersRead, h.userSessions)
	h.UserGrants = guard(usersRead, h.userGrants)
	h.Audit = guard(auditRead, h.listAudit)
	h.Clients = guard(clientsRead, h.listClients)
	h.Client = guard(clientsRead, h.getClient)
	h.Forms = guard(formsRead, h.listForms)
	h.Form = guard(formsRead, h.getForm)
	h.Submissions = guard(formsRead, h.listSubmissions)
	h.ExportSubmissions = h.streamExport(h.exportSubmissions)
	h.Submission = guard(formsRead, h.getSubmission)
	h.DeleteSubmission = guard(formsWrite, h.deleteSubmission)
	h.ReleaseSubmission = guard(formsWrite, h.moveSubmission)
	h.MarkSpam = guard(formsWrite, h.moveSubmission)
	h.FileLink = guard(formsRead, h.fileLink)
	h.DeadLetters = guard(formsRead, h.listDeadLetters)
	h.RetryDeadLetter = guard(formsWrite, h.retryDeadLetter)
	h.DiscardDeadLetter = guard(formsWrite, h.discardDeadLetter)
	h.Waitlist = guard(formsRead, h.listWaitlist)
	h.ExportWaitlist = h.streamExport(h.exportWaitlist)
	h.Erase = guard(formsWrite, h.eraseAddress)
	return h
}

// whoami answers the principal as JSON: subject, client, scopes, whether it is a machine, a person's
// groups.
func whoami(w http.ResponseWriter, _ *http.Request, p bearer.Principal) {
	writeJSON(w, http.StatusOK, p)
}

// operator is the account operations made as the caller: the audit trail names the API, the token's
// client and its subject.
func (h *Handler) operator(p bearer.Principal) accounts.Operator {
	return h.o.Accounts.As(accounts.Actor{Name: audit.ActorAdmin, Client: p.ClientID, Detail: map[string]string{audit.DetailActorSub: p.Subject}})
}

// writeJSON answers v with status, never to be stored (it is about accounts).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
