// Package audit is the provider's audit trail (ASVS 7.1.3, 7.2.1): one structured event for every
// security-relevant action of the auth service and of the operators' CLI. Each event is written to the
// log as its own stream (JSON, stream=audit, whatever the log level), kept in a Redis stream bounded by
// time and size, counted per kind and outcome, and read back by `formsservice audit` (Query, WriteText,
// WriteJSONLines). An event names people and clients by ID and never carries a secret: no password,
// token, code or cookie has a field to go in.
package audit

import (
	"context"
	"net/netip"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind names what happened. Every kind is declared below with define, one line each, so that a new one
// (e-mail verified, passkey added, …) is one line: its metrics series, the CLI's -kind check and its
// help follow from the declaration.
type Kind string

// Outcome is success or failure.
type Outcome string

// The two outcomes.
const (
	Success Outcome = "success"
	Failure Outcome = "failure"
)

// KindInfo describes a declared kind.
type KindInfo struct {
	Kind Kind
	Doc  string
}

var declared []KindInfo

func define(name, doc string) Kind {
	declared = append(declared, KindInfo{Kind(name), doc})
	return Kind(name)
}

// The kinds. Reasons (Event.Reason) are a closed vocabulary per kind, documented with it.
var (
	SignIn            = define("signin", "a password sign-in on the hosted page; failure reasons: bad_password, unknown_account, disabled, throttled, csrf, unverified (a client requiring a verified address)")
	Lockout           = define("signin.lockout", "a failed sign-in used up a budget; attempts against it wait (reason: the budget)")
	SignUp            = define("signup", "an account created on the hosted page; failure reasons: throttled, taken, invalid, disabled")
	Logout            = define("logout", "a browser's sign-in session ended by RP-initiated logout, with the grants started in it; or a SAML IdP's single logout (D89), taken or refused")
	SignOutEverywhere = define("user.signout_everywhere", "every grant and sign-in session of a user ended")
	PasswordSet       = define("user.password_set", "a user's password replaced (the user is signed out everywhere)")
	UserCreated       = define("user.created", "an account created by an operator")
	UserDisabled      = define("user.disabled", "an account disabled (and signed out everywhere)")
	UserEnabled       = define("user.enabled", "a disabled account enabled again")
	UserDeleted       = define("user.deleted", "an account deleted (and its grants revoked); detail by=address_owner: an unverified sign-up deleted from its verification link's page by the address's owner")
	UserMFAReset      = define("user.mfa_reset", "an operator removed an account's second factor and recovery codes (`formsservice users reset-mfa`), for a person who lost both")
	CodeReplay        = define("token.code_replay", "an authorization code presented again: its grant is revoked")
	RefreshReuse      = define("token.refresh_reuse", "a rotated refresh token presented again: its grant is revoked")
	TokenRevoked      = define("token.revoked", "a grant revoked through /oauth2/revoke (RFC 7009); failure reason: unknown_token")
	Introspection     = define("token.introspection", "a resource server asked about a token: success (active), failure (reason inactive or unauthorized)")
	// Machine clients (issue 36; docs/architecture.md D50).
	ClientCredentials = define("token.client_credentials", "a client got an access token of its own (client_credentials; actor client, detail scope and aud); failure reasons: the OAuth error (invalid_client, unauthorized_client, invalid_scope, invalid_target, invalid_request), assertion_replay (a private_key_jwt assertion's jti used again), rate_limited")
	// Passkeys (issue 23 item 4; docs/architecture.md D21).
	SignInPasskey  = define("signin.passkey", "a passkey sign-in on the hosted page (detail: passkey); failure reasons: unknown_passkey, cloned (the signature counter did not go up), wrong_origin, user_verification, expired, malformed, invalid, disabled, throttled")
	PasskeyAdded   = define("passkey.added", "a passkey added on the passkeys page (detail: passkey, synced); failure reasons: bad_password, throttled, expired, exists, too_many, malformed, wrong_origin, user_verification, invalid, unverified (the address is not verified)")
	PasskeyRenamed = define("passkey.renamed", "a passkey given another name (detail: passkey); failure reason: not_found")
	PasskeyRemoved = define("passkey.removed", "a passkey removed (detail: passkey); failure reason: not_found")
	// The second factor and the account page (issue 23; docs/architecture.md D20).
	SecondFactor       = define("signin.second_factor", "a code at a sign-in's second step: success (an app's code; detail method=totp); failure reasons: wrong_code, replayed_code, wrong_recovery_code, throttled")
	RecoveryCodeUsed   = define("signin.recovery_code", "a recovery code accepted at a sign-in's second step (spent; detail left: how many remain)")
	MFARequired        = define("signin.mfa_required", "a client (requireMFA or acr_values) asked for a second factor the sign-in lacked; reasons: not_enrolled (sent to set one up), step_up (a password-only session asked for a code), prompt_none (login_required)")
	MFAEnrolled        = define("account.mfa_enrolled", "a second factor (an authenticator app) set up on the account page, with new recovery codes; failure reasons: wrong_code, expired, wrong_password, throttled, unverified (the address is not verified: no factor but the password), enrolled (a factor is set up already: it is turned off first)")
	MFARemoved         = define("account.mfa_removed", "the second factor turned off on the account page (it takes the password and the current factor); failure reasons: wrong_password, throttled, wrong_code, replayed_code, wrong_recovery_code")
	RecoveryReplaced   = define("account.recovery_codes_replaced", "new recovery codes on the account page (the old ones stop working; it takes the password and the current factor); failure reasons: wrong_password, throttled, wrong_code, replayed_code, wrong_recovery_code")
	PasswordChanged    = define("account.password_changed", "a person changed their password on the account page (every other session and grant ends; detail grants, sessions); failure reasons: wrong_password, throttled, invalid")
	SessionEnded       = define("account.session_ended", "a sign-in session ended from the account page, with the grants started in it (detail current, grants)")
	OtherSessionsEnded = define("account.other_sessions_ended", "every browser but this one signed out from the account page in one step: each other sign-in session with its grants, and the other browsers' device cookies (detail sessions, grants)")
	GrantEnded         = define("account.grant_ended", "an app's access (a grant) removed from the account page")
	// The mailed journeys (issue 23 items 2 and 3; docs/architecture.md D29, D30).
	VerificationSent = define("email.verification_sent", "a verification link mailed (detail trigger: signup, resend, or cli for `users send-verification`); failure reasons: throttled, unknown_account, already_verified, disabled (nothing sent; the person is told the same), invalid")
	EmailVerified    = define("email.verified", "an e-mail address verified with the button of its link's page (the link's GET acts on nothing); failure reasons: invalid, expired, used, csrf")
	ResetRequested   = define("password.reset_requested", "a password reset link mailed; failure reasons: throttled, unknown_account, disabled (nothing sent; the person is told the same), invalid")
	PasswordReset    = define("password.reset", "a password replaced through a reset link (every grant and session ends; detail grants, sessions, and for a recovery passkeysRemoved, secondFactorRemoved, verified); failure reasons: invalid, expired, used, weak_password")
	// The links of the owner's notices (issue 38 item 6; docs/architecture.md D66).
	NotMe     = define("account.not_me", "the \"this wasn't me\" button of a new-browser mail's link: every grant and sign-in session ended (detail grants, sessions) and a reset link mailed; failure reasons: invalid, expired, used, csrf")
	Unblocked = define("account.unblocked", "the button of a lockout mail's link: the browser got a device cookie of the account (a sign-in budget of its own); failure reasons: invalid, expired, used, csrf")
	// Upstream providers (issue 37; docs/architecture.md D58): detail connector, and how the account was found.
	SignInConnector  = define("signin.connector", "a sign-in through an upstream provider (detail connector, and account: linked, auto_linked or created); failure reasons: state (no or a foreign sign-in state), upstream_error (the provider answered with an error), refused (its answer failed the checks: issuer, signature, nonce, audience), unreachable, not_allowed (not in a GitHub connector's orgs), no_email, link_required (an account has the address and it may not be linked automatically), taken, disabled; an ldap connector's (D75): bad_credentials (a wrong username or password), throttled (the sign-in budgets; detail budget), unavailable (our store); a SAML connector (D76) adds idp_initiated (an answer no sign-in here asked for), answered (a second answer to one sign-in), and detail saml naming the check that refused an answer (signature, audience, destination, in_response_to, expired, replayed, …)")
	IdentityLinked   = define("account.identity_linked", "an upstream account linked on the account page (detail connector); failure reasons: taken (linked to another account), connector_linked (another account of that provider is linked), refused, unreachable, not_allowed, state")
	UpstreamRecheck  = define("token.upstream_recheck", "a grant signed in through a connector checked with its upstream again at a refresh (docs/architecture.md D78; detail connector, grant: ended or kept); failure reasons: not_allowed (the upstream refused: the person removed, the session revoked), unreachable (onUpstreamDown decides: kept, the re-check skipped, or ended), connector_removed, state_unreadable; a re-check that ends the grant revokes every token of it")
	IdentityUnlinked = define("account.identity_unlinked", "a linked upstream account removed (detail connector; actor cli from `formsservice users unlink`); failure reason: not_found")
	// Groups (issue 23 item 8; docs/architecture.md D37): one event per group changed.
	GroupAdded   = define("user.group_added", "a user made a member of a group by an operator (detail group)")
	GroupRemoved = define("user.group_removed", "a user taken out of a group by an operator (detail group)")
	// The forms' data, changed by an operator through the admin API or the CLI (docs/architecture.md
	// D63): detail form and id (the submission's), never a field's value; the kinds are package
	// services/forms/manage's.
	FormSubmissionDeleted   = define("form.submission_deleted", "a form's submission erased with its delivery state, dead letters and unique value (detail form, id, folder)")
	FormSpamReleased        = define("form.spam_released", "a submission released from a form's spam folder to delivery, under its ID (detail form, id)")
	FormSpamMarked          = define("form.spam_marked", "a submission moved from a form's inbox to its spam folder by an operator (detail form, id)")
	FormDeadLetterRetried   = define("form.dead_letter_retried", "a dead letter handed back to delivery under its ID (detail form, id)")
	FormDeadLetterDiscarded = define("form.dead_letter_discarded", "a dead letter deleted; its submission stays stored (detail form, id)")
	FormExported            = define("form.exported", "a form's submissions or the waitlist exported (detail form, folder, format, rows, complete, filtered)")
	FormAddressErased       = define("form.address_erased", "an e-mail address erased from every form (formsservice forget; detail the counts erased: waitlist, contact, forms, deadLetters, spam, confirmationMails; never the address)")
	FormFileLinkMade        = define("form.file_link_made", "a one-time download link of a submission's file made for the console (detail form, id, file: the file's id; D83)")
)

// Kinds lists every declared kind in declaration order.
func Kinds() []KindInfo { return append([]KindInfo(nil), declared...) }

// Known reports whether k is a declared kind.
func Known(k Kind) bool {
	for _, d := range declared {
		if d.Kind == k {
			return true
		}
	}
	return false
}

// Actors of events not done by the person signing in.
const (
	ActorCLI = "cli" // an operator's command: `formsservice users`, and the forms' `export`, `forget`, `spam`, `deliveries`
	// ActorClient: the OAuth client (Event.Client) acted on its own behalf, no person (client_credentials).
	ActorClient = "client"
	// ActorAdmin: a call of the admin API (/admin/v1, D59) with a token of the client Event.Client, for
	// the subject in Detail[DetailActorSub] (a person's user ID, or the client's own ID for a machine).
	ActorAdmin = "admin"
)

// DetailActorSub is the detail that names the subject of the token an admin API call was made with.
const DetailActorSub = "actorSub"

// Event is one audit record. Only identifiers, counts and closed vocabularies go in: never a password,
// token, code, cookie or e-mail address (users are named by ID, which `formsservice users list` maps).
type Event struct {
	// ID is the Redis stream entry ID (its time is when the store received the event); set on read.
	ID      string    `json:"id,omitempty"`
	Time    time.Time `json:"time"`
	Kind    Kind      `json:"kind"`
	Outcome Outcome   `json:"outcome"`
	// Reason says why, from the kind's vocabulary (bad_password, throttled, …).
	Reason string `json:"reason,omitempty"`
	// User is the account's ID (the sub claim), when one is known.
	User string `json:"user,omitempty"`
	// Client is the OAuth client's ID.
	Client string `json:"client,omitempty"`
	// Addr is the client address (behind trusted proxies, the right-most untrusted hop).
	Addr      string `json:"addr,omitempty"`
	UserAgent string `json:"userAgent,omitempty"`
	// Actor is who acted when it was not the person at Addr (ActorCLI).
	Actor string `json:"actor,omitempty"`
	// Grant is the grant (token family) concerned.
	Grant string `json:"grant,omitempty"`
	// Detail holds further identifiers and counts (grants: "3"); never a secret.
	Detail map[string]string `json:"detail,omitempty"`
}

// Bounds on what a request can put into an event (the user agent is the client's to choose).
const (
	maxUserAgent = 256
	maxField     = 128
)

// clean bounds the event's free-text fields and removes control characters, so that a hostile user
// agent can neither grow the store nor forge lines in a terminal. The event then owns its text: copies
// of the strings and of Detail. Record keeps it past the request, and fiber's strings share the
// request's buffer, which the server reuses for the next request; a caller may reuse its map too.
func (e *Event) clean() {
	e.UserAgent = strings.Clone(cleanText(e.UserAgent, maxUserAgent))
	e.Reason = strings.Clone(cleanText(e.Reason, maxField))
	e.User = strings.Clone(cleanText(e.User, maxField))
	e.Client = strings.Clone(cleanText(e.Client, maxField))
	e.Addr = strings.Clone(cleanText(e.Addr, maxField))
	e.Actor = strings.Clone(cleanText(e.Actor, maxField))
	e.Grant = strings.Clone(cleanText(e.Grant, maxField))
	e.Kind, e.Outcome = Kind(strings.Clone(string(e.Kind))), Outcome(strings.Clone(string(e.Outcome)))
	if e.Detail != nil {
		d := make(map[string]string, len(e.Detail))
		for k, v := range e.Detail {
			d[strings.Clone(k)] = strings.Clone(cleanText(v, maxField))
		}
		e.Detail = d
	}
}

func cleanText(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

type originKey struct{}

type origin struct {
	addr string
	ua   string
}

// WithOrigin returns a context that carries the request's client address and user agent, so that an
// event recorded anywhere below (the token store's replay detection among them) names them.
func WithOrigin(ctx context.Context, addr netip.Addr, userAgent string) context.Context {
	o := origin{ua: userAgent}
	if addr.IsValid() {
		o.addr = addr.String()
	}
	return context.WithValue(ctx, originKey{}, o)
}

func originOf(ctx context.Context) (origin, bool) {
	o, ok := ctx.Value(originKey{}).(origin)
	return o, ok
}

// Origin returns the client address and user agent WithOrigin put in ctx (empty strings when none).
func Origin(ctx context.Context) (addr, userAgent string) {
	o, _ := originOf(ctx)
	return o.addr, o.ua
}
