package admin

import (
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/bearer"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/email"
)

// User is an account as the API shows it: never its password hash.
type User struct {
	ID                 string    `json:"id"`
	Email              string    `json:"email"`
	Name               string    `json:"name"`
	CreatedAt          time.Time `json:"created_at"`
	EmailVerified      bool      `json:"email_verified"`
	Disabled           bool      `json:"disabled"`
	Groups             []string  `json:"groups"`
	SelfSignup         bool      `json:"self_signup"`
	MustChangePassword bool      `json:"must_change_password"`
}

func userOf(u *users.User) User {
	return User{ID: u.ID, Email: u.Email, Name: u.Name, CreatedAt: u.CreatedAt, EmailVerified: u.EmailVerified, Disabled: u.Disabled,
		Groups: append([]string{}, u.Groups...), SelfSignup: u.SelfSignup, MustChangePassword: u.MustChangePassword}
}

// Page sizes of the listings.
const (
	defaultLimit = 50
	maxLimit     = 200
)

// limitOf reads the limit query parameter: 1 to maxLimit, defaultLimit when absent.
func limitOf(w http.ResponseWriter, r *http.Request) (int, bool) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return defaultLimit, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxLimit {
		badRequest(w, "limit", "an integer from 1 to "+strconv.Itoa(maxLimit))
		return 0, false
	}
	return n, true
}

// The users listing's cursor is the last address of the page before, opaque to the caller.
const usersCursorPrefix = "u1:"

func usersCursor(email string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(usersCursorPrefix + email))
}

func usersAfter(cursor string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", false
	}
	after, ok := strings.CutPrefix(string(b), usersCursorPrefix)
	return after, ok && after != "" && utf8.ValidString(after) && len(after) <= email.MaxLen
}

// listUsers is GET /admin/v1/users?q=&cursor=&limit=: the accounts whose address contains q, in the
// order of their addresses, a page at a time.
func (h *Handler) listUsers(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	q := r.URL.Query()
	search := strings.TrimSpace(q.Get("q"))
	if utf8.RuneCountInString(search) > email.MaxLen || !utf8.ValidString(search) {
		badRequest(w, "q", "at most "+strconv.Itoa(email.MaxLen)+" characters of text")
		return
	}
	limit, ok := limitOf(w, r)
	if !ok {
		return
	}
	after := ""
	if c := q.Get("cursor"); c != "" {
		if after, ok = usersAfter(c); !ok {
			badRequest(w, "cursor", "not a cursor of this listing")
			return
		}
	}
	found, more, err := h.o.Users.Search(r.Context(), search, after, limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := struct {
		Users      []User `json:"users"`
		NextCursor string `json:"next_cursor,omitempty"`
	}{Users: []User{}}
	for _, u := range found {
		out.Users = append(out.Users, userOf(u))
	}
	if more && len(found) > 0 {
		out.NextCursor = usersCursor(found[len(found)-1].Email)
	}
	writeJSON(w, http.StatusOK, out)
}

// pathUser is the account the path names (/admin/v1/users/{id}/…); it answers 404 (and returns nil)
// when there is none.
func (h *Handler) pathUser(w http.ResponseWriter, r *http.Request) *users.User {
	u, err := h.o.Users.ByID(r.Context(), segment(r, 1))
	if err != nil {
		h.fail(w, r, err)
		return nil
	}
	return u
}

// segment is the path's segment i after /admin/v1/ (users/{id}: 0 is "users", 1 the ID).
func segment(r *http.Request, i int) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, Prefix), "/")
	segs := strings.Split(rest, "/")
	if i < len(segs) {
		return segs[i]
	}
	return ""
}

func (h *Handler) getUser(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	if u := h.pathUser(w, r); u != nil {
		writeJSON(w, http.StatusOK, userOf(u))
	}
}

// newUser is the body of POST /admin/v1/users.
type newUser struct {
	Email    string  `json:"email"`
	Name     string  `json:"name"`
	Password *string `json:"password"`
	// EmailVerified: the operator checked the address (default true: the API creates accounts for
	// addresses its caller knows).
	EmailVerified *bool `json:"email_verified"`
}

// createUser is POST /admin/v1/users: 201 with the account and its Location.
func (h *Handler) createUser(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	var in newUser
	if !decode(w, r, &in, false) {
		return
	}
	switch {
	case strings.TrimSpace(in.Email) == "":
		badRequest(w, "email", "required")
		return
	case utf8.RuneCountInString(strings.TrimSpace(in.Name)) > users.MaxNameLen:
		badRequest(w, "name", "at most "+strconv.Itoa(users.MaxNameLen)+" characters")
		return
	case in.Password != nil && *in.Password == "":
		badRequest(w, "password", "leave it out for none, or give one")
		return
	}
	a := accounts.NewAccount{Email: in.Email, Name: in.Name, Verified: in.EmailVerified == nil || *in.EmailVerified}
	if in.Password != nil {
		a.Password = *in.Password
	}
	u, err := h.operator(p).Create(r.Context(), a)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Location", Prefix+"/users/"+u.ID)
	writeJSON(w, http.StatusCreated, userOf(u))
}

// ended is what a sign-out everywhere ended.
type ended struct {
	GrantsRevoked int `json:"grants_revoked"`
	SessionsEnded int `json:"sessions_ended"`
}

