package delivery

import (
	"encoding/json"
	"io"
	"mime/quotedprintable"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/files"
	"github.com/formsservice/formsservice/services/forms/notify"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A submission's files reach the team's mail and the webhook as what they are (name, size, type,
// SHA-256) and a signed link on the forms' host that expires with forms.files.linkTTL: never the bytes.
func TestForms_FilesAreDeliveredAsSignedExpiringLinks(t *testing.T) {
	key := strings.Repeat("k", 40)
	keyFile := filepath.Join(t.TempDir(), "link.key")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	hook := startHook(t)
	form := demoDeclaration(config.Webhook{URL: hook.URL})
	form.Autoresponder = nil
	form.Fields = append(form.Fields, config.FormField{Name: "cv", Label: "CV", Type: config.FieldFile})
	cfg := declaredCfg(form)
	cfg.Forms.PublicURL = "https://forms.example.com"
	cfg.Forms.Files = &config.FormFiles{Bucket: "uploads", LinkKeyFile: keyFile, LinkTTL: config.Duration(48 * time.Hour)}
	h := startForms(t, cfg)
	id := strings.Repeat("a", 26)
	f := store.File{Field: "cv", Key: "forms/demo/" + id, Name: "cv.pdf", Size: 1234, Type: "application/pdf", SHA256: strings.Repeat("ab", 32)}
	rec, _ := json.Marshal(store.FormRecord{Form: "demo", Fields: demoFields("Ada", "ada@example.com"), ReceivedAt: time.Now().UTC(), Files: []store.File{f}})
	if r, err := h.store.AddSubmission(t.Context(), store.Submission{Form: "demo", Client: netip.MustParseAddr("127.0.0.1"), Record: rec},
		config.DurabilityProcess); err != nil || r.Outcome != store.Stored {
		t.Fatalf("%+v %v", r, err)
	}
	mails := h.smtp.Wait(t, 1, 10*time.Second)
	testwait.For(t, 10*time.Second, "the webhook", func() bool { return hook.calls() == 1 })
	decoded, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(strings.ReplaceAll(mails[0].Data, "\r\n", "\n"))))
	if err != nil {
		t.Fatal(err)
	}
	body := string(decoded)
	link := regexp.MustCompile(`https://forms\.example\.com/f/demo/files/a{26}\?expires=[0-9]+&sig=[A-Za-z0-9_-]+`).FindString(body)
	if !strings.Contains(body, "CV: cv.pdf (1234 bytes, application/pdf)") || link == "" {
		t.Fatalf("the mail does not name the file with its link:\n%s", mails[0].Data)
	}
	hook.mu.Lock()
	raw := hook.bodies[0]
	hook.mu.Unlock()
	var p notify.FormWebhookPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	var fields struct {
		CV []notify.FileLink `json:"cv"`
	}
	if err := json.Unmarshal(p.Submission.Fields, &fields); err != nil || len(fields.CV) != 1 {
		t.Fatalf("webhook fields %s (%v)", p.Submission.Fields, err)
	}
	got := fields.CV[0]
	if got.Name != "cv.pdf" || got.Size != 1234 || got.SHA256 != f.SHA256 || strings.Contains(string(raw), "JVBER") {
		t.Errorf("webhook file %+v", got)
	}
	u, err := url.Parse(got.URL)
	if err != nil || u.Host != "forms.example.com" || u.Path != "/f/demo/files/"+id {
		t.Fatalf("link %q", got.URL)
	}
	links, _ := files.NewLinks([]byte(key))
	q := u.Query()
	if err := links.Check("demo", id, q.Get("expires"), q.Get("sig"), time.Now()); err != nil {
		t.Errorf("the link does not verify: %v", err)
	}
	if err := links.Check("demo", id, q.Get("expires"), q.Get("sig"), time.Now().Add(49*time.Hour)); err != files.ErrExpiredLink {
		t.Errorf("the link outlives linkTTL: %v", err)
	}
	if d := time.Until(got.Expires); d < 47*time.Hour || d > 48*time.Hour {
		t.Errorf("expires in %v, want 48h", d)
	}
}
