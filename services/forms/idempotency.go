package forms

import (
	"github.com/dunglas/httpsfv"
)

// parseIdempotencyKey reads the Idempotency-Key header as the IETF draft defines it: an RFC 8941
// structured-field string, quoted ("8e03978e-…"), whose parameters, if any, are ignored. An unquoted
// value is the legacy form many clients (and this service's own documentation, before the draft) send:
// it is taken as it is, so that `"abc"` and `abc` are the same key and a client can move to the quoted
// form without its keys changing. An absent or empty header means "no key"; code is the header error
// (D4's codes): too_long over 255 bytes, invalid_type for anything but visible ASCII or a quoted value
// that is not a valid sf-string.
func parseIdempotencyKey(raw []byte) (key, code string) {
	if len(raw) == 0 {
		return "", ""
	}
	if raw[0] != '"' {
		return string(raw), checkIdempotencyKey(string(raw))
	}
	item, err := httpsfv.UnmarshalItem([]string{string(raw)})
	if err != nil {
		return "", CodeInvalidType
	}
	s, ok := item.Value.(string)
	if !ok {
		return "", CodeInvalidType
	}
	if s == "" {
		return "", CodeRequired // a quoted empty string: a key was meant, but none was given
	}
	return s, checkIdempotencyKey(s)
}
