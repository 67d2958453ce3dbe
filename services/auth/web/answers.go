package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
)

// CORS answers the browser's CORS questions for the endpoints a browser app calls directly (token,
// revoke, userinfo): allowed are the origins of the registered clients' redirect URIs.
func (k *Kit) CORS(methods string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		origin := c.Get(fiber.HeaderOrigin)
		c.Vary(fiber.HeaderOrigin)
		allowed := origin != "" && k.Realm.Current().Origins[strings.ToLower(origin)]
		if c.Method() == fiber.MethodOptions {
			if !allowed {
				return c.SendStatus(fiber.StatusForbidden)
			}
			c.Set(fiber.HeaderAccessControlAllowOrigin, origin)
			c.Set(fiber.HeaderAccessControlAllowMethods, methods)
			c.Set(fiber.HeaderAccessControlAllowHeaders, "authorization, content-type")
			c.Set(fiber.HeaderAccessControlMaxAge, "600")
			return c.SendStatus(fiber.StatusNoContent)
		}
		if allowed {
			c.Set(fiber.HeaderAccessControlAllowOrigin, origin)
			c.Set(fiber.HeaderAccessControlExposeHeaders, "www-authenticate")
		}
		return c.Next()
	}
}

// WriteJSON writes v as the JSON answer with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// RateAllowed counts a request against a rate limit (auth.rateLimit, shared by the replicas) and, over
// it, answers 429 with Retry-After: the page for authorize, an OAuth error for token. The limit fails
// open when Redis does not answer: it protects availability, and every step behind it answers 503 then
// (or, like a new browser's sign-in page, needs no store).
func (k *Kit) RateAllowed(w http.ResponseWriter, r *http.Request, rt *realm.Realm, kind, who string, limit int) bool {
	wait, err := k.Throttle.Allow(r.Context(), kind, who, limit, rt.Config.Auth.RateLimit.Window.D())
	return k.RateAnswer(w, kind, wait, err)
}

// RateAnswer is RateAllowed for a rate limit counted already (wait, err: its answer).
func (k *Kit) RateAnswer(w http.ResponseWriter, kind string, wait time.Duration, err error) bool {
	if err != nil {
		k.Log.Warn("rate limit: store unavailable; not applied", "err", err)
		return true
	}
	if wait == 0 {
		return true
	}
	k.RateRefused(w, kind, wait)
	return false
}

// RateRefused answers a request over a rate limit of kind: 429 with Retry-After, the page for authorize,
// an OAuth error for token.
func (k *Kit) RateRefused(w http.ResponseWriter, kind string, wait time.Duration) {
	msg := fmt.Sprintf("Too many requests. Try again in %d s.", int(wait/time.Second))
	w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
	k.rateLimited.WithLabelValues(kind).Inc()
	if strings.HasPrefix(kind, "token") {
		w.Header().Set("Cache-Control", "no-store")
		WriteJSON(w, http.StatusTooManyRequests, map[string]string{"error": "temporarily_unavailable", "error_description": msg})
	} else {
		k.Pages.RenderError(w, http.StatusTooManyRequests, page.Error{Title: "Try again later", Message: msg})
	}
}

// WaitMessage tells the person how long to wait, in whole seconds.
func WaitMessage(lead string, wait time.Duration) string {
	return fmt.Sprintf("%s Try again in %d s.", lead, int(wait/time.Second))
}

// RetryAfter sets Retry-After to wait in whole seconds.
func RetryAfter(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
}

// ScriptError is what a page's script is told when its request (a passkey ceremony) is refused: a
// message it shows, and the field it is about.
type ScriptError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// ScriptJSON answers a page's script: the options of a ceremony, or a ScriptError in the page's
// language. Never cached.
func ScriptJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	if e, ok := v.(ScriptError); ok {
		e.Error = page.T(w, e.Error) // the script shows it on the page, in the page's language
		v = e
	}
	WriteJSON(w, status, v)
}

// BeginCeremony checks a page script's request to begin a passkey ceremony, answering it in JSON when
// it is not to be begun: passkeys off (404), the address's authorize budget spent (429), a form that
// cannot be read or lacks its CSRF token (403). false: answered.
func (k *Kit) BeginCeremony(w http.ResponseWriter, r *http.Request, rt *realm.Realm, clientKey string) bool {
	if rt.RP == nil {
		ScriptJSON(w, http.StatusNotFound, ScriptError{Error: "Passkeys are not enabled here."})
		return false
	}
	if !k.ScriptRateAllowed(w, r, rt, clientKey) {
		return false
	}
	if r.ParseForm() != nil || !CSRFValid(r, rt) {
		ScriptJSON(w, http.StatusForbidden, ScriptError{Error: "This page has expired. Reload it and try again."})
		return false
	}
	return true
}

// ScriptRateAllowed counts a ceremony's beginning against the address's authorize budget (each one
// stores a challenge for the ceremony's timeout) and answers 429 in JSON when it is spent.
func (k *Kit) ScriptRateAllowed(w http.ResponseWriter, r *http.Request, rt *realm.Realm, clientKey string) bool {
	rl := rt.Config.Auth.RateLimit
	wait, err := k.Throttle.Allow(r.Context(), "authorize-ip", clientKey, rl.PerIP, rl.Window.D())
	if err != nil || wait == 0 {
		return true // fails open as RateAllowed does; the ceremony itself needs the store
	}
	k.rateLimited.WithLabelValues("authorize-ip").Inc()
	RetryAfter(w, wait)
	ScriptJSON(w, http.StatusTooManyRequests, ScriptError{Error: fmt.Sprintf("Too many requests. Try again in %d s.", int(wait/time.Second))})
	return false
}

// PageLook is how a request's pages look: the platform's branding, with cl's over it (nil: none), in
// the language the request asks for — its authorization request's ui_locales, then Accept-Language.
func PageLook(r *http.Request, rt *realm.Realm, cl *realm.Client) page.Look {
	b := rt.Config.Auth.Branding
	if cl != nil {
		b = b.Over(cl.Branding)
	}
	return page.Look{Lang: RequestLang(r), Brand: page.Brand(b)}
}

// RequestLang is the language a request's pages and mails are in: its authorization request's
// ui_locales, then Accept-Language (page.Match).
func RequestLang(r *http.Request) string {
	return page.Match(r.URL.Query().Get("ui_locales"), r.Header.Get("Accept-Language"))
}

// RepeatedParam names a parameter that appears more than once (in sorted order, so the answer is
// stable): RFC 6749 3.1 and 3.2 allow each at most once (fosite reads the first copy, and whatever sits
// in front of us may read another). RFC 8707 allows one resource (and audience) parameter per API.
func RepeatedParam(v url.Values) (string, bool) {
	var names []string
	for k, vs := range v {
		if len(vs) > 1 && k != "resource" && k != "audience" {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return "", false
	}
	slices.Sort(names)
	return names[0], true
}
