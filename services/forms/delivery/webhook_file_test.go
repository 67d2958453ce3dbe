package delivery

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// writeURLFile writes content to a file as a mounted Secret would present it.
func writeURLFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// urlFileDelivery is testDelivery with the webhook's address in a file.
func urlFileDelivery(path string) config.Delivery {
	d := testDelivery("", "")
	d.Webhook = &config.Webhook{URLFile: path}
	return d
}

func TestDelivery_WebhookURLFile_IsReadAtStartUpTrimmed(t *testing.T) {
	first, second := startHook(t), startHook(t)
	path := filepath.Join(t.TempDir(), "url")
	writeURLFile(t, path, "  "+first.URL+"/services/T000/B000/XXXX\r\n\n") // a Secret written with a trailing newline
	cfg := formstest.Config()
	cfg.Forms.Delivery = urlFileDelivery(path)
	h := newHarness(t, harnessOpts{cfg: cfg})

	h.submit(validContact)
	testwait.For(t, 5*time.Second, "the webhook named by urlFile", func() bool { return len(first.delivered()) == 1 })
	if p := first.delivered()[0]; p.Contact.Name != "Ada Lovelace" || !strings.Contains(p.Text, "Hello there") {
		t.Fatalf("webhook payload %+v", p)
	}
	testwait.For(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })

	// The file is read at start-up: a changed Secret takes effect when the pods roll (the operator rolls
	// them when a mounted Secret changes), not behind the running process's back.
	writeURLFile(t, path, second.URL+"\n")
	h.submit(validContact)
	testwait.For(t, 5*time.Second, "the second message", func() bool { return len(first.delivered()) == 2 })
	if n := second.calls(); n != 0 {
		t.Fatalf("the rewritten file was read by the running service: %d calls to the new URL", n)
	}
}

