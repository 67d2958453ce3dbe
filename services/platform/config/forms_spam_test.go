package config

import (
	"strings"
	"testing"
)

func TestSpam_Validate(t *testing.T) {
	ok := `allowedOrigins: [https://www.example.com]
forms:
  spam:
    threshold: 6
    languages: [en, de]
    blockedAddresses: [bad@example.com]
    blockedDomains: [spam.example, Shop.Spam.Example]
    blockedNetworks: [203.0.113.0/24, "2001:db8::/32"]
  declared:
    - id: demo
      fields: [{name: notes, type: longtext}]
      spam: {action: refuse}
`
	c, err := Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("valid spam settings refused: %v", err)
	}
	if got := c.Forms.SpamOf(c.Forms.FindDeclared("demo")).ActionOf(); got != SpamRefuse {
		t.Errorf("the form's action %q, want its own refuse", got)
	}
	if got := c.Forms.SpamOf(nil); got.ActionOf() != SpamFolder || got.Threshold != 6 || len(got.Networks()) != 2 {
		t.Errorf("/contact's spam %+v, want forms.spam with the default action folder", got)
	}

	bad := `allowedOrigins: [https://www.example.com]
forms:
  spam:
    action: quarantine
    threshold: -1
    languages: [english]
    blockedAddresses: ["Bad <bad@example.com>"]
    blockedDomains: ["https://spam.example/"]
    blockedNetworks: [203.0.113.0/33, 10.0.0.1]
  declared:
    - id: demo
      fields: [{name: notes, type: longtext}]
      spam: {threshold: 101}
`
	c, err = Parse([]byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	err = c.Validate()
	if err == nil {
		t.Fatal("invalid spam settings accepted")
	}
	for _, want := range []string{
		`forms.spam.action "quarantine": want folder, refuse or off`,
		`forms.spam.threshold -1`,
		`forms.spam.languages[0] "english"`,
		`forms.spam.blockedAddresses[0]`,
		`forms.spam.blockedDomains[0] "https://spam.example/"`,
		`forms.spam.blockedNetworks[0] "203.0.113.0/33"`,
		`forms.spam.blockedNetworks[1] "10.0.0.1": want a range in CIDR notation`,
		`forms.declared[demo].spam.threshold 101`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
