package mail

import (
	"errors"
	"fmt"
	"net/textproto"
	"regexp"
)

// RelayError is the relay's refusal of the mail transaction: its reply to MAIL FROM, RCPT TO, DATA or
// the end of the data. A 5xx reply is permanent (RFC 5321 4.2.1: the same message will be refused
// again), a 4xx temporary.
//
// Refusals before the transaction — a 5xx to EHLO, STARTTLS or AUTH — are not RelayErrors: they say
// the relay settings are wrong, which an operator fixes, after which the retries deliver. Only the
// message (its sender, its recipients, its content) can be permanently wrong.
type RelayError struct {
	// Command is what the relay answered: "MAIL FROM", "RCPT TO", "DATA" or "end of DATA".
	Command string
	// Code is the reply code, such as 550; Enhanced the RFC 3463 status, such as "5.1.1", when given.
	Code     int
	Enhanced string
	// Reply is the relay's text, as it sent it.
	Reply string
}

func (e *RelayError) Error() string {
	return fmt.Sprintf("smtp relay refused %s: %d %s", e.Command, e.Code, e.Reply)
}

// Permanent reports a 5xx reply: the delivery worker gives the message up at once (a dead letter
// with this answer) instead of retrying it.
func (e *RelayError) Permanent() bool { return e.Code >= 500 && e.Code <= 599 }

// Temporary reports a 4xx reply.
func (e *RelayError) Temporary() bool { return e.Code >= 400 && e.Code <= 499 }

// IsPermanent reports whether err (or an error it wraps) says that sending the same message again
// cannot succeed: a relay's 5xx to the transaction, or a message the component refuses to compose.
func IsPermanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

var enhancedRE = regexp.MustCompile(`^([245]\.\d{1,3}\.\d{1,3})\s+`)

// relayError turns the reply to command into a RelayError; other errors (a broken connection, a
// timeout) pass through wrapped, and so stay temporary.
func relayError(command string, err error) error {
	var tp *textproto.Error
	if !errors.As(err, &tp) {
		return fmt.Errorf("smtp %s: %w", command, err)
	}
	e := &RelayError{Command: command, Code: tp.Code, Reply: tp.Msg}
	if m := enhancedRE.FindStringSubmatch(tp.Msg); m != nil {
		e.Enhanced = m[1]
	}
	return e
}
