package objectstore_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/tests3"
	"github.com/formsservice/formsservice/services/platform/objectstore"
)

// A private S3 endpoint: its certificate is signed by a CA of its own, which AWS_CA_BUNDLE names. With
// the bundle the upload and the download work; without it the system's CAs refuse the certificate.
func TestCABundle_PrivateEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs versitygw")
	}
	srv := tests3.StartTLS(t, "backups")
	env := srv.Env()
	ctx := context.Background()
	loc := objectstore.Location{Bucket: "backups", Key: "site/tls.backup.gz"}
	body := []byte("a backup over TLS")

	without, err := objectstore.New(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := without.Put(ctx, loc, bytes.NewReader(body), int64(len(body))); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA bundle: %v, want a certificate error", err)
	}

	env["AWS_CA_BUNDLE"] = srv.CAFile
	c, err := objectstore.New(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PutStream(ctx, loc, bytes.NewReader(body), objectstore.Object{ContentType: "application/gzip"}); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := c.Get(ctx, loc, &got); err != nil || got.String() != string(body) {
		t.Fatalf("get over TLS: %q, %v", got.String(), err)
	}
}

func TestCABundle_Refused(t *testing.T) {
	base := map[string]string{"AWS_ENDPOINT_URL_S3": "https://s3.example.com", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}
	for name, c := range map[string]struct{ endpoint, bundle, want string }{
		"missing file":   {"https://s3.example.com", t.TempDir() + "/none.pem", "no such file"},
		"no certificate": {"https://s3.example.com", writeFile(t, "not a certificate"), "holds no PEM certificate"},
		"plain http":     {"http://s3.storage:7070", writeFile(t, "x"), "not https"},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		env["AWS_ENDPOINT_URL_S3"], env["AWS_CA_BUNDLE"] = c.endpoint, c.bundle
		if _, err := objectstore.New(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	f := t.TempDir() + "/f"
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
