package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/services/platform/config"
)

// fullSpam sets every spam setting.
func fullSpam() *v1alpha1.FormSpamSpec {
	return &v1alpha1.FormSpamSpec{
		Action: "folder", Threshold: "5.5", Languages: []v1alpha1.SpamLanguage{"en", "de"},
		BlockedAddresses: []v1alpha1.MailAddress{"offers@seo-agency.example"},
		BlockedDomains:   []v1alpha1.SpamDomain{"seo-agency.example", "Spam.Example"},
		BlockedNetworks:  []v1alpha1.SpamNetwork{"203.0.113.0/24", "2001:db8::/32"},
	}
}

// The CRD refuses what the forms service refuses in spec.forms.spam and a declared form's spam, and
// takes what it takes: each case goes to the real API server (a dry-run create) and through the
// configuration the operator renders (render.RenderConfig: parsed, defaulted and validated as the
// service loads it), and both must answer alike; the API server's refusal must say where (want).
func TestCRD_SpamAgreesWithTheService(t *testing.T) {
	ns := newNamespace(t)
	forms := func(mutate func(s *v1alpha1.FormSpamSpec)) func(fs *v1alpha1.FormsService) {
		return func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Spam = fullSpam()
			mutate(fs.Spec.Forms.Spam)
		}
	}
	declared := func(mutate func(s *v1alpha1.FormSpamSpec)) func(fs *v1alpha1.FormsService) {
		return func(fs *v1alpha1.FormsService) {
			f := demoForm()
			f.Spam = &v1alpha1.FormSpamSpec{}
			mutate(f.Spam)
			fs.Spec.Forms.Declared = []v1alpha1.DeclaredForm{f}
		}
	}
	networks := func(n int) []v1alpha1.SpamNetwork {
		out := make([]v1alpha1.SpamNetwork, n)
		for i := range out {
			out[i] = v1alpha1.SpamNetwork(fmt.Sprintf("10.%d.%d.0/24", i/256, i%256))
		}
		return out
	}
	addresses := func(n int) []v1alpha1.MailAddress {
		out := make([]v1alpha1.MailAddress, n)
		for i := range out {
			out[i] = v1alpha1.MailAddress(fmt.Sprintf("sender%d@spam.example", i))
		}
		return out
	}
	cases := []struct {
		name string
		set  func(fs *v1alpha1.FormsService)
		want string // "" accepted; else a part of the API server's refusal
	}{
		{"every setting", forms(func(*v1alpha1.FormSpamSpec) {}), ""},
		{"refuse", forms(func(s *v1alpha1.FormSpamSpec) { s.Action = "refuse" }), ""},
		{"off", forms(func(s *v1alpha1.FormSpamSpec) { s.Action = "off" }), ""},
		{"nothing set", forms(func(s *v1alpha1.FormSpamSpec) { *s = v1alpha1.FormSpamSpec{} }), ""},
		{"threshold 0, the default", forms(func(s *v1alpha1.FormSpamSpec) { s.Threshold = "0" }), ""},
		{"threshold 100", forms(func(s *v1alpha1.FormSpamSpec) { s.Threshold = "100" }), ""},
		{"threshold 99.75", forms(func(s *v1alpha1.FormSpamSpec) { s.Threshold = "99.75" }), ""},
		{"every language", forms(func(s *v1alpha1.FormSpamSpec) {
			s.Languages = nil
			for _, l := range config.SpamLanguages {
				s.Languages = append(s.Languages, v1alpha1.SpamLanguage(l))
			}
		}), ""},
		{"4,000 blocked networks", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedNetworks = networks(4000) }), ""},
		{"a network with host bits", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedNetworks = []v1alpha1.SpamNetwork{"203.0.113.7/24"} }), ""},
		{"one address", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedNetworks = []v1alpha1.SpamNetwork{"192.0.2.1/32", "::1/128"} }), ""},
		{"a declared form's own", declared(func(s *v1alpha1.FormSpamSpec) { s.Action, s.Threshold = "refuse", "6" }), ""},

		{"an unknown action", forms(func(s *v1alpha1.FormSpamSpec) { s.Action = "delete" }), "spec.forms.spam.action"},
		{"a threshold over 100", forms(func(s *v1alpha1.FormSpamSpec) { s.Threshold = "101" }), "spec.forms.spam.threshold"},
		{"a negative threshold", forms(func(s *v1alpha1.FormSpamSpec) { s.Threshold = "-1" }), "spec.forms.spam.threshold"},
		{"a threshold in words", forms(func(s *v1alpha1.FormSpamSpec) { s.Threshold = "four" }), "spec.forms.spam.threshold"},
		{"a threshold of 1e3", forms(func(s *v1alpha1.FormSpamSpec) { s.Threshold = "1e3" }), "spec.forms.spam.threshold"},
		{"a threshold of 100.5", forms(func(s *v1alpha1.FormSpamSpec) { s.Threshold = "100.5" }), "spec.forms.spam.threshold"},
		{"an unknown language", forms(func(s *v1alpha1.FormSpamSpec) { s.Languages = []v1alpha1.SpamLanguage{"xx"} }), "spec.forms.spam.languages[0]"},
		{"a language in upper case", forms(func(s *v1alpha1.FormSpamSpec) { s.Languages = []v1alpha1.SpamLanguage{"EN"} }), "spec.forms.spam.languages[0]"},
		{"an address with a display name", forms(func(s *v1alpha1.FormSpamSpec) {
			s.BlockedAddresses = []v1alpha1.MailAddress{"Offers <offers@seo-agency.example>"}
		}), "spec.forms.spam.blockedAddresses[0]"},
		{"a domain with a scheme", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedDomains = []v1alpha1.SpamDomain{"https://spam.example"} }), "spec.forms.spam.blockedDomains[0]"},
		{"a domain with a path", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedDomains = []v1alpha1.SpamDomain{"spam.example/offers"} }), "spec.forms.spam.blockedDomains[0]"},
		{"a domain with a trailing dot", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedDomains = []v1alpha1.SpamDomain{"spam.example."} }), "spec.forms.spam.blockedDomains[0]"},
		{"a name without a dot", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedDomains = []v1alpha1.SpamDomain{"localhost"} }), "spec.forms.spam.blockedDomains[0]"},
		{"a domain whose last label is a number", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedDomains = []v1alpha1.SpamDomain{"203.0.113.7"} }), "spec.forms.spam.blockedDomains[0]"},
		{"an address as a network", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedNetworks = []v1alpha1.SpamNetwork{"203.0.113.7"} }), "want a range in CIDR notation"},
		{"a prefix too long", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedNetworks = []v1alpha1.SpamNetwork{"203.0.113.0/33"} }), "want a range in CIDR notation"},
		{"an IPv6 prefix too long", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedNetworks = []v1alpha1.SpamNetwork{"2001:db8::/129"} }), "want a range in CIDR notation"},
		{"a network in words", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedNetworks = []v1alpha1.SpamNetwork{"the office"} }), "want a range in CIDR notation"},
		{"10,000 blocked addresses", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedAddresses = addresses(10000) }), ""},
		{"10,001 blocked addresses", forms(func(s *v1alpha1.FormSpamSpec) { s.BlockedAddresses = addresses(10001) }), "Too many: 10001"},
		{"a declared form's unknown action", declared(func(s *v1alpha1.FormSpamSpec) { s.Action = "quarantine" }), "spec.forms.declared[0].spam.action"},
		{"a declared form's bad network", declared(func(s *v1alpha1.FormSpamSpec) { s.BlockedNetworks = []v1alpha1.SpamNetwork{"10.0.0.0/8/8"} }), "want a range in CIDR notation"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := sampleFS(ns)
			fs.Name = fmt.Sprintf("spam%d", i)
			tc.set(fs)
			_, svcErr := render.RenderConfig(fs.DeepCopy(), render.Forms, render.Inputs{Image: testImage})
			apiErr := k8s.Create(context.Background(), fs, client.DryRunAll)
			judgedAlike(t, tc.want, false, apiErr, svcErr)
		})
	}
}

