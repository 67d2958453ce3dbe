package auth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ory/fosite"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/users"
	mail "github.com/formsservice/formsservice/services/platform/email"
)

// signup creates an account (when the configuration allows it) and signs it in.
func (s *Service) signup(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, ar fosite.AuthorizeRequester, ip string) {
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
	lim := s.limits(rt)
	if wait, _, err := s.throttle.Check(ctx, "", ip, lim); err != nil {
		s.unavailablePage(w, r, rt, cl, "", err)
		return
	} else if wait > 0 {
		s.metrics.signins.WithLabelValues(signinThrottled).Inc()
		s.audit.Record(ctx, audit.Event{Kind: audit.SignUp, Outcome: audit.Failure, Reason: "throttled", Client: cl.GetID()})
		d.SignupError = fmt.Sprintf("Too many attempts from your network. Try again in %d s.", int(wait/time.Second))
		s.renderSignIn(w, r, rt, cl, http.StatusTooManyRequests, d)
		return
	}
	if len([]rune(name)) > users.MaxNameLen {
		d.Fields["name"] = fmt.Sprintf("At most %d characters.", users.MaxNameLen)
	}
	if _, err := users.NormalizeEmail(email); err != nil {
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
	u, err := s.users.Create(ctx, email, name, password)
	if errors.Is(err, users.ErrEmailTaken) {
		_, _ = s.throttle.Fail(ctx, "", ip, lim) // probing for addresses counts against the network
		refused("taken")
		d.Fields["email"] = "An account with this e-mail address already exists. Sign in above instead."
		d.SignupError = "Please correct the fields marked below."
		s.renderSignIn(w, r, rt, cl, http.StatusConflict, d)
		return
	}
	if err != nil {
		s.unavailablePage(w, r, rt, cl, "", err)
		return
	}
	s.metrics.signins.WithLabelValues(signinSignup).Inc()
	s.audit.Record(ctx, audit.Event{Kind: audit.SignUp, Outcome: audit.Success, User: u.ID, Client: cl.GetID()})
	s.rememberDevice(w, rt, u.Email)
	s.startSession(w, r, rt, cl, ar, u)
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
