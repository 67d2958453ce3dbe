package auth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/auditsink"
	"github.com/formsservice/formsservice/services/platform/config"
)

// With auth.audit.webhook set, the service runs the audit sink (D67): an event it records reaches the
// receiver, signed with the secret of secretFile.
func TestAuditSink_ServiceDeliversRecordedEvents(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []audit.Event
	siem := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p auditsink.Payload
		if verifier.Verify(body, r.Header) != nil || json.Unmarshal(body, &p) != nil {
			http.Error(w, "refused", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got = append(got, p.Data.Events...)
		mu.Unlock()
	}))
	t.Cleanup(siem.Close)
	secretFile := filepath.Join(t.TempDir(), "whsec")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Audit.Webhook = &config.AuditWebhook{URL: siem.URL + "/audit", SecretFile: secretFile}
	}})
	if err := p.svc.Audit().Write(context.Background(), audit.Event{Kind: audit.UserCreated, Outcome: audit.Success, User: "u1", Actor: audit.ActorCLI}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the event at the receiver", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1 && got[0].Kind == audit.UserCreated && got[0].User == "u1" && got[0].ID != ""
	})
}
