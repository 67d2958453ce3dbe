// Package spam gives every submission a spam verdict from documented signals (docs/forms.md "Spam"):
// links and their domains, the configured blocklists of addresses, domains and IP ranges, content seen
// again and again, the time from a signed form token to the post, text in a script the form's languages
// do not use, and spammy wording. It is pure: what only the store knows (how often the content was seen)
// and what the handler read (the token's age) come in as Signals. The weights were chosen on the labelled
// corpus in testdata/corpus.jsonl; corpus_test.go holds the precision and recall floors.
package spam

import (
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Reasons are the names of the signals, stable: they label the metric formsservice_forms_spam_total and
// are stored with each verdict.
const (
	ReasonLinks          = "links"           // more links than a genuine enquiry carries
	ReasonShortener      = "shortener"       // a link through a URL shortener
	ReasonMarkup         = "markup"          // HTML anchors or BBCode links in a plain-text form
	ReasonBlockedLink    = "blocked_link"    // a link to a blocked domain
	ReasonBlockedAddress = "blocked_address" // the sender's address is blocked
	ReasonBlockedDomain  = "blocked_domain"  // the sender's domain is blocked
	ReasonBlockedIP      = "blocked_ip"      // the client is in a blocked IP range
	ReasonRepeated       = "repeated"        // the same content came again and again lately
	ReasonTooFast        = "too_fast"        // posted sooner after the form token than a person types
	ReasonScript         = "script"          // mostly in a script none of the form's languages uses
	ReasonPhrases        = "phrases"         // wording of SEO offers, crypto, pharma and the like
	ReasonShouting       = "shouting"        // mostly capital letters, or runs of ! and $
)

// AllReasons lists every reason, for the metric's series and the docs.
var AllReasons = []string{ReasonLinks, ReasonShortener, ReasonMarkup, ReasonBlockedLink, ReasonBlockedAddress,
	ReasonBlockedDomain, ReasonBlockedIP, ReasonRepeated, ReasonTooFast, ReasonScript, ReasonPhrases, ReasonShouting}

// DefaultThreshold is the score from which a submission is spam, unless the form sets its own.
const DefaultThreshold = 4.0

// Submission is what the scorer reads of one submission.
type Submission struct {
	Email string // the sender's address, "" when the form has no e-mail field
	// Text are the message-like values (a contact message, a form's long texts): scored, and their
	// Fingerprint is what the store counts; Other are the other texts (a name, an organisation), scored
	// only, so that a blast signed with another name each time still counts as one content.
	Text   []string
	Other  []string
	Client netip.Addr // the client's address (invalid when unknown)
}

// Signals are the facts about a submission that the scorer cannot see in it.
type Signals struct {
	// Seen is how many times the same content (Fingerprint) arrived within the store's window,
	// this one included; 0 when not counted.
	Seen int
	// Elapsed is the time from the form token's issue to the post; 0 when no valid token came with it
	// (neutral: a page without the token is not spam for that).
	Elapsed time.Duration
}

// Verdict is the scorer's answer.
type Verdict struct {
	Score   float64
	Spam    bool
	Reasons []string // the signals that added to the score, in AllReasons' order
}

// Rules are a form's spam settings, compiled once per configuration.
type Rules struct {
	Threshold float64
	// Scripts the form's languages are written in; empty: any script is fine.
	scripts        []*unicode.RangeTable
	addresses      map[string]bool
	domains        map[string]bool // sender domains and link domains alike
	nets           []netip.Prefix
	minElapsed     time.Duration
	repeatsAllowed int
}

// Settings are the configured inputs of Rules (config.Spam, checked there).
type Settings struct {
	Threshold float64        // 0: DefaultThreshold
	Languages []string       // ISO 639-1 codes; empty: no script check
	Addresses []string       // blocked sender addresses
	Domains   []string       // blocked domains: of the sender's address and of links
	Networks  []netip.Prefix // blocked client ranges
}

// MinElapsed is the fastest a person fills a form after loading it.
const MinElapsed = 3 * time.Second

// RepeatsAllowed is how often the same content may arrive within the window before it counts.
const RepeatsAllowed = 2

// NewRules compiles s.
func NewRules(s Settings) *Rules {
	r := &Rules{Threshold: s.Threshold, addresses: map[string]bool{}, domains: map[string]bool{}, nets: s.Networks,
		minElapsed: MinElapsed, repeatsAllowed: RepeatsAllowed}
	if r.Threshold == 0 {
		r.Threshold = DefaultThreshold
	}
	for _, a := range s.Addresses {
		r.addresses[strings.ToLower(a)] = true
	}
	for _, d := range s.Domains {
		r.domains[strings.ToLower(strings.TrimPrefix(d, "."))] = true
	}
	for _, l := range s.Languages {
		for _, t := range LanguageScripts[strings.ToLower(l)] {
			if !slices.Contains(r.scripts, t) {
				r.scripts = append(r.scripts, t)
			}
		}
	}
	return r
}

// Score weighs sub and sig. A single strong signal (a blocklist) is spam on its own; the weaker ones
// must come together.
func (r *Rules) Score(sub Submission, sig Signals) Verdict {
	var v Verdict
	add := func(reason string, points float64) {
		if points <= 0 {
			return
		}
		v.Score += points
		if !slices.Contains(v.Reasons, reason) {
			v.Reasons = append(v.Reasons, reason)
		}
	}
	text := strings.Join(append(sub.Text[:len(sub.Text):len(sub.Text)], sub.Other...), "\n")

	if addr := strings.ToLower(strings.TrimSpace(sub.Email)); addr != "" {
		if r.addresses[addr] {
			add(ReasonBlockedAddress, 10)
		}
		if at := strings.LastIndexByte(addr, '@'); at >= 0 && r.blockedDomain(addr[at+1:]) {
			add(ReasonBlockedDomain, 10)
		}
	}
	if sub.Client.IsValid() {
		c := sub.Client.Unmap()
		for _, n := range r.nets {
			if n.Contains(c) {
				add(ReasonBlockedIP, 10)
				break
			}
		}
	}

	links := Links(text)
	switch n := len(links); {
	case n >= 4:
		add(ReasonLinks, 4+float64(min(n-4, 6))*0.5)
	case n == 3:
		add(ReasonLinks, 3)
	case n == 2:
		add(ReasonLinks, 1.5)
	}
	abused := 0.0
	for _, host := range links {
		if abusedTLD(host) {
			abused += 2
		}
		if shorteners[host] {
			add(ReasonShortener, 3)
		}
		if r.blockedDomain(host) {
			add(ReasonBlockedLink, 6)
		}
	}
	add(ReasonLinks, min(abused, 4))
	lower := strings.ToLower(text)
	if markup(lower) {
		add(ReasonMarkup, 4)
	}

	// Repetition alone stays below the default threshold: a team's own test posts, or many people sending
	// a form's suggested text, are not spam; a blast also carries the wording of one.
	if r.repeatsAllowed > 0 && sig.Seen > r.repeatsAllowed {
		add(ReasonRepeated, min(2+float64(sig.Seen-r.repeatsAllowed-1), 3))
	}
	if sig.Elapsed > 0 && sig.Elapsed < r.minElapsed {
		add(ReasonTooFast, 4)
	}
	if len(r.scripts) > 0 {
		if share := foreignShare(text, r.scripts); share > 0.5 {
			add(ReasonScript, 5)
		} else if share > 0.2 {
			add(ReasonScript, 2.5)
		}
	}
	add(ReasonPhrases, phraseScore(lower))
	add(ReasonShouting, shouting(text))

	v.Spam = v.Score >= r.Threshold
	slices.SortFunc(v.Reasons, func(a, b string) int {
		return slices.Index(AllReasons, a) - slices.Index(AllReasons, b)
	})
	return v
}

// blockedDomain reports whether host or a domain above it is blocked.
func (r *Rules) blockedDomain(host string) bool {
	for host != "" {
		if r.domains[host] {
			return true
		}
		dot := strings.IndexByte(host, '.')
		if dot < 0 {
			return false
		}
		host = host[dot+1:]
	}
	return false
}
