package mfa

import (
	"strings"
	"testing"
)

// Whatever is typed into the code field: the parsers never panic, a TOTP code is six ASCII digits, a
// recovery code is sixteen characters of the alphabet, and nothing is both.
func FuzzNormalizeCodes(f *testing.F) {
	for _, s := range []string{"123456", " 123 456 ", "abcd-efgh-jkmn-pqrs", "ABCD EFGH JKMN PQRS", "１２３４５６", "\xff\xfe", strings.Repeat("a", 100), "a-b-c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		code, err := NormalizeCode(s)
		if err == nil {
			if len(code) != 6 || strings.Trim(code, "0123456789") != "" {
				t.Fatalf("NormalizeCode(%q) = %q", s, code)
			}
		}
		rc := NormalizeRecoveryCode(s)
		if rc != "" {
			if len(rc) != recoveryLen || strings.Trim(rc, recoveryAlphabet) != "" {
				t.Fatalf("NormalizeRecoveryCode(%q) = %q", s, rc)
			}
			if err == nil {
				t.Fatalf("%q is both a TOTP code and a recovery code", s)
			}
		}
	})
}
