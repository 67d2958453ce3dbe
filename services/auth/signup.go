package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ory/fosite"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	mail "github.com/formsservice/formsservice/services/platform/email"
)

// signup creates an account when the configuration allows it. A new address and a taken one get the
// same answer, the sign-in page saying a message was sent (no 409: that told anyone which addresses have
// accounts); the owner of the address learns the difference by mail (SignupMail). Each sign-up with
// valid fields is reserved against the sign-up budgets of its client address and its e-mail address
// before anything is created or sent, so parallel probes cannot pass a budget. Nobody is signed in by a
// sign-up: that, too, would tell a new address from a taken one.
func (s *Service) signup(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, _ fosite.AuthorizeRequester, ip string) {
	ctx := r.Context()
	name := strings.TrimSpace(r.PostForm.Get("name"))
	email := strings.TrimSpace(r.PostForm.Get("email"))
	password := r.PostForm.Get("password")
	d := page.SignIn{SignupOpen: true, SignupName: truncate(name, 120), SignupEmail: truncate(email, mail.MaxLen), Fields: map[string]string{}}
	refused := func(reason string) {
		s.metrics.signins.WithLabelValues(signinSignupRefused).Inc()
		s.audit.Record(ctx, audit.Event{Kind: audit.SignUp, Outcome: audit.Failure, Reason: reason, Client: cl.GetID()})
	}
	if !rt.cfg.Auth.SelfSignup {
		refused("disabled")
		d.SignupOpen = false
		d.Error = "Creating an account here is not enabled. Ask the operators of the application for an account."
		s.renderSignIn(w, r, rt, cl, http.StatusForbidden, d)
		return
	}
	if len([]rune(name)) > users.MaxNameLen {
		d.Fields["name"] = fmt.Sprintf("At most %d characters.", users.MaxNameLen)
	}
	canonical, err := users.NormalizeEmail(email)
	if err != nil {
		d.Fields["email"] = "Enter an e-mail address like name@example.com."
	}
	if err := users.CheckPassword(password); err != nil {
		d.Fields["password"] = "Use 8 to 256 characters."
	}
	if len(d.Fields) > 0 {
		refused("invalid")
		d.SignupError = "Please correct the fields marked below."
		s.renderSignIn(w, r, rt, cl, http.StatusBadRequest, d)
		return
	}

	t := rt.cfg.Auth.Throttle
	res, refusal, err := s.throttle.ReserveSignup(ctx, canonical, ip, throttle.SignupLimits{PerIP: t.SignupsPerIP, PerAddress: t.SignupsPerAddress, Window: t.SignupWindow.D()})
	if err != nil {
		s.unavailablePage(w, r, rt, cl, "", err)
		return
	}
	if refusal != nil {
		s.metrics.signins.WithLabelValues(signinThrottled).Inc()
		s.audit.Record(ctx, audit.Event{Kind: audit.SignUp, Outcome: audit.Failure, Reason: "throttled", Client: cl.GetID(),
			Detail: map[string]string{"budget": refusal.Budget, "retryAfter": strconv.Itoa(int(refusal.Wait / time.Second))}})
		w.Header().Set("Retry-After", strconv.Itoa(int(refusal.Wait/time.Second)))
		d.SignupError = waitMessage("Too many accounts were requested from here or for this address.", refusal.Wait)
		s.renderSignIn(w, r, rt, cl, http.StatusTooManyRequests, d)
		return
	}

	u, taken, err := s.createOrFind(ctx, email, name, password)
	if err != nil {
		res.Release(context.WithoutCancel(ctx))
		s.unavailablePage(w, r, rt, cl, "", err)
		return
	}
	notice := SignupNotice{User: u, App: cl.name, Continue: originOf(r.URL.Query().Get("redirect_uri")), Lang: requestLang(r),
		Brand: mailBrand(rt, cl.name)}
	if taken {
		refused("taken")
		err = s.signupMail.Taken(ctx, notice)
	} else {
		s.metrics.signins.WithLabelValues(signinSignup).Inc()
		s.audit.Record(ctx, audit.Event{Kind: audit.SignUp, Outcome: audit.Success, User: u.ID, Client: cl.GetID()})
		if notice.Verify, err = s.verificationLink(ctx, rt, u, cl); err != nil {
			s.log.Warn("sign-up: no verification link", "user", u.ID, "err", err)
		} else {
			notice.Valid = lifetimeIn(notice.Lang, rt.cfg.Auth.VerificationLinkLifetime.D())
			s.audit.Record(ctx, audit.Event{Kind: audit.VerificationSent, Outcome: audit.Success, User: u.ID, Client: cl.GetID(),
				Detail: map[string]string{"trigger": "signup"}})
		}
		err = s.signupMail.Created(ctx, notice)
	}
	if err != nil {
		s.log.Warn("sign-up: the mail to the address was not sent", "user", u.ID, "taken", taken, "err", err)
	}
	s.renderSignIn(w, r, rt, cl, http.StatusOK, page.SignIn{Email: email,
		Notice: fmt.Sprintf("We have sent a message to %s. Follow it to continue, or sign in here.", email)})
}

// createOrFind creates the account, or finds the one that has the address already (taken). Both cost
// one password hash, so that the time of the answer does not tell them apart either.
func (s *Service) createOrFind(ctx context.Context, email, name, password string) (u *users.User, taken bool, err error) {
	u, err = s.users.ByEmail(ctx, email)
	if errors.Is(err, users.ErrNotFound) {
		u, err = s.users.CreateSignup(ctx, email, name, password)
		if !errors.Is(err, users.ErrEmailTaken) { // created, or failed
			return u, false, err
		}
		u, err = s.users.ByEmail(ctx, email) // another sign-up of the same address won the race
	}
	if err != nil {
		return nil, false, err
	}
	if _, err := s.users.Hasher().Hash(ctx, password); err != nil {
		return nil, false, err
	}
	return u, true, nil
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
