package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
)

// The second step of a sign-in (docs/auth.md "Two-step sign-in"). After a right password, a user with
// an authenticator app is asked for a code (or a recovery code) before the session starts; a user
// without one signs in with the password alone, unless the client requires a second factor (requireMFA,
// or acr_values asking for two factors): then the session starts with the password and the person sets
// up an app on the account page, which brings them back to the authorization request. A browser
// already signed in with a password alone is asked for the code (step-up) when a client needs it.
//
// Between the password and the code the browser holds a challenge: a random cookie (fs_mfa) whose
// SHA-256 names a short-lived record in Redis with the user and the methods so far. Nothing of the
// authorization request is kept: it travels in the form's action URL, as on the sign-in page.

const mfaCookie = "fs_mfa"

func challengeKey(token string) string {
	h := sha256.Sum256([]byte(token))
	return "auth:mfa-challenge:{" + base64.RawURLEncoding.EncodeToString(h[:]) + "}"
}

// codeLimits are the second step's budgets (throttle.ReserveCode): auth.mfa.failures per user within
// auth.mfa.window, slowed down as sign-ins are, and the client address's sign-in budget.
func (s *Service) codeLimits(rt *runtime) throttle.CodeLimits {
	m, t := rt.cfg.Auth.MFA, rt.cfg.Auth.Throttle
	return throttle.CodeLimits{PerUser: m.Failures, Window: m.Window.D(), DelayAfter: t.DelayAfter, MaxDelay: t.MaxDelay.D(),
		IP: t.IPFailures, IPWindow: t.Window.D()}
}

// requestedACR is the level the authorization request asks for (checkAuthorizeParams refused values it
// names none of).
func requestedACR(ar fosite.AuthorizeRequester) string {
	v, _ := acr.Requested(ar.GetRequestForm().Get("acr_values"))
	return v
}

// needsTwoFactors reports whether a sign-in to cl for ar must include a second factor.
func needsTwoFactors(cl *client, ar fosite.AuthorizeRequester) bool {
	return cl.requireMFA || acr.NeedsTwoFactor(requestedACR(ar))
}

// sessionSatisfies reports whether a session signed in with amr may answer ar for cl without asking.
func sessionSatisfies(cl *client, ar fosite.AuthorizeRequester, amr []string) bool {
	return !needsTwoFactors(cl, ar) || acr.Level(amr) == acr.TwoFactor
}

// secondStep runs after a right password (u): it answers and returns true when the sign-in needs more
// than the password (the code page, or the set-up of a second factor); false lets the session start.
func (s *Service) secondStep(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, ar fosite.AuthorizeRequester, u *users.User) bool {
	enrolled, err := s.enrolled(r.Context(), u.ID)
	if err != nil {
		s.unavailablePage(w, r, rt, cl, u.Email, err)
		return true
	}
	if enrolled {
		s.challenge(w, r, rt, cl, u, []string{acr.PWD})
		return true
	}
	if needsTwoFactors(cl, ar) {
		// The password is right, but this client wants a second factor the user does not have: a session
		// with the password, then the set-up, which leads back to this very request.
		if _, _, err := s.replaceSession(w, r, rt, u, []string{acr.PWD}, time.Now().UTC()); err != nil {
			s.unavailablePage(w, r, rt, cl, u.Email, err)
			return true
		}
		s.mfaRequired(r.Context(), u, cl, "not_enrolled")
		s.toEnrolment(w, r, rt)
		return true
	}
	return false
}

// stepUp answers a browser signed in with too little for cl: the code page, or the set-up.
func (s *Service) stepUp(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, ar fosite.AuthorizeRequester, u *users.User, sess *sso.Session) {
	enrolled, err := s.mfa.Enrolled(r.Context(), u.ID)
	if err != nil {
		s.authorizeError(w, r, rt, ar, err)
		return
	}
	if enrolled {
		s.mfaRequired(r.Context(), u, cl, "step_up")
		s.challenge(w, r, rt, cl, u, sess.AMR)
		return
	}
	s.mfaRequired(r.Context(), u, cl, "not_enrolled")
	s.toEnrolment(w, r, rt)
}

// toEnrolment sends the signed-in browser to set up an authenticator app, and back to this
// authorization request afterwards.
func (s *Service) toEnrolment(w http.ResponseWriter, r *http.Request, rt *runtime) {
	back := rt.basePath + "/oauth2/authorize?" + r.URL.RawQuery
	http.Redirect(w, r, rt.basePath+"/account/totp?"+url.Values{"return": {back}}.Encode(), http.StatusSeeOther)
}

