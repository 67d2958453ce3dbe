package bearer

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/formsservice/formsservice/services/auth/realm"
)

// Refusal is a request the admin API refuses: RFC 6750 3.1's error code (empty when the request carried
// no token at all, which RFC 6750 3.1 answers with the realm alone), the status, what the developer
// should know, and for insufficient_scope the scopes that would do.
type Refusal struct {
	Status int
	Code   string // invalid_token, insufficient_scope, invalid_request, or "" (no token)
	Detail string
	Scope  []string
	realm  string
}

func (e *Refusal) Error() string { return "bearer: " + e.Code + ": " + e.Detail }

func refuse(status int, code, detail string, rt *realm.Realm) *Refusal {
	return &Refusal{Status: status, Code: code, Detail: detail, realm: AdminAudience(rt)}
}

func invalidToken(rt *realm.Realm, detail string) *Refusal {
	return refuse(http.StatusUnauthorized, "invalid_token", detail, rt)
}

func insufficient(rt *realm.Realm, scopes []string, detail string) *Refusal {
	r := refuse(http.StatusForbidden, "insufficient_scope", detail, rt)
	r.Scope = scopes
	return r
}

// Problem is an RFC 9457 problem details object, with the OAuth error code and scope (a refusal of the
// token) or the request's faulty fields (a refusal of its input: field name -> what is wrong) as
// extension members.
type Problem struct {
	Type   string            `json:"type"`
	Title  string            `json:"title"`
	Status int               `json:"status"`
	Detail string            `json:"detail,omitempty"`
	Error  string            `json:"error,omitempty"`
	Scope  string            `json:"scope,omitempty"`
	Errors map[string]string `json:"errors,omitempty"`
}

// Refuse answers err from Check: a *Refusal with its status, WWW-Authenticate (RFC 6750 3) and an RFC
// 9457 problem body; a store that did not answer with 503 and Retry-After.
func (c *Checker) Refuse(w http.ResponseWriter, err error) {
	var rf *Refusal
	if !errors.As(err, &rf) {
		w.Header().Set("Retry-After", "5")
		WriteProblem(w, Problem{Type: "about:blank", Title: http.StatusText(http.StatusServiceUnavailable), Status: http.StatusServiceUnavailable,
			Detail: "The service is briefly unavailable; try again."})
		return
	}
	challenge := `Bearer realm="` + rf.realm + `"`
	if rf.Code != "" {
		challenge += `, error="` + rf.Code + `", error_description="` + quoteSafe(rf.Detail) + `"`
	}
	if len(rf.Scope) > 0 {
		challenge += `, scope="` + strings.Join(rf.Scope, " ") + `"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	WriteProblem(w, Problem{Type: "about:blank", Title: http.StatusText(rf.Status), Status: rf.Status, Detail: rf.Detail, Error: rf.Code,
		Scope: strings.Join(rf.Scope, " ")})
}

// WriteProblem answers p as application/problem+json, not to be stored (the API's every refusal).
func WriteProblem(w http.ResponseWriter, p Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// quoteSafe keeps an error_description within RFC 6750's quoted-string characters (%x20-21 / %x23-5B /
// %x5D-7E): no quote or backslash.
func quoteSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return -1
		}
		return r
	}, s)
}
