package email

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	valid := []string{
		"ada@example.com",
		"Ada.Lovelace@Example.COM",
		"a+tag@sub.example.co.uk",
		"o'brien@example.ie",
		"x_y-z=1!#$%&*/?^`{|}~@example.com",
		"ada@bücher.de",        // IDN domain
		"ada@xn--bcher-kva.de", // its ASCII form
		"ada@例え.テスト",           // IDN TLD
		"ada@123.example.com",  // digits in a label are fine
		"ada@example.xn--p1ai", // punycode TLD
		strings.Repeat("a", 64) + "@example.com",
		"a@" + strings.Repeat("b", 63) + ".com",
	}
	invalid := []string{
		"",
		"ada",
		"ada@",
		"@example.com",
		"ada@example",              // no dot in the domain
		"Ada <ada@example.com>",    // display name
		"ada lovelace@example.com", // space
		"ada@exa mple.com",         // space
		`"ada"@example.com`,        // quoted local part
		"ada@@example.com",         //
		"ada@exam@ple.com",         //
		".ada@example.com",         // leading dot
		"ada.@example.com",         // trailing dot
		"a..da@example.com",        // consecutive dots
		"ada@example..com",         // empty label
		"ada@.example.com",         //
		"ada@example.com.",         // trailing dot (FQDN) is not what people type
		"ada@-example.com",         // leading hyphen
		"ada@example-.com",         // trailing hyphen
		"ada@exa_mple.com",         // underscore
		"ada@[127.0.0.1]",          // IP literal
		"ada@127.0.0.1",            // bare IPv4 (numeric TLD)
		"ada@example.123",          // numeric TLD
		"adä@example.com",          // non-ASCII local part
		"ada@example.com\n",        // control character
		"ada(comment)@example.com", // comment
		strings.Repeat("a", 65) + "@example.com",
		"a@" + strings.Repeat("b", 64) + ".com", // label over 63
		"ada@xn--zz.com",                        // punycode that does not decode
		"ada@Xn--zz.com",                        // the same in mixed case
		"ada@xN--zz.com",                        //
	}
	for _, s := range valid {
		if !Valid(s) {
			t.Errorf("Valid(%q) = false, want true", s)
		}
	}
	for _, s := range invalid {
		if Valid(s) {
			t.Errorf("Valid(%q) = true, want false", s)
		}
	}
}

func TestCanonical_SameAddressSameForm(t *testing.T) {
	groups := [][]string{
		{"Ada@Example.com", "ada@example.com", " ADA@EXAMPLE.COM "},
		{"ada@bücher.de", "ADA@BÜCHER.DE", "ada@xn--bcher-kva.de", "ada@Xn--Bcher-kva.de"},
	}
	for _, g := range groups {
		first, ok := Canonical(g[0])
		if !ok {
			t.Fatalf("Canonical(%q) invalid", g[0])
		}
		for _, s := range g[1:] {
			if c, _ := Canonical(s); c != first {
				t.Errorf("Canonical(%q) = %q, want %q", s, c, first)
			}
		}
	}
}
