package passwords_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/auth/passwords"
)

func TestJudge_RefusesWhatTheRulesRefuse(t *testing.T) {
	about := []string{"ada.lovelace@example.com", "Ada Lovelace"}
	for _, tc := range []struct {
		password string
		want     passwords.Reason
	}{
		{"password1234", passwords.Breached},                                // rank 31,873 of the breach corpus
		{"PASSWORD1234", passwords.Breached},                                // case does not help
		{"qwertyuiop123", passwords.Breached},                               // rank 36,911
		{"iloveyou1234", passwords.Breached},                                // rank 214,907: the list is the top 1,000,000
		{"kq8-vR2!mx9", passwords.TooShort},                                 // 11 characters, however random
		{"", passwords.TooShort},                                            //
		{strings.Repeat("ä", 11), passwords.TooShort},                       // characters, not bytes
		{strings.Repeat("x9!", 86), passwords.TooLong},                      // 258
		{"mmmmmmmmmmmmmmmmmmmmmmm", passwords.Guessable},                    // a repeat
		{"zyxwvutsrqpo9", passwords.Guessable},                              // a sequence
		{"Passwort12345", passwords.Guessable},                              // a word and a sequence
		{"qwertzuiopü1", passwords.Guessable},                               // a keyboard walk
		{"adalovelace2026", passwords.Personal},                             // the account's name and a year
		{"lovelace1234", passwords.Personal},                                //
		{"ada.lovelace@example.com", passwords.Personal},                    // the address itself
		{"kq8-vR2!mx9Z", passwords.OK},                                      // 12 random characters
		{"correct horse battery staple", passwords.OK},                      // unrelated words
		{"Zeitungspapier im Regen", passwords.OK},                           //
		{strings.Repeat("tx9!Kw2#", 32), passwords.OK},                      // 256: the longest
		{"a brand new passphrase" + strings.Repeat("x", 200), passwords.OK}, // judged by its first 32 characters
	} {
		if got := passwords.Judge(tc.password, about...); got != tc.want {
			t.Errorf("Judge(%q) = %q, want %q", tc.password, got, tc.want)
		}
	}
}

// The estimate reads a bounded part of the password: the slowest input zxcvbn knows (a run of l33t
// characters, whose substitutions it enumerates; a long repeat) takes tens of milliseconds, not seconds.
func TestJudge_TimeIsBoundedWhateverThePassword(t *testing.T) {
	for _, p := range []string{strings.Repeat("a", 256), strings.Repeat("4@8({[<3691!|70$5+%2", 13)[:256], strings.Repeat("ä€𝄞", 85)} {
		start := time.Now()
		passwords.Judge(p, "ada@example.com", "Ada")
		if d := time.Since(start); d > time.Second {
			t.Errorf("Judge of %d characters of %q…: %v", utf8.RuneCountInString(p), p[:4], d)
		}
	}
}

func TestOnBreachList_FindsEveryEntryAndNothingElse(t *testing.T) {
	for _, p := range []string{"password1234", "123456789012", "1qaz2wsx3edc", "qwertyuiop123"} {
		if !passwords.OnBreachList(p) {
			t.Errorf("%q is not found", p)
		}
	}
	for _, p := range []string{"password123", "password12345x", "", "kq8-vR2!mx9Z", "zzzzzzzzzzzzzzzzzzzzx", "\xff"} {
		if passwords.OnBreachList(p) {
			t.Errorf("%q is found", p)
		}
	}
}

func TestList_IsSortedLowerCaseAndLongEnough(t *testing.T) {
	n, err := passwords.CheckList()
	if err != nil {
		t.Fatal(err)
	}
	if n < 40_000 {
		t.Errorf("the list has %d entries, want the ~44,000 of at least 12 characters of the top 1,000,000", n)
	}
}

func TestMessage_EachReasonHasOne(t *testing.T) {
	for _, r := range []passwords.Reason{passwords.TooShort, passwords.TooLong, passwords.Breached, passwords.Personal, passwords.Guessable} {
		if r.Message() == "" {
			t.Errorf("%q has no message", r)
		}
	}
	if passwords.OK.Message() != "" {
		t.Error("OK has a message")
	}
}

// A lookup is a binary search of the decompressed list (the first lookup decompresses it, once).
func BenchmarkOnBreachList(b *testing.B) {
	passwords.OnBreachList("warm up")
	b.ReportAllocs()
	for b.Loop() {
		passwords.OnBreachList("Password1234")
	}
}

func BenchmarkJudge(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		passwords.Judge("correct horse battery staple", "ada@example.com", "Ada Lovelace")
	}
}

func FuzzJudge(f *testing.F) {
	for _, s := range []string{"password1234", "kq8-vR2!mx9Z", "ada@example.com", "\xff\xfe", strings.Repeat("a", 40)} {
		f.Add(s, "ada@example.com")
	}
	f.Fuzz(func(t *testing.T, p, about string) {
		if len(p) > 4*passwords.MaxLen {
			return
		}
		r := passwords.Judge(p, about, "Ada")
		n := utf8.RuneCountInString(p)
		switch {
		case n < passwords.MinLen && r != passwords.TooShort, n > passwords.MaxLen && r != passwords.TooLong:
			t.Fatalf("Judge(%q) = %q for %d characters", p, r, n)
		case r == passwords.OK && passwords.OnBreachList(p):
			t.Fatalf("Judge(%q) accepted a listed password", p)
		}
	})
}
