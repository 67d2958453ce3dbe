package signin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/services/auth/claims"
	"github.com/formsservice/formsservice/services/auth/federation"
)

// The second step carries a connector's re-check state and a SAML sign-in's single-logout record to
// the session (D78, D89); a challenge started before D89 (the re-check state alone) still reads.
func TestCarry_ReCheckAndSingleLogoutSurviveTheSecondStep(t *testing.T) {
	up := &claims.Upstream{Connector: "okta", Sealed: "c2VhbGVk", CheckedAt: 42}
	slo := &federation.LogoutToKeep{Connector: "corp", NameHash: "ab12", Sealed: "c2xv"}
	for _, c := range []struct {
		name string
		up   *claims.Upstream
		slo  *federation.LogoutToKeep
	}{{"both", up, slo}, {"re-check only", up, nil}, {"single logout only", nil, slo}, {"nothing", nil, nil}} {
		s := carryUpstream(c.up, c.slo)
		if strings.Contains(s, "|") {
			t.Fatalf("%s: the carry holds a '|': %s", c.name, s)
		}
		gotUp, gotSLO := upstreamCarried(s)
		if (gotUp == nil) != (c.up == nil) || (gotUp != nil && *gotUp != *c.up) {
			t.Errorf("%s: re-check state %+v, want %+v", c.name, gotUp, c.up)
		}
		if (gotSLO == nil) != (c.slo == nil) || (gotSLO != nil && *gotSLO != *c.slo) {
			t.Errorf("%s: single-logout record %+v, want %+v", c.name, gotSLO, c.slo)
		}
	}
	old, _ := json.Marshal(up) // the format before D89
	if gotUp, gotSLO := upstreamCarried(string(old)); gotUp == nil || *gotUp != *up || gotSLO != nil {
		t.Fatalf("an earlier challenge's carry: %+v %+v", gotUp, gotSLO)
	}
}
