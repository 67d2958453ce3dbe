// Package jsonobj is a small, strict JSON reader for the forms' flat objects. It validates the whole
// document exactly as encoding/json does (same grammar, same nesting limit, same decoding of escapes and
// surrogates — FuzzJSONObject_AgreesWithEncodingJSON checks this), but without reflection or a map: the
// known fields of one form are picked out in a single pass and only their strings are decoded. Unknown
// members are validated and skipped. Two deliberate differences from encoding/json: a member the form
// reads may appear only once (encoding/json keeps the last copy, a proxy or WAF in front may check the
// first: a parameter-pollution hole), and the body must be valid UTF-8 (RFC 8259 8.1; encoding/json
// replaces invalid bytes with U+FFFD, which would store something nobody sent). Both make the body
// invalid JSON.
//
// Why not github.com/go-json-experiment/json (encoding/json/v2), which also refuses duplicate names and
// invalid UTF-8? Measured with
//
//	go test -run '^$' -bench 'JSONObject' -benchmem -count 3 ./services/forms/jsonobj/   (bench_test.go)
//
// on the 2-core CI machine (busy, so ranges), same work on both sides (read a POST /contact body, pick
// the form's members, decode their strings):
//
//	body                  this reader                 v2 into jsontext.Value fields + string decode
//	typical (190 B)       1.8–5.6 µs, 1 alloc, 96 B     17–26 µs, 11 allocs, 400 B
//	long (14 KB)          0.8–1.1 ms, 3 allocs, 32 KB   1.0–1.4 ms, 13 allocs, 49 KB
//	duplicate name        2.1–3.4 µs, 0 allocs          8.7–10 µs, 8 allocs
//	invalid UTF-8         0.11–0.20 µs, 0 allocs         5.4–11 µs, 8 allocs
//
// It is 4–5 times cheaper on the bodies the forms get, and 40 times cheaper at refusing the hostile ones
// an unauthenticated endpoint is flooded with. And v2 would change which bodies are refused: it refuses a
// repeated member the form ignores and an escaped lone surrogate ("\ud800"), both of which this reader
// accepts like encoding/json (FuzzJSONObject_AgreesWithEncodingJSON). So it stays (docs/architecture.md,
// D14).
package jsonobj

import (
	"errors"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is the type of a member's value.
type Kind uint8

const (
	Absent Kind = iota
	Null
	True
	False
	Number
	String
	Object
	Array
)

// Value is one member's value: its kind and raw bytes (for a string, between the quotes).
type Value struct {
	Kind    Kind
	raw     []byte
	escaped bool // a string containing backslash escapes or bytes that need checking
}

// StringOf is a string value holding s as it is (no escapes): how a reader of another body format (a
// form post's fields) hands its values to code written for this package's. s must be valid UTF-8.
func StringOf(s []byte) Value { return Value{Kind: String, raw: s} }

// MaxDepth matches encoding/json's limit on nesting.
const MaxDepth = 10000

// ErrInvalid is every refusal: not one JSON object, not valid UTF-8, or a member read twice.
var ErrInvalid = errors.New("invalid JSON")

// Read reads body, which must be one JSON object in valid UTF-8, and stores the values of the
// members named in keys into vals (same index), each of which may appear once. vals must have len(keys)
// elements, all absent.
func Read(body []byte, keys []string, vals []Value) error {
	return members(body, func(key []byte, keyEscaped bool, v Value) error {
		var unescaped string
		if keyEscaped {
			unescaped = unquote(key)
		}
		for k, want := range keys {
			if keyEscaped && unescaped == want || !keyEscaped && string(key) == want {
				if vals[k].Kind != Absent {
					return ErrInvalid // a repeated member
				}
				vals[k] = v
			}
		}
		return nil
	})
}

// Each reads body, which must be one JSON object in valid UTF-8, and calls fn with every member in
// order (a declared form reads them all, to name the ones it does not declare). A member that appears
// twice is refused, as Read refuses it. fn's error stops the reading and is returned.
func Each(body []byte, fn func(key string, v Value) error) error {
	// A form's object has few members: a scan of the first ones beats a map; a body with many (a
	// hostile one can have thousands) goes on to a map, so the check stays linear.
	var seenBuf [16]string
	seen := seenBuf[:0]
	var many map[string]bool
	return members(body, func(key []byte, keyEscaped bool, v Value) error {
		k := string(key)
		if keyEscaped {
			k = unquote(key)
		}
		switch {
		case many != nil:
			if many[k] {
				return ErrInvalid
			}
			many[k] = true
		case slices.Contains(seen, k):
			return ErrInvalid
		case len(seen) < cap(seenBuf):
			seen = append(seen, k)
		default:
			many = make(map[string]bool, 2*len(seen))
			for _, s := range seen {
				many[s] = true
			}
			many[k] = true
		}
		return fn(k, v)
	})
}

// Strings returns the elements of an array value of strings; false when it is not one.
func (v Value) Strings() ([]string, bool) {
	if v.Kind != Array {
		return nil, false
	}
	p := parser{b: v.raw, i: 1}
	var out []string
	p.ws()
	if p.peek() == ']' {
		return out, true
	}
	for {
		p.ws()
		if p.peek() != '"' {
			return nil, false
		}
		raw, esc, err := p.str()
		if err != nil {
			return nil, false
		}
		out = append(out, Value{Kind: String, raw: raw, escaped: esc}.Text())
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			return out, true
		default:
			return nil, false
		}
	}
}

