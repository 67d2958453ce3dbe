package spam

import "github.com/formsservice/formsservice/services/platform/config"

// RulesOf compiles a form's configured settings (nil: the defaults).
func RulesOf(s *config.Spam) *Rules {
	if s == nil {
		return NewRules(Settings{})
	}
	return NewRules(Settings{Threshold: s.Threshold, Languages: s.Languages, Addresses: s.BlockedAddresses,
		Domains: s.BlockedDomains, Networks: s.Networks()})
}