// What the resource says about spam is what the forms service is configured with.
func TestRender_SpamReachesTheFormsConfiguration(t *testing.T) {
	fs := sampleFS("ns")
	fs.Spec.Forms.Spam = fullSpam()
	f := demoForm()
	f.Spam = &v1alpha1.FormSpamSpec{Action: "refuse", Threshold: "6"}
	fs.Spec.Forms.Declared = []v1alpha1.DeclaredForm{f}
	c := render.ServiceConfig(fs, render.Forms, render.Inputs{Image: testImage})
	s := c.Forms.Spam
	if s == nil || s.Action != "folder" || s.Threshold != 5.5 || strings.Join(s.Languages, ",") != "en,de" ||
		strings.Join(s.BlockedAddresses, ",") != "offers@seo-agency.example" || strings.Join(s.BlockedDomains, ",") != "seo-agency.example,Spam.Example" ||
		strings.Join(s.BlockedNetworks, ",") != "203.0.113.0/24,2001:db8::/32" {
		t.Errorf("forms.spam %+v", s)
	}
	if d := c.Forms.SpamOf(&c.Forms.Declared[0]); d == nil || d.Action != "refuse" || d.Threshold != 6 || len(d.BlockedNetworks) != 0 {
		t.Errorf("the declared form's spam %+v", d)
	}
	fs.Spec.Forms.Spam, fs.Spec.Forms.Declared = nil, nil
	if s := render.ServiceConfig(fs, render.Forms, render.Inputs{Image: testImage}).Forms.Spam; s != nil {
		t.Errorf("no spec.forms.spam rendered %+v", s)
	}
}
