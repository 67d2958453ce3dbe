package account

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/store"
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
	// The grants the user's index holds with the session, whatever their number, and those the session
	// lists itself (grants of an earlier version); revoked before the session ends, so that a failure
	// leaves them for the retry. The session is marked ended in the same step (a code it writes from now
	// on is refused).
	families, err := h.signOn.Store.EndSession(ctx, u.ID, id, rt.Config.Auth.SessionLifetime.D())
	if err == nil { // the relying parties of its grants hear of it (back-channel logout, D60), as at logout
		err = h.backchannel.BeforeSessionEnds(ctx, h.signOn.Store, u.ID, id, families)
	}
	if err == nil {
		err = h.signOn.Store.RevokeFamilies(ctx, families)
	}
	var listed []string
	found := false
	if err == nil {
		listed, found, err = h.signOn.Sessions.EndID(ctx, u.ID, id)
	}
	if err == nil {
		err = h.signOn.Store.RevokeFamilies(ctx, listed)
	}
	families = signon.Union(families, listed)
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
		h.web.Pages.RenderSignedOut(w)
		return
	}
	http.Redirect(w, r, rt.BasePath+"/account?done=session", http.StatusSeeOther)
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
