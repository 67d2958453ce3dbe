package journeys

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passwords"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/email"
)

// The sign-in area's signins counter's labels a sign-up counts under (SignupResult.Metric).
const (
	metricSignup        = "signup"
	metricSignupRefused = "signup_refused"
	metricThrottled     = "throttled"
)

// SignupResult is what a sign-up leaves the sign-in page to do: render Page with Status on the sign-in
// page and count Metric in its signins counter (when not ""), or, when Err is not nil, answer its 503
// page instead (Metric is then "").
type SignupResult struct {
	Status int
	Page   page.SignIn
	Metric string
	Err    error
}

// Signup is the sign-in page's action=signup: it creates an account when the configuration allows it,
// and does everything but rendering (the sign-in area renders the result, see SignupResult; it may set
// headers on w, Retry-After). A new address and a taken one get the same answer, the sign-in page saying
// a message was sent (no 409: that told anyone which addresses have accounts); the owner of the address
// learns the difference by mail (SignupMail). Each sign-up with valid fields is reserved against the
// sign-up budgets of its client address and its e-mail address before anything is created or sent, so
// parallel probes cannot pass a budget. Nobody is signed in by a sign-up: that, too, would tell a new
// address from a taken one. The form is parsed already (r.PostForm).
func (h *Handler) Signup(w http.ResponseWriter, r *http.Request, rt *realm.Realm, cl *realm.Client, clientKey string) SignupResult {
	ctx := r.Context()
	name := strings.TrimSpace(r.PostForm.Get("name"))
	address := strings.TrimSpace(r.PostForm.Get("email"))
	password := r.PostForm.Get("password")
	d := page.SignIn{SignupOpen: true, SignupName: truncate(name, 120), SignupEmail: truncate(address, email.MaxLen), Fields: map[string]string{}}
	refused := func(reason string) {
		h.audit.Record(ctx, audit.Event{Kind: audit.SignUp, Outcome: audit.Failure, Reason: reason, Client: cl.GetID()})
	}
	if !rt.Config.Auth.SelfSignup {
		refused("disabled")
		d.SignupOpen = false
		d.Error = "Creating an account here is not enabled. Ask the operators of the application for an account."
		return SignupResult{Status: http.StatusForbidden, Page: d, Metric: metricSignupRefused}
	}
	if len([]rune(name)) > users.MaxNameLen {
		d.Fields["name"] = fmt.Sprintf("At most %d characters.", users.MaxNameLen)
	}
	canonical, err := users.NormalizeEmail(address)
	if err != nil {
		d.Fields["email"] = "Enter an e-mail address like name@example.com."
	}
	weak := passwords.Judge(password, address, name)
	if weak != passwords.OK {
		d.Fields["password"] = weak.Message()
	}
	if len(d.Fields) > 0 {
		refused("invalid")
		d.SignupError = "Please correct the fields marked below."
		return SignupResult{Status: http.StatusBadRequest, Page: d, Metric: metricSignupRefused}
	}

	t := rt.Config.Auth.Throttle
	res, refusal, err := h.throttle.ReserveSignup(ctx, canonical, clientKey, throttle.SignupLimits{PerIP: t.SignupsPerIP, PerAddress: t.SignupsPerAddress, Window: t.SignupWindow.D()})
	if err != nil {
		return SignupResult{Err: err}
	}
	if refusal != nil {
		h.audit.Record(ctx, audit.Event{Kind: audit.SignUp, Outcome: audit.Failure, Reason: "throttled", Client: cl.GetID(),
			Detail: map[string]string{"budget": refusal.Budget, "retryAfter": strconv.Itoa(int(refusal.Wait / time.Second))}})
		w.Header().Set("Retry-After", strconv.Itoa(int(refusal.Wait/time.Second)))
		d.SignupError = web.WaitMessage("Too many accounts were requested from here or for this address.", refusal.Wait)
		return SignupResult{Status: http.StatusTooManyRequests, Page: d, Metric: metricThrottled}
	}

	u, taken, err := h.createOrFind(ctx, address, name, password)
	if err != nil {
		res.Release(context.WithoutCancel(ctx))
		return SignupResult{Err: err}
	}
	metric := h.signupMails(r, rt, cl, u, taken)
	return SignupResult{Status: http.StatusOK, Metric: metric, Page: page.SignIn{Email: address,
		Notice: fmt.Sprintf("We have sent a message to %s. Follow it to continue, or sign in here.", address)}}
}

// signupMails records a sign-up that created u (or found it, taken) and tells the address's owner by
// mail; it returns the signins counter's label of the outcome.
func (h *Handler) signupMails(r *http.Request, rt *realm.Realm, cl *realm.Client, u *users.User, taken bool) string {
	ctx := r.Context()
	notice := SignupNotice{User: u, App: cl.Name, Continue: realm.OriginOf(r.URL.Query().Get("redirect_uri")), Lang: web.RequestLang(r),
		Brand: authmail.Brand(rt.Config.Auth, cl.Name)}
	var err error
	metric := metricSignup
	if taken {
		metric = metricSignupRefused
		h.audit.Record(ctx, audit.Event{Kind: audit.SignUp, Outcome: audit.Failure, Reason: "taken", Client: cl.GetID()})
		err = h.signupMail.Taken(ctx, notice)
	} else {
		h.audit.Record(ctx, audit.Event{Kind: audit.SignUp, Outcome: audit.Success, User: u.ID, Client: cl.GetID()})
		if notice.Verify, err = h.accounts.VerificationLink(ctx, u, cl.GetID()); err != nil {
			h.log.Warn("sign-up: no verification link", "user", u.ID, "err", err)
		} else {
			notice.Valid = authmail.LifetimeIn(notice.Lang, rt.Config.Auth.VerificationLinkLifetime.D())
			h.audit.Record(ctx, audit.Event{Kind: audit.VerificationSent, Outcome: audit.Success, User: u.ID, Client: cl.GetID(),
				Detail: map[string]string{"trigger": "signup"}})
		}
		err = h.signupMail.Created(ctx, notice)
	}
	if err != nil {
		h.log.Warn("sign-up: the mail to the address was not sent", "user", u.ID, "taken", taken, "err", err)
	}
	return metric
}

// createOrFind creates the account, or finds the one that has the address already (taken). Both cost
// one password hash, so that the time of the answer does not tell them apart either.
func (h *Handler) createOrFind(ctx context.Context, address, name, password string) (u *users.User, taken bool, err error) {
	u, err = h.users.ByEmail(ctx, address)
	if errors.Is(err, users.ErrNotFound) {
		u, err = h.users.CreateSignup(ctx, address, name, password)
		if !errors.Is(err, users.ErrEmailTaken) { // created, or failed
			return u, false, err
		}
		u, err = h.users.ByEmail(ctx, address) // another sign-up of the same address won the race
	}
	if err != nil {
		return nil, false, err
	}
	if _, err := h.users.Hasher().Hash(ctx, password); err != nil {
		return nil, false, err
	}
	return u, true, nil
}
