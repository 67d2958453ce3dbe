package render

import (
	"strconv"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

// spamConfig renders spec.forms.spam, or a declared form's spam, as the service's forms.spam; nil stays
// nil (the service's defaults). The CRD's pattern admits only decimal thresholds from 0 to 100, so a
// threshold that does not parse cannot come from the API server; it would render as out of range, which
// the service refuses with its key.
func spamConfig(s *v1alpha1.FormSpamSpec) *config.Spam {
	if s == nil {
		return nil
	}
	c := &config.Spam{Action: s.Action}
	if s.Threshold != "" {
		t, err := strconv.ParseFloat(s.Threshold, 64)
		if err != nil {
			t = -1
		}
		c.Threshold = t
	}
	for _, l := range s.Languages {
		c.Languages = append(c.Languages, string(l))
	}
	for _, a := range s.BlockedAddresses {
		c.BlockedAddresses = append(c.BlockedAddresses, string(a))
	}
	for _, d := range s.BlockedDomains {
		c.BlockedDomains = append(c.BlockedDomains, string(d))
	}
	for _, n := range s.BlockedNetworks {
		c.BlockedNetworks = append(c.BlockedNetworks, string(n))
	}
	return c
}
