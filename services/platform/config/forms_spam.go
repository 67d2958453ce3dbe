package config

import (
	"fmt"
	"net/mail"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// Spam is what the forms do with a submission that scores as spam (docs/forms.md "Spam"): forms.spam for
// /contact and every declared form, a declared form's own spam in place of it for that form.
type Spam struct {
	// Action is "folder" (the default: kept in the form's spam folder, not delivered, until released or
	// deleted), "refuse" (not stored at all) or "off" (no verdict: everything is delivered). The sender's
	// answer is the same for all three.
	Action string `json:"action,omitempty"`
	// Threshold is the score from which a submission is spam; 0: the scorer's default (4).
	Threshold float64 `json:"threshold,omitempty"`
	// Languages the form is written for (ISO 639-1, SpamLanguages): text mostly in a script none of them
	// uses adds to the score. Empty: no such check.
	Languages []string `json:"languages,omitempty"`
	// BlockedAddresses, BlockedDomains and BlockedNetworks make a sender spam on their own: an address
	// (any case), a domain (of the sender's address or of a link in the text; subdomains included) or a
	// client IP range in CIDR notation.
	BlockedAddresses []string `json:"blockedAddresses,omitempty"`
	BlockedDomains   []string `json:"blockedDomains,omitempty"`
	BlockedNetworks  []string `json:"blockedNetworks,omitempty"`
}

// The spam actions.
const (
	SpamFolder = "folder"
	SpamRefuse = "refuse"
	SpamOff    = "off"
)

// SpamLanguages are the languages whose scripts the spam check knows.
var SpamLanguages = []string{"ar", "bg", "cs", "da", "de", "el", "en", "es", "fi", "fr", "he", "hi", "hu", "it",
	"ja", "ko", "nb", "nl", "pl", "pt", "ro", "ru", "sr", "sv", "th", "tr", "uk", "zh"}

// MaxSpamBlocklist bounds each blocklist (the scorer keeps them in memory and checks every submission).
const MaxSpamBlocklist = 10000

var domainPattern = regexp.MustCompile(`^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}$`)

// ActionOf is s's action; a nil Spam is the default, folder.
func (s *Spam) ActionOf() string {
	if s == nil || s.Action == "" {
		return SpamFolder
	}
	return s.Action
}

// Networks returns the blocked ranges (checked by validate).
func (s *Spam) Networks() []netip.Prefix {
	if s == nil {
		return nil
	}
	var out []netip.Prefix
	for _, n := range s.BlockedNetworks {
		if p, err := netip.ParsePrefix(n); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

func (s *Spam) validate(at string) []error {
	if s == nil {
		return nil
	}
	var errs []error
	switch s.Action {
	case "", SpamFolder, SpamRefuse, SpamOff:
	default:
		errs = append(errs, fmt.Errorf("%s.action %q: want folder, refuse or off", at, s.Action))
	}
	if s.Threshold < 0 || s.Threshold > 100 {
		errs = append(errs, fmt.Errorf("%s.threshold %v: want 0 (the default, 4) to 100", at, s.Threshold))
	}
	for i, l := range s.Languages {
		if !slices.Contains(SpamLanguages, l) {
			errs = append(errs, fmt.Errorf("%s.languages[%d] %q: want one of %s", at, i, l, strings.Join(SpamLanguages, ", ")))
		}
	}
	for key, list := range map[string][]string{"blockedAddresses": s.BlockedAddresses, "blockedDomains": s.BlockedDomains,
		"blockedNetworks": s.BlockedNetworks} {
		if len(list) > MaxSpamBlocklist {
			errs = append(errs, fmt.Errorf("%s.%s: at most %d entries", at, key, MaxSpamBlocklist))
		}
	}
	for i, a := range s.BlockedAddresses {
		if p, err := mail.ParseAddress(a); err != nil || p.Name != "" || strings.ContainsAny(a, "<>") {
			errs = append(errs, fmt.Errorf("%s.blockedAddresses[%d] %q: want a bare address like someone@example.com", at, i, a))
		}
	}
	for i, d := range s.BlockedDomains {
		if !domainPattern.MatchString(strings.ToLower(d)) {
			errs = append(errs, fmt.Errorf("%s.blockedDomains[%d] %q: want a domain like example.com (no scheme, no path)", at, i, d))
		}
	}
	for i, n := range s.BlockedNetworks {
		if _, err := netip.ParsePrefix(n); err != nil {
			errs = append(errs, fmt.Errorf("%s.blockedNetworks[%d] %q: want a range in CIDR notation like 203.0.113.0/24 or 2001:db8::/32", at, i, n))
		}
	}
	return errs
}

// SpamOf is the spam settings of form (nil: /contact): its own, or forms.spam.
func (f *Forms) SpamOf(form *DeclaredForm) *Spam {
	if form != nil && form.Spam != nil {
		return form.Spam
	}
	return f.Spam
}