func TestNew_WebhookURLFileUnusable_RefusesToStart(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testredis.Start(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	dir := t.TempDir()
	const secret = "T000/B000/XXXXsecretXXXX"
	cases := []struct {
		name, content string // content "" with create=false: no file at all
		create        bool
		want          string
	}{
		{"missing", "", false, "cannot read the webhook URL"},
		{"empty", " \n", true, "cannot read the webhook URL: secret file " + filepath.Join(dir, "empty") + " is empty"},
		{"not a URL", "hooks.slack.com/services/" + secret + "\n", true, "must be an http(s) URL"},
		{"another scheme", "ftp://hooks.slack.com/services/" + secret, true, "must be an http(s) URL"},
	}
	for _, tc := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		if tc.create {
			writeURLFile(t, path, tc.content)
		}
		src := &formstest.Source{}
		cfg := formstest.Config()
		cfg.Forms.Delivery = urlFileDelivery(path)
		src.Set(t, cfg)
		_, err := New(Options{Config: src, Redis: rdb, Registerer: prometheus.NewRegistry()})
		if err == nil {
			t.Errorf("%s: New accepted an unusable urlFile", tc.name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "forms.delivery.webhook.urlFile") {
			t.Errorf("%s: error %q, want it to name the setting and say %q", tc.name, msg, tc.want)
		}
		if strings.Contains(msg, secret) {
			t.Errorf("%s: the error reveals the file's content: %q", tc.name, msg)
		}
	}
}

func TestDelivery_ReloadToUnreadableURLFile_KeepsThePreviousTargetUntilFixed(t *testing.T) {
	old, fixed := startHook(t), startHook(t)
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery("", old.URL)
	h := newHarness(t, harnessOpts{cfg: cfg})
	h.submit(validContact)
	testwait.For(t, 5*time.Second, "the first webhook", func() bool { return len(old.delivered()) == 1 })

	// A reload names a file that is not there yet: messages keep going to the last good target.
	path := filepath.Join(t.TempDir(), "url")
	next := formstest.Config()
	next.Forms.Delivery = urlFileDelivery(path)
	h.src.Set(t, next)
	h.submit(validContact)
	testwait.For(t, 5*time.Second, "the previous webhook", func() bool { return len(old.delivered()) == 2 })

	// Once the file holds a good address, a later pass takes it up. Until that pass, messages still go
	// to the previous webhook: post one at a time, each delivered once somewhere, until one reaches the
	// address from the file (no wait for a pass that may come late on a busy machine).
	writeURLFile(t, path, fixed.URL+"\n")
	posted := 2
	for len(fixed.delivered()) == 0 {
		if posted == 2+50 {
			t.Fatalf("50 messages after the fix, none at the webhook from the file (%d at the previous one)", len(old.delivered()))
		}
		h.submit(validContact)
		posted++
		testwait.For(t, 5*time.Second, "the message's delivery", func() bool { return len(old.delivered())+len(fixed.delivered()) == posted })
	}
	testwait.For(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
	if got := len(old.delivered()) + len(fixed.delivered()); got != posted {
		t.Fatalf("%d deliveries for %d messages", got, posted)
	}
	// ...and once it has, the previous webhook gets nothing more.
	before := len(old.delivered())
	h.submit(validContact)
	testwait.For(t, 5*time.Second, "the next message at the webhook from the file", func() bool { return len(fixed.delivered()) == posted+1-before })
	if n := len(old.delivered()); n != before {
		t.Fatalf("the previous webhook got a message after the file's address was taken up (%d, was %d)", n, before)
	}
}

func TestDelivery_SignedWebhook_SameIDOnEveryRetry_VerifiesWithTheSecretFile(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh := startHook(t)
	wh.fail.Store(1)
	path := filepath.Join(t.TempDir(), "secret")
	writeURLFile(t, path, secret+"\n")
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery("", wh.URL)
	cfg.Forms.Delivery.Webhook.SecretFile = path
	h := newHarness(t, harnessOpts{cfg: cfg})

	h.submit(validContact)
	testwait.For(t, 5*time.Second, "the first attempt", func() bool { return wh.calls() == 1 })
	agePending(t, h.rdb, retryAfter+margin)
	testwait.For(t, 5*time.Second, "the webhook after one failure", func() bool { return len(wh.delivered()) == 1 })
	id := h.rdb.XRange(t.Context(), store.ContactStream, "-", "+").Val()[0].ID
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	wh.mu.Lock()
	defer wh.mu.Unlock()
	if len(wh.headers) != 2 {
		t.Fatalf("%d calls, want 2", len(wh.headers))
	}
	for i, hdr := range wh.headers {
		if got := hdr.Get("webhook-id"); got != id {
			t.Errorf("call %d: webhook-id %q, want %q on every attempt", i, got, id)
		}
		if err := verifier.Verify(wh.bodies[i], hdr); err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
}

func TestNew_WebhookSecretFileUnusable_RefusesToStart(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testredis.Start(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	writeURLFile(t, bad, "whsec_c2hvcnQ=") // "short"
	for name, file := range map[string]string{"missing": filepath.Join(dir, "nothing"), "malformed": bad} {
		src := &formstest.Source{}
		cfg := formstest.Config()
		cfg.Forms.Delivery = testDelivery("", "http://127.0.0.1:1/hook")
		cfg.Forms.Delivery.Webhook.SecretFile = file
		src.Set(t, cfg)
		_, err := New(Options{Config: src, Redis: rdb, Registerer: prometheus.NewRegistry()})
		if err == nil || !strings.Contains(err.Error(), "secretFile") {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "c2hvcnQ") {
			t.Errorf("%s: the error quotes the secret: %v", name, err)
		}
	}
}

// forms.delivery.webhook.previousSecretFile during a rotation: calls are signed with the new secret
// (secretFile) and the old one, and a receiver still on the old secret verifies them, as one already on
// the new one does.
func TestDelivery_WebhookSecretRotation_ReceiversOfEitherSecretVerify(t *testing.T) {
	wh := startHook(t)
	dir := t.TempDir()
	oldSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("the old secret of thirty-two by!"))
	newSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("the new secret of thirty-two by!"))
	oldFile, newFile := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	writeURLFile(t, oldFile, oldSecret+"\n")
	writeURLFile(t, newFile, newSecret+"\n")
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery("", wh.URL)
	cfg.Forms.Delivery.Webhook.SecretFile = newFile
	cfg.Forms.Delivery.Webhook.PreviousSecretFile = oldFile
	h := newHarness(t, harnessOpts{cfg: cfg})
	h.submit(validContact)
	testwait.For(t, 5*time.Second, "the webhook call", func() bool { return len(wh.delivered()) == 1 })
	wh.mu.Lock()
	hdr, body := wh.headers[0], wh.bodies[0]
	wh.mu.Unlock()
	for name, secret := range map[string]string{"old": oldSecret, "new": newSecret} {
		v, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(body, hdr); err != nil {
			t.Errorf("a receiver with the %s secret: %v", name, err)
		}
	}
}
