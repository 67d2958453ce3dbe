// Package email is the one e-mail address rule of the platform (docs/architecture.md, D3): what a form accepts and the
// canonical form that uniqueness, sign-in and erasure compare. Forms and auth both use it, so that an
// address means the same thing to the waitlist and to the account store.
package email

import (
	"strings"

	"golang.org/x/net/idna"
)

// MaxLocal is the longest local part (RFC 5321 section 4.5.3.1.1).
const MaxLocal = 64

// MaxLen is the longest address in characters: RFC 5321's 256-octet path limit less the angle brackets.
// Every form and the sign-in page hold an address to it.
const MaxLen = 254

// emailDomains validates and converts internationalised domains to their ASCII (punycode) form, with
// the checks a mail system applies: letters, digits and hyphens per label, DNS lengths, bidi rules.
var emailDomains = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.VerifyDNSLength(true),
	idna.StrictDomainName(true), idna.ValidateLabels(true), idna.CheckHyphens(true), idna.CheckJoiners(true))

// Valid reports whether s is an address a person can type into a form and receive mail at: a bare
// addr-spec (no display name, no comments, no quoted local part, no IP literal), no spaces, a dot-atom
// local part of at most 64 characters, and a domain with at least two labels whose last is not all
// digits. Internationalised domains are allowed. The caller checks MaxLen.
func Valid(s string) bool {
	_, ok := asciiEmail(s)
	return ok
}

// Canonical is the form two spellings of one address share: lower case, with an internationalised
// domain in its ASCII form. Waitlist uniqueness and erasure requests compare it. ok is false for an
// invalid address.
func Canonical(s string) (string, bool) {
	return asciiEmail(strings.ToLower(strings.TrimSpace(s)))
}

func asciiEmail(s string) (string, bool) {
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return "", false
	}
	local, domain := s[:at], s[at+1:]
	if !validLocal(local) {
		return "", false
	}
	ascii, ok := asciiDomain(domain)
	if !ok {
		return "", false
	}
	if ascii == domain {
		return s, true // the common case: nothing to convert, nothing to allocate
	}
	return local + "@" + ascii, true
}

// validLocal accepts RFC 5322 dot-atom text: atext characters separated by single dots.
func validLocal(local string) bool {
	if len(local) == 0 || len(local) > MaxLocal || local[0] == '.' || local[len(local)-1] == '.' {
		return false
	}
	prevDot := false
	for i := 0; i < len(local); i++ {
		c := local[i]
		if c == '.' {
			if prevDot {
				return false
			}
			prevDot = true
			continue
		}
		prevDot = false
		if !isAtext(c) {
			return false
		}
	}
	return true
}

func isAtext(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0
}

// asciiDomain returns the domain in ASCII, or false when it is not a host name one can send mail to.
// Plain ASCII names take a fast path; anything else (including punycode labels in any case, which must
// decode) goes through IDNA. The case matters: Canonical lower-cases first, so a label such as
// "Xn--zz" that skipped IDNA here would be refused there, and the waitlist would have no key for it.
func asciiDomain(d string) (string, bool) {
	if len(d) == 0 || len(d) > 253*4 {
		return "", false
	}
	needIDNA := strings.Contains(strings.ToLower(d), "xn--")
	for i := 0; i < len(d) && !needIDNA; i++ {
		if d[i] >= 0x80 {
			needIDNA = true
		}
	}
	if needIDNA {
		a, err := emailDomains.ToASCII(d)
		if err != nil {
			return "", false
		}
		d = a
	}
	if !validHostname(d) {
		return "", false
	}
	return d, true
}

// validHostname checks an ASCII domain: 1–63 letters, digits or inner hyphens per label, at least two
// labels, at most 253 characters, and a top-level label that is not all digits (no bare IPv4).
func validHostname(d string) bool {
	if len(d) > 253 || strings.Count(d, ".") < 1 {
		return false
	}
	var l string
	for rest, more := d, true; more; {
		l, rest, more = strings.Cut(rest, ".")
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return strings.Trim(l, "0123456789") != "" // l is the top-level label
}

// ASCII is s with an internationalised domain in its ASCII form and the case kept, as a mail header wants
// it. ok is false for an invalid address.
func ASCII(s string) (string, bool) { return asciiEmail(s) }
