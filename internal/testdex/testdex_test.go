package testdex

import (
	"net/http"
	"testing"

	dexapi "github.com/dexidp/dex/api/v2"

	"github.com/formsservice/formsservice/internal/testproc"
)

func TestVersion_IsTheOneTheInstallScriptBuilds(t *testing.T) {
	v, err := testproc.ScriptVersion("hack/install-dex.sh", "DEX_VERSION")
	if err != nil || v != Version {
		t.Fatalf("hack/install-dex.sh builds %q (%v), the package runs %q", v, err, Version)
	}
}

// Start answers once discovery names the issuer through the relay; the API adds, lists and deletes an
// account; a static account is read-only.
func TestStart_ServesDiscoveryAndItsAPIManagesAccounts(t *testing.T) {
	ada := Account{Email: "ada@example.com", Password: "correct horse", Username: "Ada"}
	static := Account{Email: "static@example.com", Password: "battery staple", Static: true, Groups: []string{"staff"}}
	d := Start(t, Client{ID: "rp", Secret: "rp-secret", RedirectURIs: []string{"http://127.0.0.1:1/callback"}}, ada, static)
	res, err := http.Get(d.Issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("discovery: %d", res.StatusCode)
	}
	if !d.Exists(t, ada.Email) || !d.Exists(t, static.Email) {
		t.Fatal("the accounts are not listed")
	}
	d.Delete(t, ada.Email)
	if d.Exists(t, ada.Email) {
		t.Fatal("the deleted account is still listed")
	}
	if _, err := d.api.DeletePassword(d.ctx(t), &dexapi.DeletePasswordReq{Email: static.Email}); err == nil || !d.Exists(t, static.Email) {
		t.Fatalf("the static account was deleted (%v)", err)
	}
}
