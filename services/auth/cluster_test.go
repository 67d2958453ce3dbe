package auth_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/users"
)

// TestCluster_WholeFlowOnThreeMasters runs the flow, its replay and reuse paths, revocation and user
// management on a real 3-master Redis Cluster: every multi-key script touches one family's hash-tagged
// keys, so none of them may fail with CROSSSLOT.
func TestCluster_WholeFlowOnThreeMasters(t *testing.T) {
	cluster := testredis.StartCluster(t, 3, 0)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	p := startProvider(t, setup{rdb: rdb})
	ctx := context.Background()
	sub := p.user(testEmail, testPassword)

	tk, b := p.fullSignIn(testEmail, testPassword)
	prov, err := oidc.NewProvider(ctx, p.base)
	if err != nil {
		t.Fatal(err)
	}
	idt, err := prov.Verifier(&oidc.Config{ClientID: clientID}).Verify(ctx, tk.IDToken)
	if err != nil || idt.Subject != sub {
		t.Fatalf("id_token: %v", err)
	}
	if st := p.userinfoStatus(tk.AccessToken); st != http.StatusOK {
		t.Fatalf("userinfo: %d", st)
	}
	second := p.refresh(tk.RefreshToken)
	if second.status != http.StatusOK {
		t.Fatalf("refresh: %d %s", second.status, second.Error)
	}
	if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest {
		t.Fatalf("reuse: %d", r.status)
	}
	if st := p.userinfoStatus(second.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("family not revoked after reuse: %d", st)
	}

	// Code replay on the cluster.
	verifier := "cluster-verifier-0123456789-0123456789-0123456789"
	code, _ := codeFrom(t, b.get(p.authorizeURL("state-sso-cluster", verifier)), p.redirect) // the SSO session skips the form
	first := p.exchange(code, verifier)
	if first.status != http.StatusOK {
		t.Fatalf("exchange: %d %s", first.status, first.Error)
	}
	if r := p.exchange(code, verifier); r.status != http.StatusBadRequest {
		t.Fatalf("replay: %d", r.status)
	}
	if st := p.userinfoStatus(first.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("replay did not revoke: %d", st)
	}

	// Users: list across masters, delete revokes the user's grants.
	other := p.user("grace@example.com", testPassword)
	seen := map[string]bool{}
	if err := p.svc.Users().List(ctx, func(u *users.User) error { seen[u.ID] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if !seen[sub] || !seen[other] || len(seen) != 2 {
		t.Fatalf("list on the cluster: %v", seen)
	}
	live, _ := p.fullSignIn("grace@example.com", testPassword)
	if _, err := p.svc.Users().Delete(ctx, "grace@example.com"); err != nil {
		t.Fatal(err)
	}
	if n, err := p.svc.Store().RevokeSubject(ctx, other); err != nil || n != 1 {
		t.Fatalf("revoke subject: %d %v", n, err)
	}
	if r := p.refresh(live.RefreshToken); r.status != http.StatusBadRequest {
		t.Fatalf("refresh of a deleted user: %d", r.status)
	}
}
