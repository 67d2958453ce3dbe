package journeys

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/notify"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// refusedLink answers a link that cannot be followed, each case with its own words and a way on:
// 400 for a link that is not ours or was altered, 410 for an expired or used one, 503 when the store did
// not answer (never a 500). It records kind's failure.
func (h *Handler) refusedLink(w http.ResponseWriter, r *http.Request, rt *realm.Realm, kind audit.Kind, purpose string, err error) {
	if errors.Is(err, link.ErrUnavailable) || web.IsUnavailable(err) {
		h.web.AccountUnavailable(w, err)
		return
	}
	d := page.Journey{}
	status, reason := http.StatusGone, ""
	again := "Ask for a new link below."
	switch purpose {
	case linkReset:
		again = "Ask for a new link if you still need to reset your password."
	case notify.LinkNotMe, notify.LinkUnblock:
		again = "You can still reset your password below: the browser that sets it can sign in."
	}
	switch {
	case errors.Is(err, link.ErrExpired):
		reason, d.Title = "expired", "This link has expired"
		d.Error = "The link in your message works for a limited time only. " + again
	case errors.Is(err, link.ErrUsed):
		reason, d.Title = "used", "This link was already used"
		d.Error = "Each link works once. " + again
		if purpose == linkVerify {
			d.Error = "Each link works once: if you followed it before, your address is confirmed and you can sign in. Otherwise ask for a new link below."
		}
	default:
		reason, d.Title, status = "invalid", "This link is not valid", http.StatusBadRequest
		d.Error = "The link is incomplete or was changed. Open it from your message again (copy the whole address if it is split over lines), or ask for a new one."
	}
	h.audit.Record(r.Context(), audit.Event{Kind: kind, Outcome: audit.Failure, Reason: reason})
	if purpose == linkVerify {
		d.Form, d.Action = "resend", rt.BasePath+"/account/verify/resend"
	} else {
		d.Links = []page.Link{{Href: rt.BasePath + "/account/forgot", Text: "Ask for a new link"}}
	}
	h.renderJourney(w, r, rt, status, d)
}

// mailRequest is the form that asks for a journey's mail (the address to send a verification link to
// again; the address to send a reset link to), checked the same way for both: CSRF, a well-formed
// address, then the journey's throttle per client address and per e-mail address, reserved before the
// account is looked up. It answers the refusals itself and returns ok=false after them; with ok, u is
// the account with the address or nil (the caller tells the person the same either way). Past the
// e-mail address's budget it is ok with req.dropped set: the person gets the same answer, and no mail.
type mailRequest struct {
	email string
	cl    *realm.Client
	ret   string // the sign-in page to go back to (reset only)
	// dropped: the e-mail address's mail budget is used up, so no mail goes out (the answer is the same).
	dropped *throttle.Refusal
}

func (h *Handler) readMailRequest(w http.ResponseWriter, r *http.Request, rt *realm.Realm, kind audit.Kind, journey, clientKey string, form page.Journey) (mailRequest, *users.User, bool) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		h.web.BadForm(w)
		return mailRequest{}, nil, false
	}
	req := mailRequest{email: truncate(strings.TrimSpace(r.PostForm.Get("email")), 254), cl: rt.AppClient(r.PostForm.Get("client_id"))}
	if journey == linkReset {
		req.ret = sameSiteReturn(rt, r.PostForm.Get("return"))
	}
	form.Email, form.Return = req.email, req.ret
	if req.cl != nil {
		form.ClientID = req.cl.GetID()
	}
	fail := func(status int, reason string) {
		h.audit.Record(ctx, audit.Event{Kind: kind, Outcome: audit.Failure, Reason: reason, Client: form.ClientID})
		h.renderJourney(w, r, rt, status, form)
	}
	if !web.CSRFValid(r, rt) {
		form.Error = "This form has expired or was not sent from this page. Please try again."
		fail(http.StatusForbidden, "csrf")
		return req, nil, false
	}
	canonical, err := users.NormalizeEmail(req.email)
	if err != nil {
		form.Fields = map[string]string{"email": "Enter an e-mail address like name@example.com."}
		fail(http.StatusBadRequest, "invalid")
		return req, nil, false
	}
	t := rt.Config.Auth.Throttle
	_, refusal, err := h.throttle.ReserveMail(ctx, journey, canonical, clientKey, throttle.SignupLimits{PerIP: t.MailsPerIP, PerAddress: t.MailsPerAddress, Window: t.MailWindow.D()})
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return req, nil, false
	}
	if refusal != nil && refusal.Budget == journey+"-email" {
		// The address's budget is used up: the answer stays the one every address gets and only the mail
		// is dropped. A 429 here would let anyone who knows an address keep its owner from asking for a
		// link (D51); the mails the others asked for reached the owner's mailbox all the same.
		req.dropped = refusal
		return req, nil, true
	}
	if refusal != nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(refusal.Wait/time.Second)))
		form.Error = web.WaitMessage("Too many messages were asked for from here or for this address.", refusal.Wait)
		h.audit.Record(ctx, audit.Event{Kind: kind, Outcome: audit.Failure, Reason: "throttled", Client: form.ClientID,
			Detail: map[string]string{"budget": refusal.Budget, "retryAfter": strconv.Itoa(int(refusal.Wait / time.Second))}})
		h.renderJourney(w, r, rt, http.StatusTooManyRequests, form)
		return req, nil, false
	}
	u, err := h.users.ByEmail(ctx, canonical)
	switch {
	case errors.Is(err, users.ErrNotFound):
		return req, nil, true
	case err != nil:
		h.web.AccountUnavailable(w, err)
		return req, nil, false
	}
	return req, u, true
}

// sameSiteReturn keeps a return address only when it is this provider's sign-in page (host-relative):
// anything else would make the forgot page an open redirector.
func sameSiteReturn(rt *realm.Realm, v string) string {
	prefix := rt.BasePath + "/oauth2/authorize?"
	if len(v) > 4096 || !strings.HasPrefix(v, prefix) || strings.ContainsAny(v, "\r\n\\") {
		return ""
	}
	return v
}

// droppedDetail is the audit detail of a mail dropped past the e-mail address's budget.
func droppedDetail(r *throttle.Refusal) map[string]string {
	return map[string]string{"budget": r.Budget, "retryAfter": strconv.Itoa(int(r.Wait / time.Second))}
}
