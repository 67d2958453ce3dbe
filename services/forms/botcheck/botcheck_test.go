package botcheck

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/forms/internal/verifytest"
)

func TestVerify_EachProvider_GoodTokenOnceAndRefusals(t *testing.T) {
	for _, p := range []Provider{Turnstile, HCaptcha, ReCAPTCHA} {
		t.Run(string(p), func(t *testing.T) {
			srv := verifytest.Start(t, "s3cret")
			v := New(p, "s3cret", srv.URL, 0.5, nil)
			srv.Issue("good", -1)
			if err := v.Verify(t.Context(), "good", "192.0.2.1", "www.example.com"); err != nil {
				t.Fatalf("a good token: %v", err)
			}
			if err := v.Verify(t.Context(), "good", "192.0.2.1", "www.example.com"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "invalid-input-response") {
				t.Fatalf("the same token again: %v, want ErrRefused with the provider's code", err)
			}
			for _, tok := range []string{"forged", "", strings.Repeat("x", maxToken+1)} {
				if err := v.Verify(t.Context(), tok, "", "www.example.com"); !errors.Is(err, ErrRefused) {
					t.Errorf("token %.10q: %v, want ErrRefused", tok, err)
				}
			}
			calls := srv.Calls()
			if len(calls) != 3 || calls[0].Secret != "s3cret" || calls[0].Response != "good" || calls[0].RemoteIP != "192.0.2.1" || calls[2].RemoteIP != "" {
				t.Errorf("the provider was asked %+v", calls) // the empty and the oversized token are not sent
			}
			if p.Field() == "" || !strings.HasPrefix(p.DefaultVerifyURL(), "https://") {
				t.Errorf("field %q, default URL %q", p.Field(), p.DefaultVerifyURL())
			}
		})
	}
}

func TestVerify_RecaptchaV3Score_BelowTheMinimumIsRefused(t *testing.T) {
	srv := verifytest.Start(t, "k")
	v := New(ReCAPTCHA, "k", srv.URL, 0.5, nil)
	srv.Issue("low", 0.3)
	srv.Issue("high", 0.9)
	if err := v.Verify(t.Context(), "low", "", "www.example.com"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "score 0.30") {
		t.Errorf("score 0.3: %v", err)
	}
	if err := v.Verify(t.Context(), "high", "", "www.example.com"); err != nil {
		t.Errorf("score 0.9: %v", err)
	}
}

// Everything that keeps the answer from being known fails closed, and is not the visitor's fault.
func TestVerify_ProviderProblems_AreErrorsButNotRefusals(t *testing.T) {
	srv := verifytest.Start(t, "right")
	srv.Issue("tok", -1)
	check := func(what string, v *Verifier, ctx context.Context) {
		t.Helper()
		err := v.Verify(ctx, "tok", "", "www.example.com")
		if err == nil || errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, want an error that is not a refusal", what, err)
		}
		if err != nil && strings.Contains(err.Error(), "right") {
			t.Errorf("%s: the error shows the secret: %v", what, err)
		}
	}
	check("a wrong secret", New(Turnstile, "wrong", srv.URL, 0, nil), t.Context())
	srv.Fail(http.StatusServiceUnavailable)
	check("a 503", New(Turnstile, "right", srv.URL, 0, nil), t.Context())
	srv.Fail(0)
	check("nobody listening", New(Turnstile, "right", "http://127.0.0.1:1/siteverify", 0, nil), t.Context())
	check("not its JSON", New(Turnstile, "right", srv.URL+"/x", 0, &http.Client{Transport: htmlTransport{}}), t.Context())
	srv.Hold()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond) // the bound under test is the caller's
	defer cancel()
	check("a provider that hangs", New(Turnstile, "right", srv.URL, 0, nil), ctx)
}

// htmlTransport answers 200 with a page: a captive portal or a proxy's error page instead of the provider.
type htmlTransport struct{}

func (htmlTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/html"}},
		Body: http.NoBody, Request: r}, nil
}

// A token is good for the site it was solved on: the provider's answer names that host (and for
// reCAPTCHA v3 and Turnstile the page's action), and a token solved on another site (a bot farm's page
// using the same site key, or one of the site's other pages) is refused. An answer that names no host
// cannot be checked and is not the visitor's fault: an error, not a refusal.
func TestVerify_HostnameAndAction_MustBeThePostingSitesAndTheConfigured(t *testing.T) {
	srv := verifytest.Start(t, "k")
	v := New(ReCAPTCHA, "k", srv.URL, 0.5, nil).WithAction("waitlist")
	srv.Answer("www.example.com", "waitlist")
	srv.Issue("here", 0.9)
	if err := v.Verify(t.Context(), "here", "", "WWW.example.com"); err != nil {
		t.Fatalf("solved on the posting host, with the configured action: %v", err)
	}
	srv.Issue("elsewhere", 0.9)
	if err := v.Verify(t.Context(), "elsewhere", "", "forms.example.org"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "www.example.com") {
		t.Errorf("solved on another host: %v, want ErrRefused naming it", err)
	}
	srv.Answer("www.example.com", "login")
	srv.Issue("login", 0.9)
	if err := v.Verify(t.Context(), "login", "", "www.example.com"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "login") {
		t.Errorf("another action: %v, want ErrRefused naming it", err)
	}
	srv.Answer("", "waitlist")
	srv.Issue("nohost", 0.9)
	if err := v.Verify(t.Context(), "nohost", "", "www.example.com"); err == nil || errors.Is(err, ErrRefused) {
		t.Errorf("an answer without a hostname: %v, want an error that is not a refusal", err)
	}
	// Without a configured action any action is taken (reCAPTCHA v2, hCaptcha, Turnstile without one).
	srv.Answer("www.example.com", "anything")
	srv.Issue("any", 0.9)
	if err := New(ReCAPTCHA, "k", srv.URL, 0.5, nil).Verify(t.Context(), "any", "", "www.example.com"); err != nil {
		t.Errorf("no action configured: %v", err)
	}
}
