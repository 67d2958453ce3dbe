package objectstore_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/formsservice/formsservice/internal/tests3"
	"github.com/formsservice/formsservice/services/platform/objectstore"
)

// headerRecorder passes every request on to the real gateway, keeping the headers of the ones that
// create an object (PutObject, CreateMultipartUpload): the gateway accepts SSE headers but neither
// stores nor answers them (versitygw's posix backend encrypts nothing), so the request is where the
// option can be seen.
type headerRecorder struct {
	mu      sync.Mutex
	creates []http.Header
}

func (h *headerRecorder) proxy(t *testing.T, endpoint string) string {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // the client signed the proxy's host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, uploads := r.URL.Query()["uploads"]
		if (r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "") || (r.Method == http.MethodPost && uploads) {
			h.mu.Lock()
			h.creates = append(h.creates, r.Header.Clone())
			h.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Every upload, small or in parts, asks for the server-side encryption FORMSSERVICE_S3_SSE names, and
// SSE-KMS names its key; without the option no upload asks for any.
func TestServerSideEncryption_EveryUploadAsks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs versitygw")
	}
	gw := tests3.Start(t, "backups")
	big := bytes.Repeat([]byte("x"), objectstore.StreamPartSize+1) // a multipart upload
	for _, c := range []struct {
		sse, key        string
		wantSSE, wantID string
	}{
		{"", "", "", ""},
		{"AES256", "", "AES256", ""},
		{"aws:kms", "", "aws:kms", ""},
		{"aws:kms", "arn:aws:kms:eu-west-1:111122223333:key/backups", "aws:kms", "arn:aws:kms:eu-west-1:111122223333:key/backups"},
	} {
		rec := &headerRecorder{}
		env := gw.Env()
		env["AWS_ENDPOINT_URL_S3"] = rec.proxy(t, gw.Endpoint)
		env["FORMSSERVICE_S3_SSE"], env["FORMSSERVICE_S3_SSE_KMS_KEY_ID"] = c.sse, c.key
		cl, err := objectstore.New(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := cl.Put(ctx, objectstore.Location{Bucket: "backups", Key: "small"}, strings.NewReader("small"), 5); err != nil {
			t.Fatal(err)
		}
		if err := cl.PutStream(ctx, objectstore.Location{Bucket: "backups", Key: "big"}, bytes.NewReader(big), objectstore.Object{}); err != nil {
			t.Fatal(err)
		}
		if len(rec.creates) != 2 {
			t.Fatalf("%q: %d object creations seen, want 2 (a PUT and a multipart upload)", c.sse, len(rec.creates))
		}
		for i, h := range rec.creates {
			if got := h.Get("X-Amz-Server-Side-Encryption"); got != c.wantSSE {
				t.Errorf("%q, upload %d: x-amz-server-side-encryption %q, want %q", c.sse, i, got, c.wantSSE)
			}
			if got := h.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"); got != c.wantID {
				t.Errorf("%q, upload %d: KMS key id %q, want %q", c.sse, i, got, c.wantID)
			}
		}
	}
}

func TestServerSideEncryption_Refused(t *testing.T) {
	for _, c := range []struct{ sse, key, want string }{
		{"aes256", "", "neither AES256 nor aws:kms"},
		{"aws:kms:dsse", "", "neither"},
		{"AES256", "key", "needs FORMSSERVICE_S3_SSE=aws:kms"},
		{"", "key", "needs FORMSSERVICE_S3_SSE=aws:kms"},
	} {
		env := map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "FORMSSERVICE_S3_SSE": c.sse, "FORMSSERVICE_S3_SSE_KMS_KEY_ID": c.key}
		if _, err := objectstore.New(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q/%q: %v, want %q", c.sse, c.key, err, c.want)
		}
	}
}
