package auth_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/formsservice/formsservice/services/auth"
	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/platform/backup"
)

// A restore brings back what the backup holds, grants and sessions revoked since included; signing
// every account out after it (what `formsservice restore` does unless --keep-sessions, D68) ends
// them all, while the accounts and their passwords stay.
func TestRestore_BringsBackRevokedGrants_UnlessEverySessionEnds(t *testing.T) {
	ctx := context.Background()
	p := startProvider(t, setup{})
	ada := p.user(testEmail, testPassword)
	p.user("grace@example.com", testPassword)
	adaTokens, adaBrowser := p.fullSignIn(testEmail, testPassword)
	graceTokens, graceBrowser := p.fullSignIn("grace@example.com", testPassword)

	var file bytes.Buffer
	if _, err := backup.Write(ctx, p.rdb, &file, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(file.Bytes())), nil }
	// Each restore goes into an emptied store, as after the loss of the old one.
	restore := func() {
		t.Helper()
		if err := p.rdb.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := backup.Restore(ctx, p.rdb, open, backup.RestoreOptions{Read: backup.ReadOptions{AllowClear: true}}); err != nil {
			t.Fatal(err)
		}
	}

	// After the backup, Ada's grant is revoked (her token was stolen, say).
	if _, _, err := auth.SignOutEverywhere(ctx, p.rdb, p.cfg.Auth, ada); err != nil {
		t.Fatal(err)
	}
	if r := p.refresh(adaTokens.RefreshToken); r.status != http.StatusBadRequest {
		t.Fatalf("a revoked grant refreshed: %d", r.status)
	}
	// A restore of the backup alone brings the revoked grant back: what signing everyone out closes.
	restore()
	if r := p.refresh(adaTokens.RefreshToken); r.status != http.StatusOK {
		t.Fatalf("the restore did not bring the revoked grant back (%d %s): this test no longer shows what it guards", r.status, r.Error)
	}

	restore()
	ended, err := accounts.EndEverySession(ctx, p.rdb, p.cfg.Auth)
	if err != nil {
		t.Fatal(err)
	}
	if ended.Accounts != 2 || ended.Grants != 2 || ended.Sessions != 2 {
		t.Fatalf("ended %+v; want 2 accounts, 2 grants, 2 sessions", ended)
	}
	for name, tk := range map[string]tokens{"Ada's": adaTokens, "Grace's": graceTokens} {
		if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest || r.Error != "invalid_grant" {
			t.Errorf("%s grant from the backup refreshed after the restore: %d %s", name, r.status, r.Error)
		}
		if st := p.userinfoStatus(tk.AccessToken); st != http.StatusUnauthorized {
			t.Errorf("%s access token from the backup passed userinfo: %d", name, st)
		}
	}
	if !p.signedOut(adaBrowser) || !p.signedOut(graceBrowser) {
		t.Error("a browser session from the backup outlived the restore")
	}
	// The accounts themselves are the backup's: their owners sign in again.
	if tk, _ := p.fullSignIn(testEmail, testPassword); tk.RefreshToken == "" {
		t.Error("Ada cannot sign in again after the restore")
	}
}
