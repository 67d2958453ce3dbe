package stdwebhooks_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/formsservice/formsservice/services/platform/stdwebhooks"
)

const (
	current  = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	previous = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
)

// During a rotation a call carries one signature per secret: a receiver that knows either verifies it,
// and one that knows neither does not.
func TestSigner_EitherSecretVerifies(t *testing.T) {
	s, err := stdwebhooks.NewSigner(current, previous)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"x"}`)
	h := http.Header{}
	if err := s.SetHeaders(h, "msg_1", time.Now(), body); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(h.Get(standardwebhooks.HeaderWebhookSignature), "v1,"); got != 2 {
		t.Fatalf("signature header %q: want two signatures", h.Get(standardwebhooks.HeaderWebhookSignature))
	}
	for _, secret := range []string{current, previous} {
		v, _ := standardwebhooks.NewWebhook(secret)
		if err := v.Verify(body, h); err != nil {
			t.Errorf("a receiver with one of the secrets: %v", err)
		}
	}
	stranger, _ := standardwebhooks.NewWebhook("whsec_" + strings.Repeat("QUJD", 8))
	if stranger.Verify(body, h) == nil {
		t.Error("a receiver with another secret verified the call")
	}
	if _, err := stdwebhooks.NewSigner("whsec_c2hvcnQ="); err == nil || strings.Contains(err.Error(), "c2hvcnQ") {
		t.Errorf("a short secret: %v", err)
	}
}

func TestRedactURL_KeepsSchemeAndHost(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/s3cret": "https://hooks.slack.com/…",
		"https://siem.example/?token=s3cret":            "https://siem.example/…",
		"http://127.0.0.1:9/":                           "http://127.0.0.1:9",
		"not a url":                                     "the webhook URL",
	} {
		if got := stdwebhooks.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
