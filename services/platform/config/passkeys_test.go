package config

import (
	"strings"
	"testing"
	"time"
)

func TestPasskeys_DefaultsOnAndBounds(t *testing.T) {
	c, err := Parse([]byte("publicURL: https://id.example.com\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if !c.Auth.Passkeys.On() || c.Auth.Passkeys.Timeout.D() != 5*time.Minute || c.Auth.Passkeys.RPName != "" {
		t.Errorf("defaults: %+v, want on, 5m, the RP name left to the issuer's host", c.Auth.Passkeys)
	}
	c, err = Parse([]byte("auth:\n  passkeys: {enabled: false, rpName: Acme, timeout: 2m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Auth.Passkeys.On() || c.Auth.Passkeys.RPName != "Acme" || c.Auth.Passkeys.Timeout.D() != 2*time.Minute {
		t.Errorf("parsed %+v", c.Auth.Passkeys)
	}
	for yaml, want := range map[string]string{
		"timeout: 30s":                       "auth.passkeys.timeout 30s: between 1m and 10m",
		"timeout: 11m":                       "between 1m and 10m",
		"rpName: " + strings.Repeat("x", 65): "auth.passkeys.rpName: at most 64 bytes",
		"unknown: 1":                         "unknown",
	} {
		c, err := Parse([]byte("auth:\n  passkeys: {" + yaml + "}\n"))
		if err == nil {
			c.ApplyDefaults()
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", yaml, err, want)
		}
	}
}
