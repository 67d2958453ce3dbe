package objectstore_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/tests3"
	"github.com/formsservice/formsservice/services/platform/objectstore"
)

// An object put into a real S3-compatible server (versitygw) comes back byte for byte; a missing one,
// a wrong key and a wrong secret are errors that say so.
func TestPutGet_RealS3Server(t *testing.T) {
	if testing.Short() {
		t.Skip("runs versitygw")
	}
	srv := tests3.Start(t, "backups")
	env := srv.Env()
	c, err := objectstore.New(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	body := bytes.Repeat([]byte("a backup, "), 100_000) // 1 MB
	loc := objectstore.Location{Bucket: "backups", Key: "site/one.backup.gz"}
	if err := c.Put(ctx, loc, bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if n, err := c.Get(ctx, loc, &got); err != nil || n != int64(len(body)) || !bytes.Equal(got.Bytes(), body) {
		t.Fatalf("get: %d bytes, %v", n, err)
	}
	if _, err := c.Get(ctx, objectstore.Location{Bucket: "backups", Key: "site/none"}, &got); err == nil || !strings.Contains(err.Error(), "s3://backups/site/none") {
		t.Fatalf("a missing object: %v", err)
	}
	env["AWS_SECRET_ACCESS_KEY"] = "not the secret"
	bad, _ := objectstore.New(func(k string) string { return env[k] })
	if err := bad.Put(ctx, loc, bytes.NewReader(body), int64(len(body))); err == nil {
		t.Fatal("a wrong secret was accepted")
	}
}

func TestParseLocation(t *testing.T) {
	for _, bad := range []string{"s3://", "s3://bucket", "s3://bucket/", "s3:///key", "s3://bucket/dir/", "/tmp/x", "S3://b/k"} {
		if _, err := objectstore.ParseLocation(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	l, err := objectstore.ParseLocation("s3://backups/site/a.backup.gz")
	if err != nil || l.Bucket != "backups" || l.Key != "site/a.backup.gz" || l.String() != "s3://backups/site/a.backup.gz" {
		t.Fatalf("%+v %v", l, err)
	}
}

func TestNew_RefusesAnEndpointItCannotUse(t *testing.T) {
	for _, ep := range []string{"ftp://host", "http://", "http://host/path", "::"} {
		env := map[string]string{"AWS_ENDPOINT_URL_S3": ep, "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}
		if _, err := objectstore.New(func(k string) string { return env[k] }); err == nil {
			t.Errorf("endpoint %q accepted", ep)
		}
	}
	if _, err := objectstore.New(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Errorf("no credentials: %v", err)
	}
}
