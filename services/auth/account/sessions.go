package account

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// EndSession is POST /account/sessions/end: a browser of the user signed out, and the grants started in
// it revoked, as at logout. Ending this browser's own session signs it out.
func (h *Handler) EndSession(w http.ResponseWriter, r *http.Request, _ string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	u, sess, ok := h.accountForm(w, r, rt)
	if !ok {
		return
	}
	id := r.PostForm.Get("session")
	var upstream *federation.SessionLogout // this browser's SAML sign-in, for single logout (D89)
	if id == sess.ID {
		var err error
		if upstream, err = h.federation.LogoutOf(ctx, id); err != nil {
			h.log.Warn("account sign-out: the single-logout record cannot be read; the IdP's session stays", "err", err)
		}
	}
	families, found, err := h.endSession(ctx, rt, u, id)
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	if found {
		h.signOn.Revoked("logout", len(families))
		h.accountEvent(ctx, audit.SessionEnded, u, map[string]string{"current": strconv.FormatBool(id == sess.ID), "grants": strconv.Itoa(len(families))})
	}
	if id == sess.ID {
		web.SetCookie(w, rt, web.SessionCookie, "", -1)
		if upstream != nil { // the IdP ends its session too, and its answer shows our signed-out page
			to, err := h.federation.SingleLogout(ctx, rt, upstream, "")
			if err != nil {
				h.log.Warn("account sign-out: no LogoutRequest to the SAML IdP; its session stays", "connector", upstream.Connector, "err", err)
			}
			if to != "" {
				w.Header().Set("Referrer-Policy", "no-referrer")
				http.Redirect(w, r, to, http.StatusSeeOther)
				return
			}
		}
		h.web.Pages.RenderSignedOut(w)
		return
	}
	http.Redirect(w, r, rt.BasePath+"/account?done=session", http.StatusSeeOther)
}

// EndOtherSessions is POST /account/sessions/end-others: every browser but this one signed out in one
// step. Each other session of the user's list ends as EndSession ends one (its grants revoked, its
// relying parties told); then the user moves to a new sign-out generation, which ends what no list
// names: the device cookies of the other browsers (their sign-in budgets of their own; their next
// sign-in is a new browser's) and a second step under way elsewhere. This browser stays signed in on a
// new session of the new generation, with its grants, and keeps its device cookie's ID.
func (h *Handler) EndOtherSessions(w http.ResponseWriter, r *http.Request, _ string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	u, sess, ok := h.accountForm(w, r, rt)
	if !ok {
		return
	}
	list, err := h.signOn.Sessions.List(ctx, u.ID)
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	sessions, grants := 0, 0
	for _, x := range list {
		if x.ID == sess.ID {
			continue
		}
		families, found, err := h.endSession(ctx, rt, u, x.ID)
		if err != nil { // those ended so far stay ended; the person tries again
			h.web.AccountUnavailable(w, err)
			return
		}
		if found {
			sessions++
			grants += len(families)
		}
	}
	h.signOn.Revoked("logout", grants)
	if _, err := h.signOn.Store.Generations.Next(ctx, u.ID); err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	_, gen, err := h.signOn.ReplaceSession(w, r, rt, u, sess.AMR, sess.AuthTime, nil)
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	h.signOn.KeepDevice(w, r, rt, signon.AccountKey(u.Email), sess.Generation, gen)
	h.accountEvent(ctx, audit.OtherSessionsEnded, u, map[string]string{"sessions": strconv.Itoa(sessions), "grants": strconv.Itoa(grants)})
	http.Redirect(w, r, rt.BasePath+"/account?done=others", http.StatusSeeOther)
}

// endSession ends the user's session id and revokes the grants started in it, as logout does; found is
// false when the user has no such session (nothing ended).
func (h *Handler) endSession(ctx context.Context, rt *realm.Realm, u *users.User, id string) (families []string, found bool, err error) {
	// The grants the user's index holds with the session, whatever their number, and those the session
	// lists itself (grants of an earlier version); revoked before the session ends, so that a failure
	// leaves them for the retry. The session is marked ended in the same step (a code it writes from now
	// on is refused).
	families, err = h.signOn.Store.EndSession(ctx, u.ID, id, rt.Config.Auth.SessionLifetime.D())
	if err == nil { // the relying parties of its grants hear of it (back-channel logout, D60), as at logout
		err = h.backchannel.BeforeSessionEnds(ctx, h.signOn.Store, u.ID, id, families)
	}
	if err == nil {
		err = h.signOn.Store.RevokeFamilies(ctx, families)
	}
	var listed []string
	if err == nil {
		listed, found, err = h.signOn.Sessions.EndID(ctx, u.ID, id)
	}
	if err == nil {
		err = h.signOn.Store.RevokeFamilies(ctx, listed)
	}
	if err != nil {
		return nil, false, err
	}
	return signon.Union(families, listed), found, nil
}

// EndGrant is POST /account/grants/end: every token of one grant of the user stops working.
func (h *Handler) EndGrant(w http.ResponseWriter, r *http.Request, _ string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	u, _, ok := h.accountForm(w, r, rt)
	if !ok {
		return
	}
	family := r.PostForm.Get("grant")
	err := h.signOn.Store.EndGrant(ctx, u.ID, family)
	switch {
	case errors.Is(err, store.ErrNotTheUsers):
		http.Redirect(w, r, rt.BasePath+"/account", http.StatusSeeOther)
		return
	case err != nil:
		h.web.AccountUnavailable(w, err)
		return
	}
	h.signOn.Revoked("account", 1)
	h.audit.Record(ctx, audit.Event{Kind: audit.GrantEnded, Outcome: audit.Success, User: u.ID, Client: realm.AccountClientID, Grant: family})
	http.Redirect(w, r, rt.BasePath+"/account?done=grant", http.StatusSeeOther)
}
