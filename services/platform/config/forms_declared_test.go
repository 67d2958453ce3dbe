package config

import (
	"strings"
	"testing"
	"time"
)

func TestDeclaredForms_Validate(t *testing.T) {
	ok := `allowedOrigins: [https://www.example.com, https://shop.example.com]
forms:
  publicURL: https://forms.example.com
  declared:
    - id: demo
      title: Request a demo
      unique: email
      origins: [https://shop.example.com]
      additionalFields: keep
      thanksURL: /thanks
      durability: process
      fields:
        - {name: company, type: text, required: true, maxLength: 80}
        - {name: email, type: email, required: true}
        - {name: budget, type: number, min: "0", max: "1e6"}
        - {name: start, type: date, min: "2026-01-01"}
        - {name: interests, type: manyof, choices: [forms, sign-in], maxChoices: 1}
        - {name: notes, type: longtext}
        - {name: consent, type: consent}
      notify:
        mailTo: [sales@example.com]
        webhooks: [{url: "https://hooks.example.com/x", format: markdown}]
      autoresponder: {subject: Thanks, text: "Hello {{company}}"}
      botCheck: {provider: recaptcha, secretFile: /var/run/secrets/demo/recaptcha, minScore: 0.7, action: demo}
      doubleOptIn: {confirmWithin: 24h}
    - id: feedback-2
      fields: [{name: rating, type: oneof, choices: ["1", "2", "3"]}]
`
	c, err := Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("valid declarations refused: %v", err)
	}
	if f := c.Forms.FindDeclared("demo"); f == nil || !f.Keep() || f.Autoresponder.ResponderField(*f) != "email" || c.Forms.DurabilityOf(f) != DurabilityProcess ||
		f.BotCheck == nil || f.BotCheck.Score() != 0.7 || f.BotCheck.Action != "demo" ||
		f.DoubleOptIn == nil || f.DoubleOptIn.ConfirmWithin.D() != 24*time.Hour || f.DoubleOptIn.ResendAfter.D() != DefaultResendAfter {
		t.Fatalf("demo: %+v", f)
	}

	field := func(f string) string { return "forms: {declared: [{id: x, fields: [" + f + "]}]}" }
	cases := map[string]string{
		"forms: {declared: [{id: Bad_Id, fields: [{name: a, type: text}]}]}":                                                                                "want 1 to 40 of a-z",
		"forms: {declared: [{id: contact, fields: [{name: a, type: text}]}]}":                                                                               "taken by the built-in form /contact",
		"forms: {declared: [{id: x, fields: [{name: a, type: text}]}, {id: x, fields: [{name: a, type: text}]}]}":                                           "declared twice",
		"forms: {declared: [{id: x, fields: []}]}":                                                                                                          "at least one field",
		"forms: {declared: [{id: x, additionalFields: maybe, fields: [{name: a, type: text}]}]}":                                                            "want refuse or keep",
		"forms: {declared: [{id: x, origins: [https://evil.example], fields: [{name: a, type: text}]}]}":                                                    "not in allowedOrigins",
		"forms: {declared: [{id: x, unique: b, fields: [{name: a, type: text}]}]}":                                                                          "not a field of the form",
		"forms: {declared: [{id: x, unique: a, fields: [{name: a, type: text}]}]}":                                                                          "must be a required field",
		"forms: {declared: [{id: x, unique: a, fields: [{name: a, type: checkbox, required: true}]}]}":                                                      "must be a text, email, phone or url field",
		"forms: {declared: [{id: x, durability: forever, fields: [{name: a, type: text}]}]}":                                                                "durability",
		"forms: {declared: [{id: x, botCheck: {provider: friendlycaptcha, secretFile: /s}, fields: [{name: a, type: text}]}]}":                              "forms.declared[x].botCheck.provider",
		"forms: {declared: [{id: x, botCheck: {provider: turnstile}, fields: [{name: a, type: text}]}]}":                                                    "forms.declared[x].botCheck.secretFile: required",
		"forms: {declared: [{id: x, botCheck: {provider: hcaptcha, secretFile: /s, action: a}, fields: [{name: a, type: text}]}]}":                          "forms.declared[x].botCheck.action",
		"forms: {declared: [{id: x, botCheck: {provider: recaptcha, secretFile: /s, minScore: 2}, fields: [{name: a, type: text}]}]}":                       "forms.declared[x].botCheck.minScore",
		"forms: {declared: [{id: x, retention: -1h, fields: [{name: a, type: text}]}]}":                                                                     "retention: must not be negative",
		"forms: {declared: [{id: x, thanksURL: '//evil.example', fields: [{name: a, type: text}]}]}":                                                        "thanksURL",
		"forms: {declared: [{id: x, notify: {}, fields: [{name: a, type: text}]}]}":                                                                         "name mailTo addresses or webhooks",
		"forms: {declared: [{id: x, notify: {mailTo: ['Bob <b@example.com>']}, fields: [{name: a, type: text}]}]}":                                          "want a bare address",
		"forms: {declared: [{id: x, notify: {webhooks: [{url: 'ftp://x'}]}, fields: [{name: a, type: text}]}]}":                                             "forms.declared[x].notify.webhooks[0].url",
		"forms: {declared: [{id: x, autoresponder: {subject: s, text: t}, fields: [{name: a, type: text}]}]}":                                               "no e-mail field",
		"forms: {declared: [{id: x, autoresponder: {subject: s, text: '{{b}}'}, fields: [{name: a, type: email}]}]}":                                        "{{b}} is not a field",
		"forms: {declared: [{id: x, doubleOptIn: {}, fields: [{name: a, type: email, required: true}]}]}":                                                   "forms.declared[x].doubleOptIn: needs unique naming an e-mail field",
		"forms: {declared: [{id: x, unique: a, doubleOptIn: {}, fields: [{name: a, type: text, required: true}]}]}":                                         "forms.declared[x].doubleOptIn: needs unique naming an e-mail field",
		"forms: {declared: [{id: x, unique: a, doubleOptIn: {confirmWithin: 10m}, fields: [{name: a, type: email, required: true}]}]}":                      "forms.declared[x].doubleOptIn.confirmWithin 10m0s: between 1h",
		"forms: {declared: [{id: x, unique: a, doubleOptIn: {resendAfter: 48h}, fields: [{name: a, type: email, required: true}]}]}":                        "forms.declared[x].doubleOptIn.resendAfter",
		"forms: {declared: [{id: x, unique: a, doubleOptIn: {}, fields: [{name: a, type: email, required: true}, {name: f, type: file}]}]}":                 "not for a form with file fields",
		"forms: {declared: [{id: x, unique: a, doubleOptIn: {}, fields: [{name: a, type: email, required: true}]}]}":                                        "forms.declared[x].doubleOptIn: set forms.publicURL",
		"forms: {publicURL: 'http://forms.example.com', declared: [{id: x, unique: a, doubleOptIn: {}, fields: [{name: a, type: email, required: true}]}]}": "the double opt-in's links need https",
		field("{name: A, type: text}"):                               "want [a-z][a-z0-9_]*",
		field("{name: _next, type: text}"):                           "want [a-z][a-z0-9_]*",
		field("{name: a, type: text}, {name: a, type: email}"):       "declared twice",
		field("{name: a, type: signature}"):                          "want one of",
		field("{name: a, type: oneof}"):                              "needs 1 to 100 choices",
		field("{name: a, type: text, choices: [x]}"):                 "only oneof and manyof",
		field("{name: a, type: oneof, choices: [x, x]}"):             "listed once",
		field("{name: a, type: text, minLength: 9, maxLength: 3}"):   "minLength <= maxLength",
		field("{name: a, type: text, maxLength: 5000}"):              "maxLength <= 4000",
		field("{name: a, type: number, maxLength: 3}"):               "for text and longtext",
		field("{name: a, type: number, min: '5', max: '1'}"):         "min <= max",
		field("{name: a, type: number, min: 'NaN'}"):                 "must be numbers",
		field("{name: a, type: date, min: '2026-02-30'}"):            "must be dates",
		field("{name: a, type: text, min: '1'}"):                     "for number and date",
		field("{name: a, type: oneof, choices: [x], maxChoices: 1}"): "for manyof fields",
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

func TestParseFormNumber(t *testing.T) {
	for s, ok := range map[string]bool{"0": true, "-1.5": true, "1e6": true, "2E-3": true, "": false, "+1": false, "01": false,
		"1.": false, ".5": false, "0x10": false, "Inf": false, "NaN": false, "1e400": false, strings.Repeat("1", 41): false,
		"-": false, "-0": true, "0.0": true, "1e": false, "1e+": false, "1e+5": true, "00": false, "1.5.5": false, "1 ": false, "١": false} {
		if _, got := ParseFormNumber(s); got != ok {
			t.Errorf("%q: %v, want %v", s, got, ok)
		}
	}
}

func TestFillPlaceholders(t *testing.T) {
	got := FillPlaceholders("Hi {{ name }}, {{missing}} {name}", func(n string) string { return map[string]string{"name": "Ada"}[n] })
	if got != "Hi Ada,  {name}" {
		t.Errorf("got %q", got)
	}
}
