// Package signin is the hosted sign-in page, /oauth2/authorize: the authorization request checked, a
// signed-in browser answered at once, and otherwise the page and its actions — a password, a passkey,
// the second step's code, a sign-up (handed to package journeys), or cancel — until a session starts
// and the code goes back to the client. Every step of one request shares its attempt.
package signin

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/ory/fosite"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/claims"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/journeys"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/notify"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// Options are the sign-in's dependencies.
type Options struct {
	Web        *web.Kit
	SignOn     *signon.Kit
	Store      *store.Store
	Users      *users.Store
	Throttle   *throttle.Limiter
	Passkeys   *passkey.Store
	MFA        *mfa.Store
	Audit      *audit.Recorder
	Accounts   *accounts.Ops     // the mail when a recovery code is spent
	Journeys   *journeys.Handler // the sign-up action
	Federation *federation.Kit   // signing in through upstream providers (connector.go)
	Notify     *notify.Notifier  // the owner's mails of a new browser and of a lockout (D66)
	Log        *slog.Logger
	Registerer prometheus.Registerer
}

// Handler serves the hosted sign-in.
type Handler struct {
	web        *web.Kit
	signOn     *signon.Kit
	store      *store.Store
	users      *users.Store
	throttle   *throttle.Limiter
	passkeys   *passkey.Store
	mfa        *mfa.Store
	audit      *audit.Recorder
	accounts   *accounts.Ops
	journeys   *journeys.Handler
	federation *federation.Kit
	notify     *notify.Notifier
	log        *slog.Logger
	now        func() time.Time
	signins    *prometheus.CounterVec
	directory  *directoryPage // the page of ldap connectors (directory.go)
	trail      trail          // the audit events that need only the recorder (events.go)
}

// Sign-in results (a closed set, so the label stays bounded).
const (
	signinSuccess        = "success"
	signinSession        = "session"
	signinBadCredentials = "bad_credentials"
	signinThrottled      = "throttled"
	signinCSRF           = "csrf"
	signinLoginRequired  = "login_required"
	signinCancelled      = "cancelled"
	signinPasskey        = "passkey"
	signinPasskeyRefused = "passkey_refused"
	signinError          = "error"
	// The second step: a right code, a wrong or replayed one, too many wrong ones, and a code sent after
	// the challenge ended.
	signinMFA          = "mfa"
	signinMFAWrong     = "mfa_wrong"
	signinMFAThrottled = "mfa_throttled"
	signinMFAExpired   = "mfa_expired"
	// Through an upstream provider (connector.go): signed in, or not.
	signinConnector        = "connector"
	signinConnectorRefused = "connector_refused"
)

// New builds the handler and registers its metric.
func New(o Options) (*Handler, error) {
	h := &Handler{web: o.Web, signOn: o.SignOn, store: o.Store, users: o.Users, throttle: o.Throttle, passkeys: o.Passkeys, mfa: o.MFA,
		audit: o.Audit, accounts: o.Accounts, journeys: o.Journeys, federation: o.Federation, notify: o.Notify, log: o.Log, now: time.Now,
		trail: trail{audit: o.Audit, mfa: o.MFA}}
	h.signins = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_auth_signins_total",
		Help: "Sign-ins on the hosted page by result: success, session (skipped the form), bad_credentials, throttled, csrf, signup, signup_refused, login_required, cancelled (the person declined), passkey (signed in with a passkey), passkey_refused, connector (signed in through an upstream provider), connector_refused, error; the second step: mfa, mfa_wrong, mfa_throttled, mfa_expired.",
	}, []string{"result"})
	if err := o.Registerer.Register(h.signins); err != nil {
		return nil, err
	}
	h.directory = &directoryPage{web: h.web, federation: h.federation, throttle: h.throttle, audit: h.audit, log: h.log, counted: h.counted}
	return h, nil
}

// attempt is one request to the hosted sign-in page: what every step of it shares, instead of passing
// the same six values from step to step.
type attempt struct {
	w         http.ResponseWriter
	r         *http.Request
	rt        *realm.Realm
	cl        *realm.Client             // the client the request names (checked)
	ar        fosite.AuthorizeRequester // the authorization request (checked)
	clientKey string                    // the client's address as rate limits count it (web.ClientHandler)
	// reads are what a password sign-in read ahead with the account and settles as the session starts
	// (D44); nil for every other step.
	reads *signon.Reads
	// newBrowser: the browser held no device cookie of the account's current generation when its first
	// factor was accepted (it has one now): the session that opens is mailed to the owner (D66).
	newBrowser bool
	// upstream is what the grant of a sign-in through a connector keeps for its re-checks at refresh
	// (D78); nil for every other sign-in.
	upstream *claims.Upstream
	// logout is what single logout with the upstream needs of a sign-in through a SAML connector (D89),
	// kept with the session when it opens; nil for every other sign-in.
	logout *federation.LogoutToKeep
}

// counted counts one sign-in result.
func (h *Handler) counted(result string) { h.signins.WithLabelValues(result).Inc() }
