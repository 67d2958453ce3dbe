package acr

import (
	"slices"
	"testing"
)

func TestWith_MFAWhenAKnownAndAHeldFactorAreThere(t *testing.T) {
	for _, c := range []struct {
		amr, add, want []string
	}{
		{nil, []string{PWD}, []string{PWD}},
		{[]string{PWD}, []string{OTP}, []string{PWD, OTP, MFA}},
		{[]string{PWD, OTP, MFA}, []string{OTP}, []string{PWD, OTP, MFA}},
		{nil, []string{HWK}, []string{HWK}},
		{nil, []string{HWK, MFA}, []string{HWK, MFA}}, // a passkey that verified the user
		{[]string{PWD}, []string{SWK}, []string{PWD, SWK, MFA}},
		{nil, []string{POP, MFA}, []string{POP, MFA}},           // a passkey (D69)
		{[]string{PWD}, []string{RC}, []string{PWD, RC, MFA}},   // a recovery code is a held factor
		{[]string{FED}, []string{OTP}, []string{FED, OTP, MFA}}, // an upstream sign-in, then a code
		{[]string{PWD}, []string{POP}, []string{PWD, POP, MFA}},
	} {
		if got := With(c.amr, c.add...); !slices.Equal(got, c.want) {
			t.Errorf("With(%v, %v) = %v, want %v", c.amr, c.add, got, c.want)
		}
	}
}

func TestRequestedAndClaim(t *testing.T) {
	for _, c := range []struct {
		values, want string
		ok           bool
	}{
		{"", "", true},
		{"urn:formsservice:acr:2fa", TwoFactor, true},
		{"unknown urn:formsservice:acr:1fa urn:formsservice:acr:2fa", OneFactor, true}, // the first supported
		{"0 1 2", "", false},
		{PAPEMultiFactor, PAPEMultiFactor, true},
	} {
		if got, ok := Requested(c.values); got != c.want || ok != c.ok {
			t.Errorf("Requested(%q) = %q %v, want %q %v", c.values, got, ok, c.want, c.ok)
		}
	}
	two, one := []string{PWD, RC, MFA}, []string{PWD}
	for _, c := range []struct {
		amr             []string
		requested, want string
	}{
		{one, "", OneFactor}, {two, "", TwoFactor}, {two, OneFactor, TwoFactor},
		{two, PAPEMultiFactor, PAPEMultiFactor}, {one, PAPEMultiFactor, OneFactor}, {one, TwoFactor, OneFactor},
	} {
		if got := Claim(c.amr, c.requested); got != c.want {
			t.Errorf("Claim(%v, %q) = %q, want %q", c.amr, c.requested, got, c.want)
		}
	}
}