// challenge starts the second step for u, whose methods so far are first, and shows the code page.
func (s *Service) challenge(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, u *users.User, first []string) {
	token := randomToken()
	life := rt.cfg.Auth.MFA.ChallengeLifetime.D()
	v := u.ID + "|" + strings.Join(first, ",")
	if err := s.rdb.Set(r.Context(), challengeKey(token), v, life).Err(); err != nil {
		s.unavailablePage(w, r, rt, cl, u.Email, err)
		return
	}
	setCookie(w, rt, mfaCookie, token, life)
	s.renderSecondStep(w, r, rt, cl, http.StatusOK, page.SecondStep{Email: u.Email})
}

func (s *Service) renderSecondStep(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, status int, d page.SecondStep) {
	d.CSRF = csrfToken(w, r, rt)
	d.Action = rt.basePath + "/oauth2/authorize?" + r.URL.RawQuery
	d.ClientName = cl.name
	if cl.account {
		d.ClientName = page.T(w, cl.name)
	}
	s.pages.RenderSecondStep(page.WithLook(w, s.pageLook(r, rt, cl)), status, d, []string{originOf(r.URL.Query().Get("redirect_uri"))})
}

// readChallenge returns the user and the methods so far of the browser's challenge ("" when there is
// none, or it ended).
func (s *Service) readChallenge(ctx context.Context, r *http.Request, rt *runtime) (string, []string, error) {
	token := readCookie(r, rt, mfaCookie)
	if token == "" || len(token) > 128 {
		return "", nil, nil
	}
	v, err := s.rdb.Get(ctx, challengeKey(token)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", mfa.ErrUnavailable, err)
	}
	user, methods, _ := strings.Cut(v, "|")
	var first []string
	if methods != "" {
		first = strings.Split(methods, ",")
	}
	return user, first, nil
}

// submitSecondStep checks the code of the second step (action=mfa): a TOTP code accepted once, or a
// recovery code spent. Each code is reserved against the throttle's code budgets before it is checked,
// as a password is (throttle.ReserveCode).
func (s *Service) submitSecondStep(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, ar fosite.AuthorizeRequester, clientKey string) {
	ctx := r.Context()
	userID, first, err := s.readChallenge(ctx, r, rt)
	if err != nil {
		s.unavailablePage(w, r, rt, cl, "", err)
		return
	}
	var u *users.User
	if userID != "" {
		if u, err = s.activeUser(ctx, userID); errors.Is(err, users.ErrNotFound) {
			u = nil
		} else if err != nil {
			s.unavailablePage(w, r, rt, cl, "", err)
			return
		}
	}
	if u == nil {
		s.metrics.signins.WithLabelValues(signinMFAExpired).Inc()
		s.renderSignIn(w, r, rt, cl, http.StatusUnauthorized, page.SignIn{Error: "Your sign-in took too long. Please sign in again."})
		return
	}
	code := strings.TrimSpace(r.PostForm.Get("code"))
	retry := func(wait time.Duration) { w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second))) }
	res, refusal, err := s.throttle.ReserveCode(ctx, u.ID, clientKey, s.codeLimits(rt))
	if err != nil {
		s.unavailablePage(w, r, rt, cl, u.Email, err)
		return
	}
	if refusal != nil {
		s.metrics.signins.WithLabelValues(signinMFAThrottled).Inc()
		s.codeThrottled(ctx, u, cl, refusal)
		retry(refusal.Wait)
		lead := "Too many wrong codes."
		if !refusal.Locked {
			lead = "Please wait a moment after a wrong code."
		}
		s.renderSecondStep(w, r, rt, cl, http.StatusTooManyRequests, page.SecondStep{Email: u.Email, Error: waitMessage(lead, refusal.Wait)})
		return
	}
	var result mfa.Result
	recovery := mfa.LooksLikeRecoveryCode(code)
	if recovery {
		var ok bool
		if ok, err = s.mfa.UseRecoveryCode(ctx, u.ID, code); ok {
			result = mfa.Accepted
		}
	} else {
		result, err = s.mfa.Verify(ctx, u.ID, code)
	}
	if err != nil && !errors.Is(err, mfa.ErrNotEnrolled) {
		res.Release(context.WithoutCancel(ctx))
		s.unavailablePage(w, r, rt, cl, u.Email, err)
		return
	}
	if result != mfa.Accepted {
		s.metrics.signins.WithLabelValues(signinMFAWrong).Inc()
		reason := "wrong_code"
		msg := "That code is not right. Enter the code your app shows now."
		switch {
		case result == mfa.Replayed:
			reason, msg = "replayed_code", "That code was used already. Wait for the next code in your app."
		case recovery:
			reason, msg = "wrong_recovery_code", "That recovery code is not right, or was used already."
		}
		status := http.StatusUnauthorized
		wait, usedUp, err := res.Failed(ctx)
		if err != nil { // the failure is counted; only its delay was not recorded
			s.log.Warn("second step: a wrong code's delay was not recorded", "err", err)
		}
		s.codeFailed(ctx, u, cl, reason, usedUp, wait)
		if wait > 0 {
			msg = waitMessage(msg, wait)
			retry(wait)
		}
		if len(usedUp) > 0 {
			status = http.StatusTooManyRequests
		}
		s.renderSecondStep(w, r, rt, cl, status, page.SecondStep{Email: u.Email, Error: msg})
		return
	}
	_ = res.Succeeded(ctx)
	_ = s.rdb.Del(ctx, challengeKey(readCookie(r, rt, mfaCookie))).Err()
	setCookie(w, rt, mfaCookie, "", -1)
	amr := acr.With(first, acr.OTP)
	if left := s.codeAccepted(ctx, u, cl, recovery, amr); recovery {
		s.mailSecondFactor(ctx, rt, u, factorCodeUsed, r, left)
	}
	s.metrics.signins.WithLabelValues(signinMFA).Inc()
	s.openSession(w, r, rt, cl, ar, u, amr)
}

