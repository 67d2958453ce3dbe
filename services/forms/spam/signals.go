package spam

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode"
)

// linkPattern finds links as people and bots write them: with a scheme, or starting www.
var linkPattern = regexp.MustCompile(`(?i)\b(?:https?://|www\.)([a-z0-9\-\.\p{L}]+\.[a-z\p{L}]{2,})`)

// Links returns the host of every link in text, lower case, without "www.".
func Links(text string) []string {
	lower := strings.ToLower(text)
	if !strings.Contains(lower, "http") && !strings.Contains(lower, "www.") {
		return nil // most messages: no pass of the expression
	}
	var hosts []string
	for _, m := range linkPattern.FindAllStringSubmatch(text, 50) {
		h := strings.TrimPrefix(strings.ToLower(strings.TrimRight(m[1], ".")), "www.")
		hosts = append(hosts, h)
	}
	return hosts
}

// shorteners hide where a link goes; genuine senders rarely use them in a form.
var shorteners = map[string]bool{
	"bit.ly": true, "tinyurl.com": true, "goo.gl": true, "t.co": true, "ow.ly": true, "is.gd": true,
	"buff.ly": true, "cutt.ly": true, "rb.gy": true, "shorturl.at": true, "tiny.cc": true, "t.ly": true,
	"rebrand.ly": true, "s.id": true, "v.gd": true, "clck.ru": true, "bl.ink": true, "short.io": true,
}

// abusedTLDs are the top-level domains that the most abused lists (Spamhaus's among them) name year
// after year: cheap, and rarely the home of a club or a company that writes to a form.
var abusedTLDs = map[string]bool{"xyz": true, "top": true, "click": true, "win": true, "biz": true, "info": true,
	"shop": true, "loan": true, "bid": true, "pro": true, "agency": true, "cam": true, "icu": true, "buzz": true,
	"online": true, "site": true, "club": true, "vip": true, "work": true, "rest": true, "fit": true, "cfd": true}

// abusedTLD reports whether host is in one of abusedTLDs.
func abusedTLD(host string) bool {
	dot := strings.LastIndexByte(host, '.')
	return dot >= 0 && abusedTLDs[host[dot+1:]]
}

var markupPattern = regexp.MustCompile(`(?i)<a\s+href|\[url[=\]]|\[link[=\]]`)

func markup(lower string) bool {
	return (strings.Contains(lower, "href") || strings.Contains(lower, "[url") || strings.Contains(lower, "[link")) &&
		markupPattern.MatchString(lower)
}

// LanguageScripts maps a language (ISO 639-1) to the scripts its text is written in.
var LanguageScripts = map[string][]*unicode.RangeTable{
	"en": {unicode.Latin}, "de": {unicode.Latin}, "fr": {unicode.Latin}, "es": {unicode.Latin},
	"it": {unicode.Latin}, "nl": {unicode.Latin}, "pt": {unicode.Latin}, "pl": {unicode.Latin},
	"cs": {unicode.Latin}, "da": {unicode.Latin}, "sv": {unicode.Latin}, "nb": {unicode.Latin},
	"fi": {unicode.Latin}, "tr": {unicode.Latin}, "ro": {unicode.Latin}, "hu": {unicode.Latin},
	"ru": {unicode.Cyrillic, unicode.Latin}, "uk": {unicode.Cyrillic, unicode.Latin}, "bg": {unicode.Cyrillic, unicode.Latin},
	"sr": {unicode.Cyrillic, unicode.Latin}, "el": {unicode.Greek, unicode.Latin},
	"zh": {unicode.Han, unicode.Latin}, "ja": {unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Latin},
	"ko": {unicode.Hangul, unicode.Han, unicode.Latin}, "ar": {unicode.Arabic, unicode.Latin},
	"he": {unicode.Hebrew, unicode.Latin}, "hi": {unicode.Devanagari, unicode.Latin}, "th": {unicode.Thai, unicode.Latin},
}

// foreignShare is the share of text's letters in none of scripts (0 when it has fewer than 10 letters).
func foreignShare(text string, scripts []*unicode.RangeTable) float64 {
	letters, foreign := 0, 0
	for _, r := range text {
		if !unicode.IsLetter(r) {
			continue
		}
		letters++
		if !unicode.IsOneOf(scripts, r) {
			foreign++
		}
	}
	if letters < 10 {
		return 0
	}
	return float64(foreign) / float64(letters)
}

