package admin

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/bearer"
)

// Event is an audit event as the API shows it: the event and the stream it is kept in (security or
// attempts, D52).
type Event struct {
	ID        string            `json:"id"`
	Trail     string            `json:"trail"`
	Time      time.Time         `json:"time"`
	Kind      audit.Kind        `json:"kind"`
	Outcome   audit.Outcome     `json:"outcome"`
	Reason    string            `json:"reason,omitempty"`
	User      string            `json:"user,omitempty"`
	Client    string            `json:"client,omitempty"`
	Addr      string            `json:"addr,omitempty"`
	UserAgent string            `json:"user_agent,omitempty"`
	Actor     string            `json:"actor,omitempty"`
	Grant     string            `json:"grant,omitempty"`
	Detail    map[string]string `json:"detail,omitempty"`
}

// The audit listing's cursor is the position of the page's last event (audit.Cursor), opaque.
const auditCursorPrefix = "a1:"

func auditCursor(c audit.Cursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(auditCursorPrefix + strconv.Itoa(c.Stream) + ":" + c.ID))
}

func auditAfter(s string) (*audit.Cursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	rest, ok := strings.CutPrefix(string(b), auditCursorPrefix)
	stream, id, cut := strings.Cut(rest, ":")
	n, err := strconv.Atoi(stream)
	c := audit.Cursor{Stream: n, ID: id}
	return &c, ok && cut && err == nil && c.Valid()
}

// listAudit is GET /admin/v1/audit?user=&kind=&since=&until=&cursor=&limit=: the trail's events, newest
// first, a page at a time. kind is a comma-separated list of kinds (a prefix ending in "." or ".*"
// selects every kind under it); since and until are RFC 3339 times, dates or durations ago, as
// `formsservice audit` takes them.
func (h *Handler) listAudit(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	q := r.URL.Query()
	var f audit.Filter
	f.User = q.Get("user")
	if len(f.User) > 128 {
		badRequest(w, "user", "at most 128 characters (a user's ID)")
		return
	}
	var err error
	if f.Kinds, err = audit.ParseKinds(q.Get("kind")); err != nil {
		badRequest(w, "kind", err.Error())
		return
	}
	now := time.Now()
	if f.Since, err = audit.ParseTime(q.Get("since"), now); err != nil {
		badRequest(w, "since", err.Error())
		return
	}
	if f.Until, err = audit.ParseTime(q.Get("until"), now); err != nil {
		badRequest(w, "until", err.Error())
		return
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		badRequest(w, "until", "before since")
		return
	}
	limit, ok := limitOf(w, r)
	if !ok {
		return
	}
	var after *audit.Cursor
	if c := q.Get("cursor"); c != "" {
		if after, ok = auditAfter(c); !ok {
			badRequest(w, "cursor", "not a cursor of this listing")
			return
		}
	}
	got, next, err := h.o.Trail.Page(r.Context(), f, after, limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := struct {
		Events     []Event `json:"events"`
		NextCursor string  `json:"next_cursor,omitempty"`
	}{Events: []Event{}}
	for _, e := range got {
		out.Events = append(out.Events, Event{ID: e.ID, Trail: audit.StreamNames[e.At.Stream], Time: e.Time, Kind: e.Kind, Outcome: e.Outcome,
			Reason: e.Reason, User: e.User, Client: e.Client, Addr: e.Addr, UserAgent: e.UserAgent, Actor: e.Actor, Grant: e.Grant, Detail: e.Detail})
	}
	if next != nil {
		out.NextCursor = auditCursor(*next)
	}
	writeJSON(w, http.StatusOK, out)
}
