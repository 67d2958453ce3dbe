package testredis

import (
	"fmt"
	"runtime"
	"testing"
)

// fatalRecorder is a testing.TB whose Fatal ends only the calling goroutine and keeps the message.
type fatalRecorder struct {
	testing.TB
	msg chan string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg <- fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg <- fmt.Sprint(args...)
	runtime.Goexit()
}

// fatalOf runs fn with a recorder and returns its failure message, or "" when fn returned.
func fatalOf(t *testing.T, fn func(tb testing.TB)) string {
	rec := &fatalRecorder{TB: t, msg: make(chan string, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(rec)
	}()
	<-done
	select {
	case m := <-rec.msg:
		return m
	default:
		return ""
	}
}
