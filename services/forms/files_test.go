package forms

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/tests3"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/files"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/manage"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/objectstore"
)

// pngBytes starts as every PNG does: what the sniffing knows it by.
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{7}, 300)...)

const linkKey = "0123456789abcdef0123456789abcdef-a-test-key"

// applyForm is a job application: a name, a CV (a PDF or an image, at most 1000 bytes), and up to
// three attachments of any type; at most 1500 bytes of files in all.
func applyForm() config.DeclaredForm {
	return config.DeclaredForm{ID: "apply", Title: "Apply", MaxFileBytes: 1500, Fields: []config.FormField{
		{Name: "name", Type: config.FieldText, Required: true},
		{Name: "email", Type: config.FieldEmail},
		{Name: "cv", Label: "CV", Type: config.FieldFile, Required: true, MaxSize: 1000, Accept: []string{"application/pdf", "image/*"}},
		{Name: "more", Type: config.FieldFile, MaxFiles: 3},
	}}
}

// fileHarness is the service with applyForm, its bucket a real versitygw's; now is its clock.
type fileHarness struct {
	*harness
	s3    *tests3.Server
	store *objectstore.Client
	clock *atomic.Pointer[time.Time]
}

func newFileHarness(t *testing.T, edit ...func(*config.Config)) *fileHarness {
	t.Helper()
	return newFileHarnessWith(t, harnessOpts{}, edit...)
}

