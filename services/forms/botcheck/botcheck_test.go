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
			if err := v.Verify(t.Context(), "good", "192.0.2.1"); err != nil {
				t.Fatalf("a good token: %v", err)
			}
			if err := v.Verify(t.Context(), "good", "192.0.2.1"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "invalid-input-response") {
				t.Fatalf("the same token again: %v, want ErrRefused with the provider's code", err)
			}
			for _, tok := range []string{"forged", "", strings.Repeat("x", maxToken+1)} {
				if err := v.Verify(t.Context(), tok, ""); !errors.Is(err, ErrRefused) {
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
	if err := v.Verify(t.Context(), "low", ""); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "score 0.30") {
		t.Errorf("score 0.3: %v", err)
	}
	if err := v.Verify(t.Context(), "high", ""); err != nil {
		t.Errorf("score 0.9: %v", err)
	}
}

// Everything that keeps the answer from being known fails closed, and is not the visitor's fault.
func TestVerify_ProviderProblems_AreErrorsButNotRefusals(t *testing.T) {
	srv := verifytest.Start(t, "right")
	srv.Issue("tok", -1)
	check := func(what string, v *Verifier, ctx context.Context) {
		t.Helper()
		err := v.Verify(ctx, "tok", "")
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
