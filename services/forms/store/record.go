package store

import (
	"time"
	"unicode/utf8"
)

// WaitlistRecord and ContactRecord are what is stored: the validated fields of a submission plus where
// and when. The JSON names are the stored format, which export, erasure and delivery read.
type WaitlistRecord struct {
	Email       string    `json:"email"`
	Name        string    `json:"name,omitempty"`
	Association string    `json:"association,omitempty"`
	Role        string    `json:"role,omitempty"`
	Size        string    `json:"size,omitempty"`
	Consent     bool      `json:"consent"`
	CreatedAt   time.Time `json:"created_at"`
	Origin      string    `json:"origin,omitempty"`
	// The double opt-in's part (optin.go): the entry's id in its links, its state (pending, confirmed,
	// unsubscribed; absent for an entry taken without the opt-in), the consent text's version the site
	// showed, and when the state changed. The scripts set the times, the handler the rest.
	ID             string    `json:"id,omitempty"`
	State          string    `json:"state,omitempty"`
	ConsentVersion string    `json:"consent_version,omitempty"`
	ConfirmedAt    time.Time `json:"confirmed_at,omitzero"`
	UnsubscribedAt time.Time `json:"unsubscribed_at,omitzero"`
}

type ContactRecord struct {
	Name         string    `json:"name"`
	Email        string    `json:"email"`
	Organization string    `json:"organization,omitempty"`
	Topic        string    `json:"topic"`
	Message      string    `json:"message"`
	ReceivedAt   time.Time `json:"received_at"`
	Origin       string    `json:"origin,omitempty"`
}

// The stored records are JSON. They are written by hand, field by field, because this is on every
// submission's path and encoding/json's reflection costs as much as the rest of the handler;
// TestRecords_DecodeToWhatWasEncoded holds them to encoding/json's reading.

// AppendWaitlistRecord appends r's JSON to dst.
func AppendWaitlistRecord(dst []byte, r WaitlistRecord) []byte {
	dst = append(dst, `{"email":`...)
	dst = appendJSONString(dst, r.Email)
	dst = appendOptional(dst, `,"name":`, r.Name)
	dst = appendOptional(dst, `,"association":`, r.Association)
	dst = appendOptional(dst, `,"role":`, r.Role)
	dst = appendOptional(dst, `,"size":`, r.Size)
	if r.Consent {
		dst = append(dst, `,"consent":true`...)
	} else {
		dst = append(dst, `,"consent":false`...)
	}
	dst = append(dst, `,"created_at":"`...)
	dst = r.CreatedAt.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, '"')
	dst = appendOptional(dst, `,"origin":`, r.Origin)
	dst = appendOptional(dst, `,"id":`, r.ID)
	dst = appendOptional(dst, `,"state":`, r.State)
	dst = appendOptional(dst, `,"consent_version":`, r.ConsentVersion)
	return append(dst, '}')
}

// AppendContactRecord appends r's JSON to dst.
func AppendContactRecord(dst []byte, r ContactRecord) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendJSONString(dst, r.Name)
	dst = append(dst, `,"email":`...)
	dst = appendJSONString(dst, r.Email)
	dst = appendOptional(dst, `,"organization":`, r.Organization)
	dst = append(dst, `,"topic":`...)
	dst = appendJSONString(dst, r.Topic)
	dst = append(dst, `,"message":`...)
	dst = appendJSONString(dst, r.Message)
	dst = append(dst, `,"received_at":"`...)
	dst = r.ReceivedAt.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, '"')
	dst = appendOptional(dst, `,"origin":`, r.Origin)
	return append(dst, '}')
}

func appendOptional(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return appendJSONString(append(dst, key...), v)
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string: quotes, backslashes and control characters escaped,
// invalid UTF-8 replaced by U+FFFD, and U+2028/U+2029 escaped so the record is also valid JavaScript.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
