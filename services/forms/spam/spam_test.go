package spam

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/platform/config"
)

const genuine = "Hello, we are a rowing club of 120 members and would like to know what the forms cost per year. Thanks, Anna"

func TestScore_GenuineEnquiry_IsHam(t *testing.T) {
	v := NewRules(Settings{Languages: []string{"en", "de"}}).Score(Submission{Email: "anna@example.org", Text: []string{genuine}}, Signals{Seen: 1, Elapsed: time.Minute})
	if v.Spam || v.Score != 0 || v.Reasons != nil {
		t.Fatalf("verdict %+v, want ham with score 0", v)
	}
}

func TestScore_Blocklists_AreSpamAlone(t *testing.T) {
	r := NewRules(Settings{Addresses: []string{"Bad@Example.com"}, Domains: []string{"spam.example"},
		Networks: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32")}})
	for _, tc := range []struct {
		name   string
		sub    Submission
		reason string
	}{
		{"address, any case", Submission{Email: "bad@EXAMPLE.com", Text: []string{genuine}}, ReasonBlockedAddress},
		{"domain of the sender", Submission{Email: "x@mail.spam.example", Text: []string{genuine}}, ReasonBlockedDomain},
		{"domain of a link", Submission{Text: []string{genuine + " https://www.shop.spam.example/x"}}, ReasonBlockedLink},
		{"IPv4 range", Submission{Text: []string{genuine}, Client: netip.MustParseAddr("203.0.113.9")}, ReasonBlockedIP},
		{"IPv4 in IPv6", Submission{Text: []string{genuine}, Client: netip.MustParseAddr("::ffff:203.0.113.9")}, ReasonBlockedIP},
		{"IPv6 range", Submission{Text: []string{genuine}, Client: netip.MustParseAddr("2001:db8::1")}, ReasonBlockedIP},
	} {
		v := r.Score(tc.sub, Signals{})
		if !v.Spam || !slices.Contains(v.Reasons, tc.reason) {
			t.Errorf("%s: verdict %+v, want spam for %s", tc.name, v, tc.reason)
		}
	}
	// Near misses are not blocked.
	for _, sub := range []Submission{
		{Email: "x@notspam.example", Text: []string{genuine}},
		{Text: []string{genuine}, Client: netip.MustParseAddr("203.0.114.1")},
	} {
		if v := r.Score(sub, Signals{}); v.Spam {
			t.Errorf("%+v: verdict %+v, want ham", sub, v)
		}
	}
}

func TestScore_Script_OnlyWhenTheFormsLanguagesDoNotUseIt(t *testing.T) {
	msg := Submission{Text: []string{"Здравствуйте! Предлагаем продвижение сайта в поисковых системах. Быстро и недорого."}}
	if v := NewRules(Settings{Languages: []string{"en", "de"}}).Score(msg, Signals{}); !v.Spam || !slices.Contains(v.Reasons, ReasonScript) {
		t.Errorf("Cyrillic to an English form: %+v, want spam for script", v)
	}
	if v := NewRules(Settings{Languages: []string{"ru", "en"}}).Score(msg, Signals{}); slices.Contains(v.Reasons, ReasonScript) {
		t.Errorf("Cyrillic to a Russian form: %+v, want no script reason", v)
	}
	if v := NewRules(Settings{}).Score(msg, Signals{}); slices.Contains(v.Reasons, ReasonScript) {
		t.Errorf("no languages declared: %+v, want no script check", v)
	}
}

func TestScore_RepeatsAndSpeed(t *testing.T) {
	r := NewRules(Settings{})
	sub := Submission{Text: []string{genuine}}
	if v := r.Score(sub, Signals{Seen: RepeatsAllowed}); v.Score != 0 {
		t.Errorf("seen %d times: %+v, want 0", RepeatsAllowed, v)
	}
	if v := r.Score(sub, Signals{Seen: 1000}); !slices.Contains(v.Reasons, ReasonRepeated) || v.Spam {
		t.Errorf("the same genuine text a thousand times: %+v, want ham with the reason repeated", v)
	}
	blast := Submission{Text: []string{"Hello, I would like to discuss a business proposal with you. Kindly reply."}}
	if v := r.Score(blast, Signals{Seen: RepeatsAllowed + 3}); !slices.Contains(v.Reasons, ReasonRepeated) || !v.Spam {
		t.Errorf("blast: %+v, want spam for repeated", v)
	}
	if v := r.Score(sub, Signals{Elapsed: time.Second}); !slices.Contains(v.Reasons, ReasonTooFast) {
		t.Errorf("1 s after the token: %+v, want too_fast", v)
	}
	if v := r.Score(sub, Signals{Elapsed: MinElapsed}); v.Score != 0 {
		t.Errorf("%v after the token: %+v, want 0", MinElapsed, v)
	}
}

func TestScore_ThresholdIsTheForms(t *testing.T) {
	sub := Submission{Text: []string{genuine + " See https://a.example and https://b.example and https://c.example"}}
	if v := NewRules(Settings{}).Score(sub, Signals{}); v.Spam || v.Score != 3 {
		t.Fatalf("three links at the default threshold: %+v, want ham scored 3", v)
	}
	if v := NewRules(Settings{Threshold: 3}).Score(sub, Signals{}); !v.Spam {
		t.Errorf("three links at threshold 3: %+v, want spam", v)
	}
}

func TestFingerprint_IgnoresSpacingCaseAndNumbers(t *testing.T) {
	a := Fingerprint([]string{"Earn 500 dollars a day with our trading bot, join now and be rich tomorrow"})
	b := Fingerprint([]string{"EARN 900 dollars a day  with our trading bot -- join now and be rich tomorrow!"})
	if a == "" || a != b {
		t.Errorf("fingerprints %q and %q, want one", a, b)
	}
	if Fingerprint([]string{"Thanks a lot!"}) != "" {
		t.Error("a short text has a fingerprint; genuine senders repeat those")
	}
}

func TestTokenAge(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	tok := IssueToken(key, "demo", at)
	if age, ok := TokenAge(key, "demo", tok, at.Add(7*time.Second)); !ok || age != 7*time.Second {
		t.Errorf("age %v %v, want 7s", age, ok)
	}
	for name, check := range map[string]func() (time.Duration, bool){
		"other form":  func() (time.Duration, bool) { return TokenAge(key, "other", tok, at.Add(time.Minute)) },
		"other key":   func() (time.Duration, bool) { return TokenAge([]byte("another key"), "demo", tok, at.Add(time.Minute)) },
		"expired":     func() (time.Duration, bool) { return TokenAge(key, "demo", tok, at.Add(TokenLifetime+time.Second)) },
		"from future": func() (time.Duration, bool) { return TokenAge(key, "demo", tok, at.Add(-time.Minute)) },
		"garbage":     func() (time.Duration, bool) { return TokenAge(key, "demo", "!!", at) },
		"truncated":   func() (time.Duration, bool) { return TokenAge(key, "demo", tok[:10], at) },
	} {
		if _, ok := check(); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRulesOf_KnowsTheScriptsOfEveryConfiguredLanguage(t *testing.T) {
	for _, l := range config.SpamLanguages {
		if len(LanguageScripts[l]) == 0 {
			t.Errorf("config.SpamLanguages names %q, whose scripts the scorer does not know", l)
		}
	}
	r := RulesOf(&config.Spam{Threshold: 7, BlockedNetworks: []string{"203.0.113.7/24"}})
	if r.Threshold != 7 || !r.Score(Submission{Client: netip.MustParseAddr("203.0.113.200")}, Signals{}).Spam {
		t.Errorf("rules %+v: want threshold 7 and the masked range blocked", r)
	}
}

func TestMoneyAndPercent(t *testing.T) {
	for text, want := range map[string]bool{
		"earn $500 a day": true, "only € 20": true, "£9 off": true, "deposit 250 usdt": true, "0.5 btc now": true,
		"we are 120 members": false, "costs usd?": false, "$ and €": false, "500 usdtx": false, "2 eurovisions": false,
	} {
		if got := money(text); got != want {
			t.Errorf("money(%q) = %v, want %v", text, got, want)
		}
	}
	for text, want := range map[string]bool{
		"300% more": true, "a 20 % discount": true, "5% only": false, "100%% sure": true, "no percent": false, "%": false,
	} {
		if got := percent(text); got != want {
			t.Errorf("percent(%q) = %v, want %v", text, got, want)
		}
	}
}