// disableUser is POST /admin/v1/users/{id}/disable: no more sign-ins, and every session and grant ends.
func (h *Handler) disableUser(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	u := h.pathUser(w, r)
	if u == nil || !decode(w, r, &struct{}{}, true) {
		return
	}
	grants, sessions, err := h.operator(p).Disable(r.Context(), u)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		User User `json:"user"`
		ended
	}{userOf(u), ended{grants, sessions}})
}

// enableUser is POST /admin/v1/users/{id}/enable.
func (h *Handler) enableUser(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	u := h.pathUser(w, r)
	if u == nil || !decode(w, r, &struct{}{}, true) {
		return
	}
	if err := h.operator(p).Enable(r.Context(), u); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, userOf(u))
}

// setGroups is PUT /admin/v1/users/{id}/groups with {"groups": [...]}: the account's groups from now on.
func (h *Handler) setGroups(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	u := h.pathUser(w, r)
	var in struct {
		Groups *[]string `json:"groups"`
	}
	if u == nil || !decode(w, r, &in, false) {
		return
	}
	if in.Groups == nil {
		badRequest(w, "groups", "required (an empty array for none)")
		return
	}
	added, removed, err := h.operator(p).SetGroups(r.Context(), u, *in.Groups)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Groups  []string `json:"groups"`
		Added   []string `json:"added"`
		Removed []string `json:"removed"`
	}{append([]string{}, u.Groups...), append([]string{}, added...), append([]string{}, removed...)})
}

// resetMFA is DELETE /admin/v1/users/{id}/mfa: the second factor and its recovery codes removed.
func (h *Handler) resetMFA(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	u := h.pathUser(w, r)
	if u == nil {
		return
	}
	removed, left, err := h.operator(p).ResetMFA(r.Context(), u)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Removed              bool `json:"removed"`
		RecoveryCodesRemoved int  `json:"recovery_codes_removed"`
	}{removed, left})
}

// sendVerification is POST /admin/v1/users/{id}/verification, optionally {"lang": "de"}: the link that
// verifies the address, mailed now.
func (h *Handler) sendVerification(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	u := h.pathUser(w, r)
	var in struct {
		Lang string `json:"lang"`
	}
	if u == nil || !decode(w, r, &in, true) {
		return
	}
	if in.Lang != "" && !slices.Contains(page.Languages, in.Lang) {
		badRequest(w, "lang", "one of "+strings.Join(page.Languages, ", "))
		return
	}
	if err := h.operator(p).SendVerification(r.Context(), u, in.Lang); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// signOut is POST /admin/v1/users/{id}/sign-out: every session and grant of the account ends.
func (h *Handler) signOut(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	u := h.pathUser(w, r)
	if u == nil || !decode(w, r, &struct{}{}, true) {
		return
	}
	grants, sessions, err := h.operator(p).SignOut(r.Context(), u)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ended{grants, sessions})
}

// deleteUser is DELETE /admin/v1/users/{id}: the account and all it holds.
func (h *Handler) deleteUser(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	u := h.pathUser(w, r)
	if u == nil {
		return
	}
	if _, err := h.operator(p).Delete(r.Context(), u); err != nil && !errors.Is(err, accounts.ErrLeftBehind) {
		h.fail(w, r, err)
		return
	} else if err != nil {
		h.o.Log.Warn("admin API: an account was deleted, but not all it held", "user", u.ID, "err", err)
	}
	w.WriteHeader(http.StatusNoContent)
}

// Session is a sign-in session of a browser.
type Session struct {
	ID         string    `json:"id"`
	SignedInAt time.Time `json:"signed_in_at"`
	LastUsedAt time.Time `json:"last_used_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	AMR        []string  `json:"amr"`
	UserAgent  string    `json:"user_agent"`
}

// userSessions is GET /admin/v1/users/{id}/sessions: the live sign-in sessions, the latest used first.
func (h *Handler) userSessions(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	u := h.pathUser(w, r)
	if u == nil {
		return
	}
	list, err := h.o.Sessions.List(r.Context(), u.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := struct {
		Sessions []Session `json:"sessions"`
	}{[]Session{}}
	for _, s := range list {
		out.Sessions = append(out.Sessions, Session{ID: s.ID, SignedInAt: s.AuthTime, LastUsedAt: s.LastUsed, ExpiresAt: s.Ends,
			AMR: append([]string{}, s.AMR...), UserAgent: s.UserAgent})
	}
	writeJSON(w, http.StatusOK, out)
}

// Grant is an app's access: a token family.
type Grant struct {
	ID         string    `json:"id"`
	ClientID   string    `json:"client_id"`
	Scopes     []string  `json:"scopes"`
	SignedInAt time.Time `json:"signed_in_at"`
	LastUsedAt time.Time `json:"last_used_at"`
	Offline    bool      `json:"offline"`
}

// userGrants is GET /admin/v1/users/{id}/grants: the live grants, the latest used first.
func (h *Handler) userGrants(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	u := h.pathUser(w, r)
	if u == nil {
		return
	}
	list, err := h.o.Grants.Grants(r.Context(), u.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := struct {
		Grants []Grant `json:"grants"`
	}{[]Grant{}}
	for _, g := range list {
		out.Grants = append(out.Grants, Grant{ID: g.Family, ClientID: g.ClientID, Scopes: append([]string{}, g.Scopes...), SignedInAt: g.AuthTime,
			LastUsedAt: g.LastUsed, Offline: g.Offline})
	}
	writeJSON(w, http.StatusOK, out)
}
