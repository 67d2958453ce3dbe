package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The dev server offers sign-up out of the box (a newcomer's `make run` shows "Create an account" on the
// sign-in page), and a configuration file that turns it off is obeyed.
func TestDevServer_OffersSignUp_UnlessTheFileTurnsItOff(t *testing.T) {
	signInPage := func(base string) string {
		t.Helper()
		q := url.Values{"client_id": {"demo"}, "redirect_uri": {base + "/demo/callback"}, "response_type": {"code"}, "scope": {"openid"},
			"state": {"state-0123456789"}, "code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}
		code, body := httpGet(t, base+"/oauth2/authorize?"+q.Encode())
		if code != 200 {
			t.Fatalf("the sign-in page: %d\n%.600s", code, body)
		}
		return body
	}
	if page := signInPage(startCommand(t, "dev", devEnv(t, nil))); !strings.Contains(page, "Create an account") {
		t.Errorf("the dev server's sign-in page offers no sign-up:\n%.2000s", page)
	}
	off := filepath.Join(t.TempDir(), "no-signup.yaml")
	if err := os.WriteFile(off, []byte("auth:\n  selfSignup: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if page := signInPage(startCommand(t, "dev", devEnv(t, nil), "--config", off)); strings.Contains(page, "Create an account") {
		t.Error("sign-up offered although the configuration file turns it off")
	}
}
