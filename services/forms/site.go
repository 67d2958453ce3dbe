package forms

import (
	"github.com/formsservice/formsservice/services/platform/config"
)

// site is one forms.sites entry, compiled with the configuration: what the forms do for one allowed
// origin beyond the JSON contract.
type site struct {
	config.Site
}

// siteMatcher finds the site of a request's origin: the site named by that exact origin, else the first
// whose wildcard pattern matches it. Most configurations have none or a few.
type siteMatcher struct {
	exact map[string]*site
	wild  []wildSite
}

type wildSite struct {
	m *originMatcher
	s *site
}

func newSiteMatcher(sites []config.Site) *siteMatcher {
	m := &siteMatcher{exact: map[string]*site{}}
	for _, cs := range sites {
		s := &site{Site: cs}
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
