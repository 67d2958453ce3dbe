package page_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/auth/page"
)

var scriptElement = regexp.MustCompile(`(?s)<script nonce="([^"]+)">(.*?)</script>`)

// The pages with passkeys carry one script, allowed by the nonce in the CSP (new for every response),
// and their style by its hash, as the other pages.
func TestRenderPasskeys_ScriptByNonceStyleByHash(t *testing.T) {
	r := page.New()
	pages := map[string]func(w http.ResponseWriter){
		"signin": func(w http.ResponseWriter) {
			r.RenderSignIn(w, http.StatusOK, page.SignIn{Passkey: &page.PasskeySignIn{BeginURL: "/oauth2/passkey/begin", Error: "refused"}}, nil)
		},
		"passkeys": func(w http.ResponseWriter) {
			r.RenderPasskeys(w, http.StatusOK, page.Passkeys{Action: "/account/passkeys", BeginURL: "/account/passkeys/begin",
				List: []page.PasskeyRow{{ID: "abc", Name: "Key", Created: time.Unix(1e9, 0), ClonedAt: time.Unix(2e9, 0)}}})
		},
	}
	nonces := map[string]bool{}
	for name, render := range pages {
		for range 2 {
			rec := httptest.NewRecorder()
			render(rec)
			body, csp := rec.Body.String(), rec.Header().Get("Content-Security-Policy")
			s := scriptElement.FindAllStringSubmatch(body, -1)
			if len(s) != 1 || !strings.Contains(csp, "script-src 'nonce-"+s[0][1]+"';") || strings.TrimSpace(s[0][2]) == "" {
				t.Fatalf("%s: want one script allowed by the CSP's nonce; CSP %q", name, csp)
			}
			if nonces[s[0][1]] {
				t.Errorf("%s: a nonce used twice", name)
			}
			nonces[s[0][1]] = true
			m := styleElement.FindStringSubmatch(body)
			h := sha256.Sum256([]byte(m[1]))
			if !strings.Contains(csp, "style-src 'sha256-"+base64.StdEncoding.EncodeToString(h[:])+"';") || strings.Contains(csp, "unsafe-inline") {
				t.Errorf("%s: CSP %q does not allow exactly the page's style", name, csp)
			}
			if rec.Header().Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("%s: framing allowed", name)
			}
		}
	}
}

// A passkey's name is the person's to choose: it is escaped wherever it appears.
func TestRenderPasskeys_EscapesNames(t *testing.T) {
	rec := httptest.NewRecorder()
	page.New().RenderPasskeys(rec, http.StatusOK, page.Passkeys{Action: "/account/passkeys", Email: `"><svg onload=alert(1)>`,
		List: []page.PasskeyRow{{ID: `x" onclick="alert(2)`, Name: `<img src=x onerror=alert(3)>`, Created: time.Now()}}})
	body := scriptElement.ReplaceAllString(rec.Body.String(), "")
	for _, raw := range []string{"<img", "<svg", `" onclick="`} {
		if strings.Contains(body, raw) {
			t.Errorf("the page carries %q unescaped", raw)
		}
	}
	if !strings.Contains(body, `aria-label="Remove &lt;img src=x onerror=alert(3)&gt;"`) {
		t.Errorf("the remove button's label does not name the passkey")
	}
}

// Without JavaScript nothing of the passkey forms shows: they are hidden until the script shows them,
// and the stylesheet keeps [hidden] hidden even for elements it lays out (forms are flex boxes).
func TestRenderPasskeys_FormsHiddenUntilTheScriptRuns(t *testing.T) {
	rec := httptest.NewRecorder()
	page.New().RenderSignIn(rec, http.StatusOK, page.SignIn{Passkey: &page.PasskeySignIn{BeginURL: "/b"}}, nil)
	if !strings.Contains(rec.Body.String(), `id="passkey-signin" data-begin="/b" hidden>`) || !strings.Contains(rec.Body.String(), `id="passkey-error" hidden data-unavailable=`) {
		t.Errorf("the passkey form or its empty error shows without the script")
	}
	if !strings.Contains(styleElement.FindStringSubmatch(rec.Body.String())[1], "[hidden]{display:none!important}") {
		t.Errorf("the stylesheet lets a hidden form show")
	}
}
