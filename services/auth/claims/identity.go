package claims

import (
	"time"

	"github.com/ory/fosite"

	"github.com/formsservice/formsservice/services/auth/users"
)

// For is the session every token of a sign-in of u carries.
func For(u *users.User, scopes fosite.Arguments, clientID string, authTime, requestedAt time.Time) *Session {
	sess := &Session{Subject: u.ID, Username: Username(u, scopes)}
	idc := sess.IDTokenClaims()
	idc.Subject = u.ID
	idc.AuthTime = authTime.UTC()
	idc.RequestedAt = requestedAt.UTC()
	idc.Extra = Identity(u, scopes)
	sess.GetJWTClaims()
	sess.ATClaims.Subject = u.ID
	sess.ATClaims.Extra = map[string]interface{}{"client_id": clientID}
	return sess
}

// Username is what introspection answers as username: the e-mail address, only when the grant has the
// email scope (a resource server learns no more about the person than the app was allowed to).
func Username(u *users.User, scopes fosite.Arguments) string {
	if scopes.Has("email") {
		return u.Email
	}
	return ""
}

// Identity are the user's claims the granted scopes allow (OpenID Connect Core 5.4).
func Identity(u *users.User, scopes fosite.Arguments) map[string]interface{} {
	c := map[string]interface{}{}
	if scopes.Has("email") {
		c["email"] = u.Email
		c["email_verified"] = u.EmailVerified
	}
	if scopes.Has("profile") && u.Name != "" {
		c["name"] = u.Name
	}
	if scopes.Has(GroupsScope) {
		// Always an array, empty when the user is in none: "no groups" said, not left to guess.
		c[GroupsScope] = append([]string{}, u.Groups...)
	}
	return c
}

// GroupsScope is the scope that grants the groups claim, and the claim's name (Dex's and Keycloak's).
const GroupsScope = "groups"

// SIDClaim is the ID token's session ID (OpenID Connect Back-Channel Logout 1.0, 2.1): the same for
// every client signed in through one browser session (sso.SID), and in the logout tokens that end it.
const SIDClaim = "sid"

// WithSID puts the sign-in session's sid into the ID tokens of sess (empty: none).
func WithSID(sess *Session, sid string) {
	if sid != "" {
		sess.IDTokenClaims().Extra[SIDClaim] = sid
	}
}

// AccessGroups puts the user's groups into the access tokens of sess when the client asks for them
// (accessTokenGroups) and the grant has the groups scope; otherwise it takes them out.
func AccessGroups(sess *Session, u *users.User, scopes fosite.Arguments, clientWants bool) {
	sess.GetJWTClaims()
	if sess.ATClaims.Extra == nil {
		sess.ATClaims.Extra = map[string]interface{}{}
	}
	if clientWants && scopes.Has(GroupsScope) {
		sess.ATClaims.Extra[GroupsScope] = append([]string{}, u.Groups...)
	} else {
		delete(sess.ATClaims.Extra, GroupsScope)
	}
}

// Refresh brings the claims of sess up to date with u at a refresh (D37: current at every refresh),
// keeping what belongs to the sign-in: the session's sid.
func Refresh(sess *Session, u *users.User, scopes fosite.Arguments, accessGroups bool) {
	sid := sess.IDTokenClaims().Extra[SIDClaim]
	sess.Username = Username(u, scopes)
	sess.IDTokenClaims().Extra = Identity(u, scopes)
	if sid != nil {
		sess.IDClaims.Extra[SIDClaim] = sid
	}
	AccessGroups(sess, u, scopes, accessGroups)
}
