package auth_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/tests3"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/auth/audit"
	formsservice "github.com/formsservice/formsservice/services/forms"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A console's download links (D83): the admin API grants one download of a submission's file in the
// store, and the forms service, which alone holds the bucket's credentials and the key of the mails'
// links, serves it once. Against a real versitygw, redis-server and forms service.

// pdfBytes start as every PDF does: what the forms service's sniffing knows it by.
var pdfBytes = append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("cv "), 200)...)

// filesSetup is a provider and a forms service with the declared form "apply" (a name and a CV) whose
// files go to a versitygw bucket.
type filesSetup struct {
	*adminProvider
	rdb   redis.UniversalClient
	forms string
}

// withApplyForm gives the forms service the form "apply" with a file field, its bucket on s3.
func withApplyForm(t *testing.T, s3 *tests3.Server) func(*formsservice.Options) {
	keyFile := filepath.Join(t.TempDir(), "link.key")
	if err := os.WriteFile(keyFile, []byte("0123456789abcdef0123456789abcdef-mails-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := s3.Env()
	return func(o *formsservice.Options) {
		cfg := o.Config.Current()
		cfg.Forms.Declared = append(cfg.Forms.Declared, config.DeclaredForm{ID: "apply", Title: "Apply", Fields: []config.FormField{
			{Name: "name", Type: config.FieldText, Required: true},
			{Name: "cv", Label: "CV", Type: config.FieldFile, Required: true, Accept: []string{"application/pdf"}}}})
		cfg.Forms.Files = &config.FormFiles{Bucket: "uploads", LinkKeyFile: keyFile}
		o.S3Env = func(k string) string { return env[k] }
	}
}

func startFilesSetup(t *testing.T) *filesSetup {
	t.Helper()
	if testing.Short() {
		t.Skip("runs versitygw")
	}
	s3 := tests3.Start(t, "uploads")
	rdb := testredis.Start(t, testredis.Options{AppendFsync: "no"}).Client()
	t.Cleanup(func() { rdb.Close() })
	forms := startDemoFormsService(t, rdb, withApplyForm(t, s3))
	testwait.For(t, 10*time.Second, "the forms service to publish its declared forms", func() bool {
		_, ok, err := store.ReadCatalog(context.Background(), rdb)
		return err == nil && ok
	})
	// The provider's configuration names where the forms are served; it holds no link key.
	p := startAdminProviderOn(t, false, rdb, func(c *config.Config) { c.Forms.PublicURL = forms })
	return &filesSetup{adminProvider: p, rdb: rdb, forms: forms}
}

// apply posts a job application with a CV as a browser's form does, and returns its submission's ID
// and the CV's file id.
func (f *filesSetup) apply(name, file string, data []byte) (string, string) {
	f.t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.WriteField("name", name)
	part, _ := w.CreateFormFile("cv", file)
	_, _ = part.Write(data)
	_ = w.Close()
	req, _ := http.NewRequest(http.MethodPost, f.forms+"/f/apply", &b)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Origin", formsOrigin)
	req.Header.Set("Accept", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		f.t.Fatalf("POST /f/apply: %d %s", res.StatusCode, raw)
	}
	msgs := f.rdb.XRevRangeN(f.t.Context(), store.FormStream("apply"), "+", "-", 1).Val()
	if len(msgs) != 1 {
		f.t.Fatal("the application was not stored")
	}
	id := store.MessageID(msgs[0])
	a := f.api(get("/admin/v1/forms/apply/submissions/"+id, f.token(formsClient, "forms:read")))
	files, _ := a.body["files"].([]any)
	if a.status != http.StatusOK || len(files) != 1 {
		f.t.Fatalf("the submission's files: %d %s", a.status, a.raw)
	}
	return id, path.Base(files[0].(map[string]any)["key"].(string))
}

func download(t *testing.T, link string) (int, http.Header, []byte) {
	t.Helper()
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

// The link the admin API makes downloads the file from the forms service once, as an attachment; a
// second use, a changed grant, another file's path and a made-up grant are refused. Making it needs
// forms:read, names a file of the submission (404 otherwise) and is audited with the token's subject.
func TestAdminAPI_FileLink_DownloadsTheFileOnceFromTheFormsService(t *testing.T) {
	f := startFilesSetup(t)
	id, fileID := f.apply("Ada", "ada cv.pdf", pdfBytes)
	otherID, otherFile := f.apply("Bob", "bob.pdf", append([]byte("%PDF-1.4\n"), "bob's"...))
	read := f.token(formsClient, "forms:read")
	linkPath := fmt.Sprintf("/admin/v1/forms/apply/submissions/%s/files/%s/link", id, fileID)

	before := time.Now()
	a := f.api(post(linkPath, read, ""))
	link, _ := a.body["url"].(string)
	if a.status != http.StatusOK || !strings.HasPrefix(link, f.forms+"/f/apply/files/"+fileID+"?grant=") || a.body["name"] != "ada cv.pdf" ||
		a.body["type"] != "application/pdf" || a.body["size"] != float64(len(pdfBytes)) {
		t.Fatalf("the link: %d %s", a.status, a.raw)
	}
	if exp, err := time.Parse(time.RFC3339, a.body["expires_at"].(string)); err != nil || exp.Before(before.Add(4*time.Minute)) || exp.After(time.Now().Add(5*time.Minute)) {
		t.Errorf("expires_at %v (%v), want five minutes from now", a.body["expires_at"], err)
	}
	if strings.Contains(link, "sig=") || strings.Contains(link, "expires=") {
		t.Errorf("the link is a signed one: %s", link)
	}

	code, hdr, body := download(t, link)
	if code != http.StatusOK || !bytes.Equal(body, pdfBytes) || hdr.Get("Content-Disposition") != `attachment; filename="ada cv.pdf"` ||
		hdr.Get("X-Content-Type-Options") != "nosniff" || hdr.Get("Cache-Control") != "private, no-store" {
		t.Fatalf("download: %d %v (%d bytes)", code, hdr, len(body))
	}
	if code, _, body := download(t, link); code != http.StatusForbidden || !strings.Contains(string(body), "invalid_link") {
		t.Errorf("the link used again: %d %s", code, body)
	}

	// A grant opens only its own file, and only in full.
	fresh, _ := f.api(post(linkPath, read, "{}")).body["url"].(string)
	grant := fresh[strings.Index(fresh, "grant=")+len("grant="):]
	for name, bad := range map[string]string{
		"another file's path": f.forms + "/f/apply/files/" + otherFile + "?grant=" + grant,
		"a made-up grant":     f.forms + "/f/apply/files/" + fileID + "?grant=" + strings.Repeat("A", 43),
		"a grant too short":   f.forms + "/f/apply/files/" + fileID + "?grant=abc",
	} {
		if code, _, body := download(t, bad); code != http.StatusForbidden || !strings.Contains(string(body), "invalid_link") {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	if code, _, _ := download(t, fresh); code != http.StatusForbidden {
		t.Errorf("a grant tried on another file still opens its own: %d", code)
	}

	problemOf(t, "no token", f.api(apiCall{method: http.MethodPost, path: linkPath, badRequest: true}), http.StatusUnauthorized)
	problemOf(t, "users:read only", f.api(post(linkPath, f.token(opsClient, "users:read"), "")), http.StatusForbidden)
	problemOf(t, "another submission's file", f.api(post(fmt.Sprintf("/admin/v1/forms/apply/submissions/%s/files/%s/link", otherID, fileID), read, "")), http.StatusNotFound)
	problemOf(t, "not a file id", f.api(post(fmt.Sprintf("/admin/v1/forms/apply/submissions/%s/files/nope/link", id), read, "")), http.StatusNotFound)
	problemOf(t, "an unknown submission", f.api(post("/admin/v1/forms/apply/submissions/1-0/files/"+fileID+"/link", read, "")), http.StatusNotFound)
	problemOf(t, "a form without files", f.api(post("/admin/v1/forms/demo/submissions/"+id+"/files/"+fileID+"/link", read, "")), http.StatusNotFound)

	var made []audit.Event
	for _, e := range trail(t, f.provider) {
		if e.Kind == audit.FormFileLinkMade {
			made = append(made, e)
		}
	}
	if len(made) != 2 || made[0].Actor != audit.ActorAdmin || made[0].Client != formsClient || made[0].Detail[audit.DetailActorSub] != formsClient ||
		made[0].Detail["form"] != "apply" || made[0].Detail["id"] != id || made[0].Detail["file"] != fileID {
		t.Fatalf("audit: %+v", made)
	}
}
