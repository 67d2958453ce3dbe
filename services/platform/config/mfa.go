package config

import (
	"fmt"
	"time"
)

// MFA configures the second factor (TOTP and recovery codes) and the account page's sensitive steps.
// Which clients require a second factor is each client's requireMFA.
type MFA struct {
	// SecretKeyFile, when set, is a file of 32 random bytes in base64 (`openssl rand -base64 32`, a
	// mounted Secret): TOTP secrets are stored sealed with it (AES-256-GCM). Without it they are stored
	// as they are. Read at start-up.
	SecretKeyFile string `json:"secretKeyFile,omitempty"`
	// Failures wrong codes (TOTP or recovery) per user within Window, then "try again in N s" until the
	// window ends; slowed down before that by throttle.delayAfter and maxDelay, and counted against the
	// client address's throttle.ipFailures too (package throttle, ReserveCode). Defaults 5 and 15m.
	Failures int      `json:"failures,omitempty"`
	Window   Duration `json:"window,omitempty"`
	// ChallengeLifetime is how long the second step of a sign-in waits for its code after the password
	// was right. Default 5m.
	ChallengeLifetime Duration `json:"challengeLifetime,omitempty"`
	// EnrolmentLifetime is how long a secret shown for enrolment waits to be confirmed. Default 15m.
	EnrolmentLifetime Duration `json:"enrolmentLifetime,omitempty"`
}

func (m *MFA) applyDefaults() {
	if m.Failures == 0 {
		m.Failures = 5
	}
	setDuration(&m.Window, 15*time.Minute)
	setDuration(&m.ChallengeLifetime, 5*time.Minute)
	setDuration(&m.EnrolmentLifetime, 15*time.Minute)
}

func (m MFA) validate() []error {
	var errs []error
	if m.Failures < 0 {
		errs = append(errs, fmt.Errorf("auth.mfa.failures: must not be negative"))
	}
	for _, d := range []struct {
		name string
		d    Duration
	}{{"window", m.Window}, {"challengeLifetime", m.ChallengeLifetime}, {"enrolmentLifetime", m.EnrolmentLifetime}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("auth.mfa.%s: must not be negative", d.name))
		}
	}
	return errs
}
