package forms

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/formsservice/formsservice/services/forms/botcheck"
	"github.com/formsservice/formsservice/services/platform/config"
)

// site is one forms.sites entry, compiled with the configuration: what the forms do for one allowed
// origin beyond the JSON contract.
type site struct {
	config.Site
	// bot is the site's bot check; nil without one.
	bot *botGate
}

// botGate is a bot check compiled with the configuration: a site's (forms.sites[].botCheck) or a
// declared form's own (forms.declared[].botCheck).
type botGate struct {
	cfg *config.BotCheck
	// verifier checks the CAPTCHA tokens. err says why it could not be built (an unreadable secret
	// file): the submissions it guards then fail closed with 502.
	verifier *botcheck.Verifier
	err      error
}

// compileBot builds b's verifier; at names it in the error of an unreadable secret file. nil for nil.
func compileBot(b *config.BotCheck, at string) *botGate {
	if b == nil {
		return nil
	}
	g := &botGate{cfg: b}
	secret, err := readSecret(b.SecretFile)
	if err != nil {
		g.err = fmt.Errorf("%s: botCheck.secretFile: %w", at, err)
		return g
	}
	g.verifier = botcheck.New(botcheck.Provider(b.Provider), secret, b.VerifyURL, b.Score(), botClient).WithAction(b.Action)
	return g
}

// field is the body field the provider's widget puts its token in.
func (g *botGate) field() string { return botcheck.Provider(g.cfg.Provider).Field() }

// siteMatcher finds the site of a request's origin: the site named by that exact origin, else the first
// whose wildcard pattern matches it. Most configurations have none or a few.
type siteMatcher struct {
	exact map[string]*site
	wild  []wildSite
	// errs are the sites that could not be compiled (New refuses to start on them).
	errs []error
}

type wildSite struct {
	m *originMatcher
	s *site
}

// botClient is the HTTP client of every bot check; each verification is bounded by botcheck.Timeout.
var botClient = &http.Client{Timeout: botcheck.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse // a siteverify endpoint does not redirect; one that does is not it
}}

func newSiteMatcher(sites []config.Site) *siteMatcher {
	m := &siteMatcher{exact: map[string]*site{}}
	for _, cs := range sites {
		s := &site{Site: cs, bot: compileBot(cs.BotCheck, "forms.sites "+cs.Origin)}
		if s.bot != nil && s.bot.err != nil {
			m.errs = append(m.errs, s.bot.err)
		}
		om := newOriginMatcher([]string{cs.Origin})
		if len(om.wild) > 0 {
			m.wild = append(m.wild, wildSite{m: om, s: s})
			continue
		}
		for o := range om.exact { // the origin as browsers send it (default port dropped)
			m.exact[o] = s
		}
	}
	return m
}

// readSecret reads a secret file, its surrounding white space trimmed. The error never holds the content.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", errors.New("the file is empty")
	}
	return s, nil
}

// find returns origin's site, or nil.
func (m *siteMatcher) find(origin string) *site {
	if m == nil || origin == "" {
		return nil
	}
	if s, ok := m.exact[origin]; ok {
		return s
	}
	for _, w := range m.wild {
		if w.m.allowed([]byte(origin)) {
			return w.s
		}
	}
	return nil
}

// botCheck is the site's bot check, or nil.
func (s *site) botCheck() *botGate {
	if s == nil {
		return nil
	}
	return s.bot
}