// replaceSession starts a new sign-in session for u signed in with amr at authTime and sets its cookie:
// a new value at every sign-in, against session fixation. The browser's earlier session ends; when it
// was the same user's (a second step, a new password) the grants started in it move to the new one, so
// that logging out still revokes them.
func (s *Service) replaceSession(w http.ResponseWriter, r *http.Request, rt *runtime, u *users.User, amr []string, authTime time.Time) (string, int64, error) {
	token, gen, _, err := s.newSession(w, r, rt, u, amr, authTime, nil)
	return token, gen, err
}

// newSession is replaceSession that also counts the rate limit rate (when not nil) and settles a
// password sign-in's throttle reservation (signinReads) in the round trip that writes the session
// (D44). wait is the rate limit's answer (0: let through; a rate limit the store could not count lets
// the request through, as rateAllowed does).
func (s *Service) newSession(w http.ResponseWriter, r *http.Request, rt *runtime, u *users.User, amr []string, authTime time.Time, rate *throttle.Rate) (token string, gen int64, wait time.Duration, err error) {
	ctx := r.Context()
	// The session keeps the user's sign-out generation of now: a sign-out everywhere after this point
	// refuses its codes, even one that missed the session in the user's list.
	gen, err = s.generation(ctx, u.ID)
	if err != nil {
		return "", 0, 0, err
	}
	var carry []string
	carryFrom := ""
	if old := readCookie(r, rt, sessionCookie); old != "" {
		if prev, err := s.sessions.Get(ctx, old); err == nil && prev != nil && prev.UserID == u.ID {
			carry, _ = s.sessions.Families(ctx, old)
			carryFrom = prev.ID
		}
		_ = s.sessions.Delete(ctx, old)
	}
	lifetime := rt.cfg.Auth.SessionLifetime.D()
	var started *sso.Started
	var settled func() error
	var limited *throttle.Queued
	reads := signinReadsOf(ctx, u.ID)
	_ = s.throttle.Pipelined(ctx, func(p redis.Pipeliner) error { // each answer carries its own error
		started = s.sessions.QueueStart(ctx, p, sso.Start{UserID: u.ID, AuthTime: authTime, AMR: amr, UserAgent: r.UserAgent(), Generation: gen}, lifetime)
		if reads != nil && reads.res != nil {
			settled = reads.res.QueueSucceeded(ctx, p)
			reads.res = nil
		}
		if rate != nil {
			limited = s.throttle.Queue(ctx, p, *rate)
		}
		return nil
	})
	if settled != nil {
		if err := settled(); err != nil {
			s.log.Warn("sign-in throttle: a success was not recorded", "err", err)
		}
	}
	token, err = started.Token(ctx)
	if err != nil {
		return "", 0, 0, err
	}
	if err := s.sessions.Adopt(ctx, token, carry); err != nil {
		s.log.Warn("sign-in: the earlier session's grants were not carried over", "err", err)
	}
	if err := s.store.MoveSession(ctx, u.ID, carryFrom, sso.ID(token)); err != nil {
		s.log.Warn("sign-in: the earlier session's grants were not carried over", "err", err)
	}
	setCookie(w, rt, sessionCookie, token, lifetime)
	if limited != nil {
		wait, err := limited.Wait()
		if err != nil {
			s.log.Warn("rate limit: store unavailable; not applied", "err", err)
		}
		return token, gen, wait, nil
	}
	return token, gen, 0, nil
}
