package config

import (
	"strings"
	"testing"
	"time"
)

// The second factor's settings: defaults for what is left out, every negative value refused by name,
// and requireMFA read per client.
func TestMFA_DefaultsValidationAndRequireMFA(t *testing.T) {
	c, err := Parse([]byte(`
auth:
  mfa: {failures: 3}
  clients:
  - {clientID: app, redirectURIs: ["https://app.example/cb"], requireMFA: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	m := c.Auth.MFA
	if m.Failures != 3 || m.Window.D() != 15*time.Minute || m.ChallengeLifetime.D() != 5*time.Minute || m.EnrolmentLifetime.D() != 15*time.Minute {
		t.Errorf("defaults %+v", m)
	}
	if !c.Auth.Clients[0].RequireMFA {
		t.Error("requireMFA not read")
	}
	c.Auth.MFA = MFA{Failures: -1, Window: Duration(-time.Second), ChallengeLifetime: Duration(-time.Second), EnrolmentLifetime: Duration(-time.Second)}
	err = c.Validate()
	for _, want := range []string{"auth.mfa.failures", "auth.mfa.window", "auth.mfa.challengeLifetime", "auth.mfa.enrolmentLifetime"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s not refused: %v", want, err)
		}
	}
	if _, err := Parse([]byte("auth:\n  mfa: {failure: 3}\n")); err == nil {
		t.Error("an unknown key under auth.mfa was accepted")
	}
}