// phrases are wording that the corpus's spam uses and its genuine messages do not, each worth its points
// (lower case; matched in the lower-cased text).
var phrases = []struct {
	s      string
	points float64
}{
	// SEO and marketing offers
	{"seo", 1}, {"backlink", 2}, {"first page of google", 3}, {"page 1 of google", 3}, {"google ranking", 2},
	{"domain authority", 2}, {"guest post", 1.5}, {"organic traffic", 1.5}, {"website traffic", 1.5},
	{"rank your website", 2.5}, {"rank higher", 1.5}, {"lead generation", 1}, {"cold email", 1},
	{"redesign your website", 1.5}, {"web design services", 1.5}, {"white label", 1}, {"10x", 1},
	{"unsubscribe", 1}, {"opt out", 1}, {"reply stop", 2}, {"reply with", 1},
	// money, crypto, gambling
	{"crypto", 2}, {"bitcoin", 2}, {"btc", 1.5}, {"usdt", 2}, {"ethereum", 1.5}, {"wallet", 1},
	{"investment opportunity", 3}, {"passive income", 3}, {"guaranteed", 1.5}, {"% profit", 2},
	{"per day", 1}, {"per week", 0.5}, {"earn $", 2}, {"make money", 2.5}, {"casino", 3}, {"jackpot", 2.5},
	{"free spins", 3}, {"betting", 2}, {"forex", 2.5}, {"trading signals", 2.5}, {"airdrop", 3},
	{"loan", 1}, {"credit score", 1.5}, {"no credit check", 3}, {"risk-free", 2}, {"risk free", 2},
	{"withdraw", 1.5}, {"binary option", 3},
	// pharma and adult
	{"viagra", 4}, {"cialis", 4}, {"pharmacy", 2.5}, {"no prescription", 3.5}, {"pills", 2},
	{"weight loss", 2}, {"keto", 2}, {"enlargement", 3}, {"dating", 2}, {"hot singles", 4}, {"sexy", 2.5},
	// bulk mail wording
	{"click here", 2}, {"act now", 2}, {"limited time", 1.5}, {"100% free", 2.5}, {"dear sir/madam", 1.5},
	{"dear sir / madam", 1.5}, {"dear website owner", 3}, {"dear business owner", 2.5}, {"dear friend", 2},
	{"congratulations", 1.5}, {"you have been selected", 3}, {"you have won", 3}, {"winner", 1.5},
	{"work from home", 2.5}, {"special offer", 1.5}, {"exclusive deal", 2}, {"buy now", 2}, {"order now", 1.5},
	{"cheap", 1.5}, {"discount", 1}, {"% off", 1.5}, {"instagram followers", 3}, {"followers", 1},
	{"whatsapp", 1}, {"telegram", 1.5}, {"our agency", 1}, {"outsourc", 1}, {"virtual assistant", 1.5},
	{"i noticed your website", 2}, {"i was checking your website", 2}, {"i came across your website", 1.5},
	{"your site could", 1.5}, {"your website is not", 2}, {"app development", 1}, {"video explainer", 2},
	{"explainer video", 2}, {"fiverr", 2}, {"upwork", 1},
	{"subscribers", 1.5}, {"vip", 1.5}, {"sports betting", 1}, {"your listing", 2}, {"business proposal", 2},
	{"kindly", 1.5}, {"earliest convenience", 1}, {"visitors to your website", 2}, {"professional developers", 1},
	{"fast cash", 2}, {"instant approval", 2}, {"convert visitors", 2}, {"agency provides", 1},
	// German bulk mail
	{"gratis", 1}, {"gewinn", 1.5}, {"jetzt kaufen", 2}, {"sonderangebot", 1.5}, {"geld verdienen", 2.5},
	{"kostenlos testen", 0.5}, {"gewonnen", 2}, {"gewinnspiel", 2},
	{"seite 1", 1.5},
}

// money reports an amount in a currency ("$500", "€ 20", "250 USDT") in lower-cased text; percent a
// percentage of two or three digits ("300%"): offers quote them, enquiries rarely do. Scanned by hand: a
// regular expression without a literal prefix backtracks through the whole text.
func money(lower string) bool {
	for i := 0; i < len(lower); i++ {
		switch {
		case lower[i] == '$' || strings.HasPrefix(lower[i:], "€") || strings.HasPrefix(lower[i:], "£"):
			j := i + 1
			if lower[i] != '$' {
				j = i + len("€") // € and £ are both longer than a byte; £ is two, € three
				if strings.HasPrefix(lower[i:], "£") {
					j = i + len("£")
				}
			}
			if j < len(lower) && lower[j] == ' ' {
				j++
			}
			if j < len(lower) && isDigit(lower[j]) {
				return true
			}
		case isDigit(lower[i]) && (i+1 == len(lower) || !isDigit(lower[i+1])):
			rest := strings.TrimPrefix(lower[i+1:], " ")
			for _, c := range []string{"usdt", "usd", "eur", "btc"} {
				if strings.HasPrefix(rest, c) && (len(rest) == len(c) || !isLetter(rest[len(c)])) {
					return true
				}
			}
		}
	}
	return false
}

func percent(lower string) bool {
	for i := strings.IndexByte(lower, '%'); i >= 0; {
		j := i
		if j > 0 && lower[j-1] == ' ' {
			j--
		}
		n := 0
		for j > 0 && isDigit(lower[j-1]) {
			j--
			n++
		}
		if n >= 2 {
			return true
		}
		next := strings.IndexByte(lower[i+1:], '%')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || c >= 0x80 }

// phraseScore adds the points of the phrases in lower (lower-cased text), at most 8.
func phraseScore(lower string) float64 {
	score := 0.0
	if money(lower) {
		score++
	}
	if percent(lower) {
		score += 0.5
	}
	for _, p := range phrases {
		if strings.Contains(lower, p.s) {
			score += p.points
		}
	}
	return min(score, 8)
}

// shouting scores text that is mostly capitals, and runs of ! or $.
func shouting(text string) float64 {
	letters, upper := 0, 0
	for _, r := range text {
		if unicode.IsLetter(r) {
			letters++
			if unicode.IsUpper(r) {
				upper++
			}
		}
	}
	score := 0.0
	if letters >= 20 && float64(upper) > 0.6*float64(letters) {
		score += 2
	}
	if strings.Contains(text, "!!!") || strings.Contains(text, "$$") || strings.Contains(text, "€€") {
		score += 1
	}
	return score
}

// Fingerprint names text's content however it is spaced, cased or numbered, so that a blast that varies a
// name, a number or the spacing still counts as the same; "" for text too short to say (a "thanks" is
// repeated by genuine senders).
func Fingerprint(text []string) string {
	var b strings.Builder
	letters := 0
	for _, t := range text {
		for _, r := range strings.ToLower(t) {
			if unicode.IsLetter(r) {
				b.WriteRune(r)
				letters++
			}
		}
	}
	if letters < 40 {
		return ""
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}
