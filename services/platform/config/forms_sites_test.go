package config

import (
	"strings"
	"testing"
)

func TestSites_Validate(t *testing.T) {
	ok := `allowedOrigins: [https://www.example.com, "https://*.example.org"]
forms:
  sites:
    - {origin: https://www.example.com, name: Example, thanksURL: /thanks, errorURL: "https://www.example.com/oops?x=1"}
    - {origin: "https://*.example.org", thanksURL: "https://thanks.example.org/"}
`
	c, err := Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("valid sites refused: %v", err)
	}
	cases := map[string]string{
		"forms: {sites: [{origin: https://other.example}]}":                                      "not in allowedOrigins",
		"forms: {sites: [{thanksURL: /x}]}":                                                      "origin: required",
		"forms: {sites: [{origin: https://www.example.com}, {origin: https://www.example.com}]}": "named by two sites",
		"forms: {sites: [{origin: https://www.example.com, thanksURL: //evil.example}]}":         "thanksURL",
		"forms: {sites: [{origin: https://www.example.com, thanksURL: 'javascript:x'}]}":         "thanksURL",
		"forms: {sites: [{origin: https://www.example.com, errorURL: 'https://u@h/'}]}":          "errorURL",
		"forms: {sites: [{origin: https://www.example.com, thanksURL: '/x#frag'}]}":              "thanksURL",
		"forms: {sites: [{origin: https://www.example.com, nope: 1}]}":                           "forms.sites[0].nope: unknown key",
	}
	for doc, want := range cases {
		c, err := Parse([]byte("allowedOrigins: [https://www.example.com]\n" + doc))
		if err == nil {
			c.ApplyDefaults()
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", doc, err, want)
		}
	}
}

func TestDoubleOptIn_DefaultsAndValidate(t *testing.T) {
	c, err := Parse([]byte("publicURL: https://id.example.com\nforms: {doubleOptIn: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if d := c.Forms.DoubleOptIn; d.ConfirmWithin.D() != DefaultConfirmWithin || d.ResendAfter.D() != DefaultResendAfter || c.FormsURL() != "https://id.example.com" {
		t.Fatalf("defaults %+v, links at %s", d, c.FormsURL())
	}
	for doc, want := range map[string]string{
		"forms: {doubleOptIn: {}}": "forms.publicURL",
		"publicURL: https://x.example\nforms: {doubleOptIn: {confirmWithin: 10m}}": "confirmWithin",
		"publicURL: https://x.example\nforms: {doubleOptIn: {resendAfter: 1s}}":    "resendAfter",
		"forms: {publicURL: 'https://forms.example.com/path'}":                     "forms.publicURL",
		"forms: {waitlistRetention: -1h}":                                          "waitlistRetention",
	} {
		c, err := Parse([]byte(strings.ReplaceAll(doc, "\\n", "\n")))
		if err == nil {
			c.ApplyDefaults()
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", doc, err, want)
		}
	}
}

// A site's bot-check secret is a secret file like the others: the start refuses it when every user of
// the machine can write it (cmd/formsservice, checkSecretFiles), found by its key without a list.
func TestSites_BotCheckSecretFile_IsASecretFile(t *testing.T) {
	c := &Config{Forms: Forms{Sites: []Site{{Origin: "https://a.example"},
		{Origin: "https://b.example", BotCheck: &BotCheck{Provider: "turnstile", SecretFile: "/run/secrets/turnstile", VerifyURL: "https://v.example/"}}}}}
	got := c.SecretFiles()
	if len(got) != 1 || got[0].Key != "forms.sites[1].botCheck.secretFile" || got[0].Path != "/run/secrets/turnstile" {
		t.Fatalf("secret files %+v", got)
	}
}

// The confirmation mail's one-click unsubscribe must be https (RFC 8058; the mail component refuses
// anything else off loopback), so an http:// base for the links would fail every mail: it is refused
// when the configuration loads, naming the setting, instead.
func TestDoubleOptIn_HTTPLinksOffLoopback_RefusedAtLoad(t *testing.T) {
	load := func(doc string) error {
		c, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		c.ApplyDefaults()
		return c.Validate()
	}
	for doc, want := range map[string]string{
		"forms: {publicURL: 'http://forms.example.com', doubleOptIn: {}}":                            "forms.publicURL http://forms.example.com: the double opt-in's links need https",
		"publicURL: https://id.example.com\nforms: {publicURL: 'http://f.example', doubleOptIn: {}}": "forms.publicURL http://f.example",
	} {
		if err := load(doc); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", doc, err, want)
		}
	}
	for _, doc := range []string{
		"forms: {publicURL: 'http://127.0.0.1:8080', doubleOptIn: {}}", // the dev server
		"forms: {publicURL: 'http://localhost:8080', doubleOptIn: {}}",
		"forms: {publicURL: 'https://forms.example.com', doubleOptIn: {}}",
		"forms: {publicURL: 'http://forms.example.com'}", // no mails, no links: the form pages only
	} {
		if err := load(doc); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// botCheck.action names the page's check for the providers that report one (reCAPTCHA v3, Turnstile);
// hCaptcha reports none, so an action there would refuse every token.
func TestSites_BotCheckAction_OnlyWhereTheProviderReportsOne(t *testing.T) {
	for provider, ok := range map[string]bool{"recaptcha": true, "turnstile": true, "hcaptcha": false} {
		errs := BotCheck{Provider: provider, SecretFile: "/s", Action: "waitlist"}.validate("forms.sites[0].botCheck")
		if (len(errs) == 0) != ok {
			t.Errorf("%s with an action: %v", provider, errs)
		}
	}
	if errs := (BotCheck{Provider: "recaptcha", SecretFile: "/s", Action: " waitlist"}).validate("b"); len(errs) != 1 {
		t.Errorf("an action with a space around it: %v", errs)
	}
}
