package auth

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/formsservice/formsservice/services/platform/server"
)

// metrics are the auth service's own; request counts and latency per route come from the platform.
type metrics struct {
	signins      *prometheus.CounterVec
	tokens       *prometheus.CounterVec
	tokenLatency *prometheus.HistogramVec
	revocations  *prometheus.CounterVec
	rateLimited  *prometheus.CounterVec
}

// Sign-in results (a closed set, so the label stays bounded).
const (
	signinSuccess        = "success"
	signinSession        = "session"
	signinBadCredentials = "bad_credentials"
	signinThrottled      = "throttled"
	signinCSRF           = "csrf"
	signinSignup         = "signup"
	signinSignupRefused  = "signup_refused"
	signinLoginRequired  = "login_required"
	signinCancelled      = "cancelled"
	signinPasskey        = "passkey"
	signinPasskeyRefused = "passkey_refused"
	signinError          = "error"
	// The second step (secondstep.go): a right code, a wrong or replayed one, too many wrong ones, and a
	// code sent after the challenge ended.
	signinMFA          = "mfa"
	signinMFAWrong     = "mfa_wrong"
	signinMFAThrottled = "mfa_throttled"
	signinMFAExpired   = "mfa_expired"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		signins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_auth_signins_total",
			Help: "Sign-ins on the hosted page by result: success, session (skipped the form), bad_credentials, throttled, csrf, signup, signup_refused, login_required, cancelled (the person declined), passkey (signed in with a passkey), passkey_refused, error; the second step: mfa, mfa_wrong, mfa_throttled, mfa_expired.",
		}, []string{"result"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_auth_tokens_issued_total",
			Help: "Token responses issued by grant type.",
		}, []string{"grant_type"}),
		tokenLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "formsservice_auth_token_duration_seconds",
			Help:    "Token endpoint latency by grant type and outcome (ok or the OAuth error code).",
			Buckets: server.LatencyBuckets,
		}, []string{"grant_type", "outcome"}),
		revocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_auth_family_revocations_total",
			Help: "Token families revoked, by reason: code_replay, refresh_reuse, revoke (RFC 7009), user_deleted (deleted or disabled, seen at a refresh), family_expired (absolute lifetime), logout (started in the session that logged out, or in a browser signed out on the account page), account (removed on the account page).",
		}, []string{"reason"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_auth_rate_limited_total",
			Help: "Requests refused by auth.rateLimit (429), by limit: authorize-ip, authorize-user, token-ip, token-user.",
		}, []string{"limit"}),
	}
	for _, c := range []prometheus.Collector{m.signins, m.tokens, m.tokenLatency, m.revocations, m.rateLimited} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// grantLabel bounds the grant_type label to the grants the provider knows.
func grantLabel(g string) string {
	switch g {
	case "authorization_code", "refresh_token":
		return g
	}
	return "other"
}