// newFileHarnessWith is newFileHarness with o's server settings (readTimeout).
func newFileHarnessWith(t *testing.T, o harnessOpts, edit ...func(*config.Config)) *fileHarness {
	t.Helper()
	if testing.Short() {
		t.Skip("runs versitygw")
	}
	srv := tests3.Start(t, "uploads")
	keyFile := filepath.Join(t.TempDir(), "link.key")
	if err := os.WriteFile(keyFile, []byte(linkKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := declaredConfig(applyForm())
	cfg.Forms.Files = &config.FormFiles{Bucket: "uploads", LinkKeyFile: keyFile}
	for _, e := range edit {
		e(cfg)
	}
	clock := &atomic.Pointer[time.Time]{}
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock.Store(&start)
	env := srv.Env()
	o.cfg, o.s3, o.now = cfg, env, func() time.Time { return *clock.Load() }
	h := newHarness(t, o)
	c, err := objectstore.New(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return &fileHarness{harness: h, s3: srv, store: c, clock: clock}
}

// part is one part of a multipart body: a field, or a file when filename is set (or file is true).
type part struct {
	name, filename, contentType string
	file                        bool
	data                        []byte
}

func field(name, value string) part { return part{name: name, data: []byte(value)} }
func file(name, filename string, data []byte) part {
	return part{name: name, filename: filename, file: true, contentType: "application/octet-stream", data: data}
}

func multipartOf(t *testing.T, parts ...part) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		hdr := textproto.MIMEHeader{}
		if p.file {
			hdr.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, p.name, p.filename))
			hdr.Set("Content-Type", p.contentType)
		} else {
			hdr.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"`, p.name))
		}
		pw, err := w.CreatePart(hdr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = pw.Write(p.data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), b.Bytes()
}

// upload posts parts to /f/apply as a browser's form (or a script's fetch with FormData) does, with
// extra headers as key/value pairs. A form post is answered with a page, in the status the JSON
// answer would have.
func (h *fileHarness) upload(parts []part, kv ...string) formAnswer {
	h.t.Helper()
	ct, body := multipartOf(h.t, parts...)
	return h.postForm("/f/apply", formstest.Origin, ct, string(body), kv...)
}

// expect checks the answer's status, and that its page lists each field (by label) with its message.
func (a formAnswer) expect(t *testing.T, code int, fieldMessages ...string) {
	t.Helper()
	if a.code != code {
		t.Fatalf("got %d, want %d: %s", a.code, code, a.body)
	}
	for i := 0; i+1 < len(fieldMessages); i += 2 {
		if want := fieldMessages[i] + `</a>: <span class="code">` + fieldMessages[i+1]; !strings.Contains(a.body, want) {
			t.Fatalf("the page does not say %q: %s", want, a.body)
		}
	}
}

// objects lists the bucket's keys under the form's prefix.
func (h *fileHarness) objects() []string {
	h.t.Helper()
	keys, err := h.store.List(context.Background(), "uploads", "forms/apply/")
	if err != nil {
		h.t.Fatal(err)
	}
	return keys
}

// filesOnDisk lists every file versitygw holds: objects, and the parts of any multipart upload it
// was never told to complete or abort.
func (h *fileHarness) filesOnDisk() []string {
	h.t.Helper()
	var out []string
	_ = filepath.WalkDir(h.s3.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".vgwlocks" { // the gateway's lock files, empty
			return filepath.SkipDir
		}
		if err == nil && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func (h *fileHarness) object(key string) []byte {
	h.t.Helper()
	var b bytes.Buffer
	if _, err := h.store.Get(context.Background(), objectstore.Location{Bucket: "uploads", Key: key}, &b); err != nil {
		h.t.Fatal(err)
	}
	return b.Bytes()
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// A PNG and an empty file are stored in the bucket, and the record says where, how large, of what
// type (sniffed) and with which SHA-256; the name is the last segment of what the browser sent.
func TestFiles_StoredWithKeySizeTypeAndHashInTheRecord(t *testing.T) {
	h := newFileHarness(t)
	h.upload([]part{field("name", "Ada"), file("cv", `C:\Users\ada\cv.png`, pngBytes), file("more", "empty.txt", nil)}).expect(t, 201)
	recs := storedForm(t, h.harness, "apply")
	if len(recs) != 1 || len(recs[0].Files) != 2 {
		t.Fatalf("records %+v", recs)
	}
	cv, empty := recs[0].Files[0], recs[0].Files[1]
	if cv.Field != "cv" || cv.Name != "cv.png" || cv.Size != int64(len(pngBytes)) || cv.Type != "image/png" || cv.SHA256 != sum(pngBytes) {
		t.Errorf("cv %+v", cv)
	}
	if empty.Field != "more" || empty.Size != 0 || empty.Type != files.EmptyType || empty.SHA256 != sum(nil) {
		t.Errorf("empty file %+v", empty)
	}
	for _, f := range recs[0].Files {
		id, ok := strings.CutPrefix(f.Key, "forms/apply/")
		if !ok || !files.ValidID(id) {
			t.Errorf("key %q: want forms/apply/<26 random base32>", f.Key)
		}
	}
	if cv.Key == empty.Key {
		t.Error("two files share a key")
	}
	if got := h.object(cv.Key); !bytes.Equal(got, pngBytes) {
		t.Errorf("the bucket holds %d bytes, not the PNG", len(got))
	}
	if got := h.objects(); len(got) != 2 {
		t.Errorf("objects %v", got)
	}
	// The export lists them: JSON lines as the record has them, CSV in a "files" column.
	for _, format := range []string{store.FormatCSV, store.FormatJSONL} {
		var out bytes.Buffer
		if _, err := store.ExportForm(context.Background(), h.rdb, &out, format, "apply"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), cv.SHA256) || !strings.Contains(out.String(), cv.Key) {
			t.Errorf("the %s export does not list the files:\n%s", format, out.String())
		}
	}
	// So does the admin API's submission (package manage, which serves it).
	page, err := manage.New(manage.Options{Redis: h.rdb}).Submissions(context.Background(), "apply", manage.Query{Limit: 10})
	if err != nil || len(page.Submissions) != 1 || len(page.Submissions[0].Files) != 2 || page.Submissions[0].Files[0] != cv {
		t.Errorf("the admin API's submission: %+v, %v", page, err)
	}
	// Redis holds what the record says of the files, never their bytes.
	raw, _ := h.rdb.XRange(context.Background(), store.FormStream("apply"), "-", "+").Result()
	if strings.Contains(fmt.Sprint(raw), "IHDR") {
		t.Error("the file's bytes are in Redis")
	}
}

// A file one byte over its field's maxSize is refused, naming the field, and leaves nothing in the
// bucket; one of exactly maxSize is taken.
func TestFiles_OneByteOverTheLimitIsRefusedAndLeavesNothing(t *testing.T) {
	h := newFileHarness(t)
	pdf := func(n int) []byte { return append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("x"), n-9)...) }
	h.upload([]part{field("name", "Ada"), file("cv", "cv.pdf", pdf(1001))}).expect(t, 400, "CV", "each file may be at most 1000 bytes.")
	if got := h.filesOnDisk(); len(got) != 0 || len(storedForm(t, h.harness, "apply")) != 0 {
		t.Fatalf("left behind: %v", got)
	}
	h.upload([]part{field("name", "Ada"), file("cv", "cv.pdf", pdf(1000))}).expect(t, 201)
	if recs := storedForm(t, h.harness, "apply"); len(recs) != 1 || recs[0].Files[0].Type != "application/pdf" {
		t.Fatalf("records %+v", recs)
	}
}

// The type is what the bytes show: text named cv.png and sent as image/png is refused; so is a second
// file where one is taken, and files past the form's maxFileBytes (413). None leaves an object.
func TestFiles_LyingTypeTooManyFilesAndTotalLimit(t *testing.T) {
	h := newFileHarness(t)
	liar := file("cv", "cv.png", []byte("just some text, not an image at all"))
	liar.contentType = "image/png"
	h.upload([]part{field("name", "Ada"), liar}).expect(t, 400, "CV", "this kind of file is not taken; it takes application/pdf, image/*.")
	h.upload([]part{field("name", "Ada"), file("cv", "a.png", pngBytes), file("cv", "b.png", pngBytes)}).expect(t, 400, "CV", "please choose one file.")
	big := bytes.Repeat([]byte("y"), 700)
	a := h.upload([]part{field("name", "Ada"), file("cv", "cv.png", pngBytes), file("more", "a", big), file("more", "b", big)})
	a.expect(t, 413)
	if !strings.Contains(a.body, "1500 bytes in all") {
		t.Fatalf("the 413 page does not say the form's limit: %s", a.body)
	}
	// The text fields beside the files keep the 16 KB limit.
	h.upload([]part{file("cv", "cv.png", pngBytes), field("name", "Ada"), field("more_text", strings.Repeat("x", MaxBodyBytes))}).expect(t, 413)
	if got := h.filesOnDisk(); len(got) != 0 || len(storedForm(t, h.harness, "apply")) != 0 {
		t.Fatalf("left behind: %v", got)
	}
}

// A submission refused after its files were stored — a field invalid, the rate limit — removes them;
// so does a replay of its Idempotency-Key, which stores nothing anew.
func TestFiles_RefusedOrReplayedSubmissionLeavesNoObject(t *testing.T) {
	h := newFileHarness(t, func(c *config.Config) { c.Forms.RateLimitPerMinute = perMinute(2) })
	h.upload([]part{file("cv", "cv.png", pngBytes), field("name", strings.Repeat("n", 300))}).expect(t, 400, "name", "at most 200 characters.")
	if got := h.objects(); len(got) != 0 {
		t.Fatalf("a refused submission left %v", got)
	}
	ok := []part{field("name", "Ada"), file("cv", "cv.png", pngBytes)}
	h.upload(ok, IdempotencyKeyHeader, "k-1").expect(t, 201)
	if a := h.upload(ok, IdempotencyKeyHeader, "k-1"); a.code != 201 || a.header.Get(IdempotentReplayedHeader) != "true" {
		t.Fatalf("replay: %d %v", a.code, a.header)
	}
	if got := h.objects(); len(got) != 1 {
		t.Fatalf("after a replay the bucket holds %v, want the first file only", got)
	}
	h.upload(ok).expect(t, 429) // the replay took nothing; these two requests are the minute's 3rd
	if got := h.objects(); len(got) != 1 {
		t.Fatalf("a rate-limited submission left %v", got)
	}
	if n := len(storedForm(t, h.harness, "apply")); n != 1 {
		t.Fatalf("%d records", n)
	}
}

// A file field takes files only from a multipart body: a JSON or urlencoded body that names it with a
// string is a 400 naming it; a required one without a file is required.
func TestFiles_AStringForAFileFieldIsRefusedByName(t *testing.T) {
	h := newFileHarness(t)
	if a := h.post("/f/apply", `{"name":"Ada","cv":"cv.pdf"}`); a.code != 400 || a.errors["cv"] != CodeInvalidType {
		t.Fatalf("JSON: %d %s", a.code, a.raw)
	}
	h.postForm("/f/apply", formstest.Origin, formCT, urlencoded("name", "Ada", "cv", "cv.pdf")).expect(t, 400, "CV", "this kind of file is not taken")
	h.upload([]part{field("name", "Ada"), field("cv", "cv.pdf")}).expect(t, 400, "CV", "this kind of file is not taken")
	h.upload([]part{field("name", "Ada"), {name: "cv", file: true, contentType: "application/octet-stream"}}).expect(t, 400, "CV", "please choose a file.") // left empty
	a := h.upload([]part{field("name", "Ada"), file("cv", "cv.png", pngBytes), file("other", "x.png", pngBytes)})
	if a.expect(t, 400); !strings.Contains(a.body, `The form: <span class="code">it could not be read`) {
		t.Fatalf("a file for no file field: %s", a.body)
	}
	if got := h.filesOnDisk(); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
}

// Twenty uploads at once are all stored, each record naming its own bytes.
func TestFiles_TwentyParallelUploadsAreNotMixedUp(t *testing.T) {
	h := newFileHarness(t)
	var wg sync.WaitGroup
	codes := make([]int, 20)
	for i := range 20 {
		wg.Go(func() {
			data := append(append([]byte{}, pngBytes...), fmt.Sprintf("upload %02d", i)...)
			ct, body := multipartOf(t, field("name", fmt.Sprintf("n%02d", i)), file("cv", fmt.Sprintf("%02d.png", i), data))
			req, _ := http.NewRequest(http.MethodPost, h.url+"/f/apply", bytes.NewReader(body))
			req.Header.Set("Origin", formstest.Origin)
			req.Header.Set("Content-Type", ct)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	recs := storedForm(t, h.harness, "apply")
	if len(recs) != 20 {
		t.Fatalf("%d records, codes %v", len(recs), codes)
	}
	for _, r := range recs {
		name := r.Fields.Get("name").(string)
		want := append(append([]byte{}, pngBytes...), "upload "+name[1:]...)
		f := r.Files[0]
		if f.Name != name[1:]+".png" || f.SHA256 != sum(want) || !bytes.Equal(h.object(f.Key), want) {
			t.Errorf("record %s: file %+v is not its own", name, f)
		}
	}
}

// A client that goes away in the middle of a file (past the first 5 MiB part, so that a multipart
// upload is under way) leaves nothing in the bucket, not even the upload's parts.
func TestFiles_AnAbortedUploadLeavesNothing(t *testing.T) {
	h := newFileHarness(t, func(c *config.Config) {
		f := c.Forms.FindDeclared("apply")
		f.MaxFileBytes = 20 << 20
		f.Fields[3].MaxSize = 20 << 20
	})
	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	boundary := "b0undary"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"more\"; filename=\"big.bin\"\r\n\r\n"
	fmt.Fprintf(conn, "POST /f/apply HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n%s",
		h.addr, formstest.Origin, boundary, 12<<20, head)
	chunk := bytes.Repeat([]byte("z"), 64<<10)
	for range 7 << 20 / len(chunk) {
		if _, err := conn.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	before := h.counter("formsservice_forms_submissions_total", "endpoint", "declared", "result", "unreadable")
	conn.Close()
	testwait.For(t, 30*time.Second, "the service to give up the upload", func() bool {
		return h.counter("formsservice_forms_submissions_total", "endpoint", "declared", "result", "unreadable") > before
	})
	if got := h.filesOnDisk(); len(got) != 0 {
		t.Fatalf("an aborted upload left %v", got)
	}
}

// The store down is the store's failure, 502, as Redis down is.
func TestFiles_ABucketThatCannotBeReachedIs502(t *testing.T) {
	h := newFileHarness(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	h.harness.svc.s3env = func(k string) string {
		if k == "AWS_ENDPOINT_URL_S3" {
			return dead
		}
		return h.s3.Env()[k]
	}
	h.svc.compiled.Store(nil)
	h.upload([]part{field("name", "Ada"), file("cv", "cv.png", pngBytes)}).expect(t, 502)
}

// The link a notification carries downloads the file until it expires; a changed signature, id or
// expiry is refused.
func TestFiles_DownloadLinkWorksUntilItExpiresAndRefusesTampering(t *testing.T) {
	h := newFileHarness(t)
	h.upload([]part{field("name", "Ada"), file("cv", "my cv.png", pngBytes)}).expect(t, 201)
	f := storedForm(t, h.harness, "apply")[0].Files[0]
	id := strings.TrimPrefix(f.Key, "forms/apply/")
	links, _ := files.NewLinks([]byte(linkKey))
	link := links.URL(h.url, "apply", id, h.clock.Load().Add(time.Hour))
	get := func(u string) (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, body := get(link)
	if resp.StatusCode != 200 || !bytes.Equal(body, pngBytes) || resp.Header.Get("Content-Type") != "image/png" ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Content-Disposition") != `attachment; filename="my cv.png"` {
		t.Fatalf("download: %d %v (%d bytes)", resp.StatusCode, resp.Header, len(body))
	}
	if resp, err := http.Head(link); err != nil || resp.StatusCode != 200 || resp.ContentLength != int64(len(pngBytes)) {
		t.Fatalf("HEAD: %v %v", resp, err)
	}
	u, _ := url.Parse(link)
	q := u.Query()
	sig := q.Get("sig")
	for name, bad := range map[string]func() string{
		"signature": func() string {
			q := u.Query()
			q.Set("sig", sig[:len(sig)-1]+flip(sig[len(sig)-1]))
			return h.url + u.Path + "?" + q.Encode()
		},
		"expiry": func() string {
			q := u.Query()
			q.Set("expires", "9999999999")
			return h.url + u.Path + "?" + q.Encode()
		},
		"id":     func() string { return strings.Replace(link, id, strings.Repeat("a", 26), 1) },
		"form":   func() string { return strings.Replace(link, "/f/apply/", "/f/other/", 1) },
		"no sig": func() string { return h.url + u.Path },
	} {
		if resp, body := get(bad()); resp.StatusCode != 403 || !strings.Contains(string(body), "invalid_link") {
			t.Errorf("a changed %s: %d %s", name, resp.StatusCode, body)
		}
	}
	later := h.clock.Load().Add(time.Hour)
	h.clock.Store(&later)
	if resp, body := get(link); resp.StatusCode != 403 || !strings.Contains(string(body), "link_expired") {
		t.Fatalf("an expired link: %d %s", resp.StatusCode, body)
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// Erasing an address (formsservice forget) and a form's retention delete the files of the submissions
// they erase: queued in Redis where the erasure runs, deleted from the bucket by the forms service.
func TestFiles_ForgetAndRetentionDeleteTheObjects(t *testing.T) {
	h := newFileHarness(t)
	ctx := context.Background()
	h.upload([]part{field("name", "Ada"), field("email", "ada@example.com"), file("cv", "ada.png", pngBytes)}).expect(t, 201)
	h.upload([]part{field("name", "Bob"), field("email", "bob@example.com"), file("cv", "bob.png", pngBytes)}).expect(t, 201)
	bob := storedForm(t, h.harness, "apply")[1].Files[0].Key
	if _, err := store.Forget(ctx, h.rdb, "Ada@Example.com"); err != nil {
		t.Fatal(err)
	}
	if n, err := h.svc.SweepFileErasures(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if got := h.objects(); len(got) != 1 || got[0] != bob {
		t.Fatalf("after forgetting Ada the bucket holds %v, want Bob's %s only", got, bob)
	}
	if _, err := store.FormQueue("apply").Trim(ctx, h.rdb, time.Hour, false, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, err := h.svc.SweepFileErasures(ctx); err != nil || n != 1 {
		t.Fatalf("sweep after retention: %d, %v", n, err)
	}
	if got := h.filesOnDisk(); len(got) != 0 || len(storedForm(t, h.harness, "apply")) != 0 {
		t.Fatalf("after retention: %v", got)
	}
	if n, _ := h.rdb.SCard(ctx, store.FileErasures).Result(); n != 0 {
		t.Fatalf("%d keys still queued", n)
	}
}
