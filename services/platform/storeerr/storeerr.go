// Package storeerr is the one "the store did not answer" error that every store's own sentinel wraps,
// so that an HTTP layer asks one question (errors.Is(err, storeerr.ErrUnavailable)) and answers 503
// (temporarily_unavailable) instead of keeping a list of eight sentinels that the next store escapes.
package storeerr

import "errors"

// ErrUnavailable is wrapped by every store's ErrUnavailable: the request was fine, the store could not
// serve it now.
var ErrUnavailable = errors.New("store unavailable")

// Unavailable returns a store's own sentinel, named msg (e.g. "token store unavailable"): errors.Is
// matches it and ErrUnavailable alike.
func Unavailable(msg string) error { return &unavailable{msg: msg} }

type unavailable struct{ msg string }

func (e *unavailable) Error() string { return e.msg }

// Is makes every store's sentinel match ErrUnavailable.
func (e *unavailable) Is(target error) bool { return target == ErrUnavailable }
