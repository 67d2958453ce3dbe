package objectstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/tests3"
	"github.com/formsservice/formsservice/services/platform/objectstore"
)

// An STS on loopback: it answers AssumeRoleWithWebIdentity for one token and one role with the
// gateway's keys (versitygw has no STS of its own), so the keys the client uses came from the trade.
// Without a session token, which AWS's STS would add and versitygw refuses as malformed.
func fakeSTS(t *testing.T, token, role string, calls *atomic.Int32) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost || r.Form.Get("Action") != "AssumeRoleWithWebIdentity" ||
			r.Form.Get("WebIdentityToken") != token || r.Form.Get("RoleArn") != role {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Code>AccessDenied</Code><Message>not this identity</Message></Error></ErrorResponse>`)
			return
		}
		calls.Add(1)
		fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>`+
			`<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey>`+
			`<Expiration>%s</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`,
			tests3.AccessKey, tests3.SecretKey, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Without static keys the projected service-account token is traded at STS for the role's keys, and
// the upload is made with them; a token STS refuses fails the upload with STS's answer.
func TestWebIdentity_TradesTheTokenForKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("runs versitygw")
	}
	gw := tests3.Start(t, "backups")
	const role = "arn:aws:iam::111122223333:role/formsservice-backup"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("projected-sa-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	env := map[string]string{"AWS_ENDPOINT_URL_S3": gw.Endpoint, "AWS_REGION": "us-east-1",
		"AWS_WEB_IDENTITY_TOKEN_FILE": tokenFile, "AWS_ROLE_ARN": role,
		"AWS_ENDPOINT_URL_STS": fakeSTS(t, "projected-sa-token", role, &calls)}
	c, err := objectstore.New(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	loc := objectstore.Location{Bucket: "backups", Key: "site/irsa.backup.gz"}
	if err := c.Put(ctx, loc, strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Errorf("%d trades at STS, want 1 (the keys are kept until they near their end)", calls.Load())
	}
	if keys, err := c.List(ctx, "backups", "site/"); err != nil || len(keys) != 1 {
		t.Fatalf("list: %v %v", keys, err)
	}

	if err := os.WriteFile(tokenFile, []byte("another-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused, err := objectstore.New(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := refused.Put(ctx, loc, strings.NewReader("x"), 1); err == nil || !strings.Contains(err.Error(), "not this identity") {
		t.Fatalf("a token STS refuses: %v", err)
	}
}

// Static keys win over a web identity (as in the AWS tools' chain); half of either is an error that
// says which half is missing.
func TestCredentials_Choice(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AWS_ROLE_ARN": "arn:aws:iam::1:role/r"}, "needs both AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN"},
		{map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": "/t"}, "needs both AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN"},
		{map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_ROLE_ARN": "r", "AWS_WEB_IDENTITY_TOKEN_FILE": "/t"}, "need both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		{map[string]string{}, "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN"},
	} {
		if _, err := objectstore.New(func(k string) string { return c.env[k] }); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.env, err, c.want)
		}
	}
}