// Raw is a number's text as it stands in the body (a string's is its content between the quotes).
func (v Value) Raw() string { return string(v.raw) }

// members checks body and calls fn with each member's key (raw, between the quotes) and value.
func members(body []byte, fn func(key []byte, keyEscaped bool, v Value) error) error {
	if !utf8.Valid(body) {
		return ErrInvalid
	}
	p := parser{b: body}
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return ErrInvalid
	}
	p.i++
	p.ws()
	if p.peek() == '}' {
		p.i++
	} else {
		for {
			p.ws()
			if p.peek() != '"' {
				return ErrInvalid
			}
			key, keyEscaped, err := p.str()
			if err != nil {
				return err
			}
			p.ws()
			if p.peek() != ':' {
				return ErrInvalid
			}
			p.i++
			p.ws()
			v, err := p.value(1)
			if err != nil {
				return err
			}
			if err := fn(key, keyEscaped, v); err != nil {
				return err
			}
			p.ws()
			switch p.peek() {
			case ',':
				p.i++
				continue
			case '}':
				p.i++
			default:
				return ErrInvalid
			}
			break
		}
	}
	p.ws()
	if p.i != len(p.b) {
		return ErrInvalid
	}
	return nil
}

type parser struct {
	b []byte
	i int
}

func (p *parser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads any JSON value inside a container at nesting depth d (the top-level object is 1).
func (p *parser) value(d int) (Value, error) {
	start := p.i
	switch c := p.peek(); {
	case c == '"':
		raw, esc, err := p.str()
		return Value{Kind: String, raw: raw, escaped: esc}, err
	case c == '{':
		err := p.container(d, '}', true)
		return Value{Kind: Object, raw: p.b[start:p.i]}, err
	case c == '[':
		err := p.container(d, ']', false)
		return Value{Kind: Array, raw: p.b[start:p.i]}, err
	case c == 't':
		return Value{Kind: True}, p.literal("true")
	case c == 'f':
		return Value{Kind: False}, p.literal("false")
	case c == 'n':
		return Value{Kind: Null}, p.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		err := p.number()
		return Value{Kind: Number, raw: p.b[start:p.i]}, err
	}
	return Value{}, ErrInvalid
}

// container reads an object (members) or array (elements) nested inside depth d.
func (p *parser) container(d int, end byte, members bool) error {
	d++
	if d > MaxDepth {
		return ErrInvalid
	}
	p.i++
	p.ws()
	if p.peek() == end {
		p.i++
		return nil
	}
	for {
		p.ws()
		if members {
			if p.peek() != '"' {
				return ErrInvalid
			}
			if _, _, err := p.str(); err != nil {
				return err
			}
			p.ws()
			if p.peek() != ':' {
				return ErrInvalid
			}
			p.i++
			p.ws()
		}
		if _, err := p.value(d); err != nil {
			return err
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case end:
			p.i++
			return nil
		default:
			return ErrInvalid
		}
	}
}

func (p *parser) literal(lit string) error {
	if len(p.b)-p.i < len(lit) || string(p.b[p.i:p.i+len(lit)]) != lit {
		return ErrInvalid
	}
	p.i += len(lit)
	return nil
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() error {
	if p.peek() == '-' {
		p.i++
	}
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case '1' <= c && c <= '9':
		p.digits()
	default:
		return ErrInvalid
	}
	if p.peek() == '.' {
		p.i++
		if !p.digits() {
			return ErrInvalid
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if !p.digits() {
			return ErrInvalid
		}
	}
	return nil
}

func (p *parser) digits() bool {
	start := p.i
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// str reads a string at p.i (the opening quote) and returns its raw content. escaped reports content
// that needs unquote: escapes or non-ASCII bytes (which may be invalid UTF-8).
func (p *parser) str() (raw []byte, escaped bool, err error) {
	p.i++
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			raw = p.b[start:p.i]
			p.i++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			p.i++
			switch p.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				p.i++
				for range 4 {
					if !isHex(p.peek()) {
						return nil, false, ErrInvalid
					}
					p.i++
				}
			default:
				return nil, false, ErrInvalid
			}
		case c < 0x20:
			return nil, false, ErrInvalid
		default:
			if c >= utf8.RuneSelf {
				escaped = true
			}
			p.i++
		}
	}
	return nil, false, ErrInvalid
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Text returns a string value's Go string.
func (v Value) Text() string {
	if !v.escaped {
		return string(v.raw)
	}
	return unquote(v.raw)
}

// unquote decodes validated string content like encoding/json: escapes, UTF-16 surrogate pairs, and
// U+FFFD for lone surrogates and invalid UTF-8.
func unquote(s []byte) string {
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			i++
			switch s[i] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(s[i+1 : i+5])
				i += 5
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, hex4(s[i+2:i+6])); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			default: // " \ /
				b = append(b, s[i])
			}
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
		}
	}
	return string(b)
}

func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
