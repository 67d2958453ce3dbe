package forms

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

// writeURLFile writes content to a file as a mounted Secret would present it.
func writeURLFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// urlFileDelivery is fastDelivery with the webhook's address in a file.
func urlFileDelivery(path string) config.Delivery {
	d := fastDelivery("", "")
	d.Webhook = &config.Webhook{URLFile: path}
	return d
}

func TestDelivery_WebhookURLFile_IsReadAtStartUpTrimmed(t *testing.T) {
	first, second := startHook(t), startHook(t)
	path := filepath.Join(t.TempDir(), "url")
	writeURLFile(t, path, "  "+first.URL+"/services/T000/B000/XXXX\r\n\n") // a Secret written with a trailing newline
	cfg := testConfig()
	cfg.Forms.Delivery = urlFileDelivery(path)
	h := newHarness(t, harnessOpts{cfg: cfg})

	h.post("/contact", validContact).expect(t, 201, "created")
	waitFor(t, 5*time.Second, "the webhook named by urlFile", func() bool { return len(first.delivered()) == 1 })
	if p := first.delivered()[0]; p.Contact.Name != "Ada Lovelace" || !strings.Contains(p.Text, "Hello there") {
		t.Fatalf("webhook payload %+v", p)
	}
	waitFor(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })

	// The file is read at start-up: a changed Secret takes effect when the pods roll (the operator rolls
	// them when a mounted Secret changes), not behind the running process's back.
	writeURLFile(t, path, second.URL+"\n")
	h.post("/contact", validContact).expect(t, 201, "created")
	waitFor(t, 5*time.Second, "the second message", func() bool { return len(first.delivered()) == 2 })
	if n := len(second.callTimes()); n != 0 {
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
		src := &liveSource{}
		cfg := testConfig()
		cfg.Forms.Delivery = urlFileDelivery(path)
		src.set(t, cfg)
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
	cfg := testConfig()
	cfg.Forms.Delivery = fastDelivery("", old.URL)
	h := newHarness(t, harnessOpts{cfg: cfg})
	h.post("/contact", validContact).expect(t, 201, "created")
	waitFor(t, 5*time.Second, "the first webhook", func() bool { return len(old.delivered()) == 1 })

	// A reload names a file that is not there yet: messages keep going to the last good target.
	path := filepath.Join(t.TempDir(), "url")
	next := testConfig()
	next.Forms.Delivery = urlFileDelivery(path)
	h.src.set(t, next)
	h.post("/contact", validContact).expect(t, 201, "created")
	waitFor(t, 5*time.Second, "the previous webhook", func() bool { return len(old.delivered()) == 2 })

	// Once the file holds a good address, the next pass takes it up.
	writeURLFile(t, path, fixed.URL+"\n")
	time.Sleep(1500 * time.Millisecond) // at least one worker pass (its read blocks for RetryAfter/2)
	h.post("/contact", validContact).expect(t, 201, "created")
	waitFor(t, 5*time.Second, "the webhook from the file", func() bool { return len(fixed.delivered()) == 1 })
	if n := len(old.delivered()); n != 2 {
		t.Fatalf("%d messages at the previous webhook after the fix, want 2", n)
	}
	waitFor(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
}
