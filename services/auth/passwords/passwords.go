// Package passwords judges a new password: long enough, not on the list of passwords known from
// breaches, and not easy to guess (the zxcvbn estimate, which also knows the account's own address and
// name). It answers with a Reason the pages and the CLI turn into a message; it stores nothing (D54).
package passwords

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trustelem/zxcvbn"
	"github.com/trustelem/zxcvbn/match"
)

// The rules for a new password (docs/auth.md "Passwords", D54).
const (
	// MinLen is the fewest characters of a new password. Passwords set before the rule keep working; a
	// sign-in with one that fails the rules asks its owner to change it.
	MinLen = 12
	// MaxLen is the most characters of any password (a passphrase fits; the hash's work stays bounded).
	MaxLen = 256
	// MinScore is the least zxcvbn score (0–4) of a new password: 3 is "safely unguessable: moderate
	// protection from an offline slow-hash scenario", fewer than 10^10 but at least 10^8 guesses, which is
	// what an attacker holding our argon2id hashes faces.
	MinScore = 3
	// MinScorePersonal is the least score of a password built on the account's own address or name: 4,
	// at least 10^10 guesses. zxcvbn adds 10^8 to any password of three pieces, so "adalovelace2026"
	// would score 3, but whoever targets Ada tries her name and the years first.
	MinScorePersonal = 4
	// estimateRunes is how much of the password the estimate reads: zxcvbn's time grows faster than the
	// square of the length (256 characters of "a" take seconds), 32 take at most some tens of
	// milliseconds; a password whose first 32 characters are easy to guess is refused however it goes on.
	estimateRunes = 32
)

// Reason says why a new password is refused; "" (OK) when it is not.
type Reason string

// The reasons, in the order they are checked.
const (
	OK        Reason = ""
	TooShort  Reason = "too_short"
	TooLong   Reason = "too_long"
	Breached  Reason = "breached"
	Personal  Reason = "personal"
	Guessable Reason = "guessable"
)

// Message is what the person is told, in English: the pages translate it (page's catalogue).
func (r Reason) Message() string {
	switch r {
	case OK:
		return ""
	case TooShort, TooLong:
		return "Use 12 to 256 characters."
	case Breached:
		return "This password appears in lists of passwords leaked in data breaches, which attackers try first. Choose another one."
	case Personal:
		return "This password is easy to guess from your e-mail address or name. Choose another one."
	default:
		return "This password is easy to guess (a common word, name, date, keyboard pattern or sequence). Use a few unrelated words, or choose another one."
	}
}

// Judge returns why password may not be set as a new password, or OK. about is what is known of the
// account (its e-mail address, its name): a password made of them is easy to guess for anyone who knows
// whose it is.
func Judge(password string, about ...string) Reason {
	n := utf8.RuneCountInString(password)
	switch {
	case n < MinLen:
		return TooShort
	case n > MaxLen:
		return TooLong
	case OnBreachList(password):
		return Breached
	}
	return estimate(password, about)
}

// estimate is the zxcvbn judgement of the password's first estimateRunes characters.
func estimate(password string, about []string) Reason {
	if !utf8.ValidString(password) {
		return Guessable // zxcvbn scores it 0; no form sends one
	}
	if r := []rune(password); len(r) > estimateRunes {
		password = string(r[:estimateRunes])
	}
	res := zxcvbn.PasswordStrength(password, hints(about))
	personal := slices.ContainsFunc(res.Sequence, func(m *match.Match) bool { return m.DictionaryName == "user_inputs" })
	switch {
	case personal && res.Score < MinScorePersonal:
		return Personal
	case res.Score < MinScore:
		return Guessable
	}
	return OK
}

// hints are the words zxcvbn is told of the account: each value whole, and each of its parts (the
// address's local part and domain labels, the name's words) of three characters or more.
func hints(about []string) []string {
	var out []string
	for _, v := range about {
		v = strings.ToLower(strings.TrimSpace(v))
		if v == "" {
			continue
		}
		out = append(out, v)
		for _, w := range strings.FieldsFunc(v, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if utf8.RuneCountInString(w) >= 3 && w != v {
				out = append(out, w)
			}
		}
	}
	return out
}
