package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
)

// A password typed on a terminal is never shown: `users create` asks twice with the terminal's echo off
// (it read a line with echo on, so the password stood on the screen and in the scrollback). The test
// types into a real pseudo-terminal only once the command has turned echo off, and reads back what the
// terminal displayed.
func TestUsersCreate_OnATerminal_ThePasswordIsNotEchoed(t *testing.T) {
	srv := testredis.Start(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	screen, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { screen.Close(); tty.Close() })

	env := map[string]string{"REDIS_URL": srv.URL(), "FORMSSERVICE_CONFIG": cfg}
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"users", "create", "--email", "ada@example.com"},
			func(k string) string { return env[k] }, tty, &stdout, &stderr)
	}()
	echoOff := func() error {
		tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err != nil {
			return err
		}
		if tio.Lflag&unix.ECHO != 0 {
			return errors.New("echo is on")
		}
		return nil
	}
	testwait.Until(t, 10*time.Second, "the command turns the echo off", echoOff)
	// Both lines at once: the second waits in the terminal's input queue, taken in with echo off too.
	if _, err := screen.WriteString("a typed secret\ra typed secret\r"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("users create: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "created ada@example.com") || strings.Count(stderr.String(), "assword: ") != 2 {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	// Everything the terminal displayed, up to a marker written after the command ended.
	if _, err := tty.WriteString("END-OF-SCREEN\n"); err != nil {
		t.Fatal(err)
	}
	var shown strings.Builder
	sc := bufio.NewScanner(screen)
	for sc.Scan() && !strings.Contains(sc.Text(), "END-OF-SCREEN") {
		shown.WriteString(sc.Text() + "\n")
	}
	if strings.Contains(shown.String(), "secret") {
		t.Fatalf("the terminal showed the password:\n%s", shown.String())
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "list"); err != nil || !strings.Contains(out, "ada@example.com") {
		t.Fatalf("list: %v %s", err, out)
	}
}

// A store that does not answer is said before the password is asked: `users create` asked for the
// password twice and only then found out that nothing listened at REDIS_URL. The password is typed ahead
// into a real pseudo-terminal, so the command, if it asked, would read it and fail later instead of
// waiting; the prompt on stderr shows whether it asked. set-password likewise.
func TestUsersCreate_StoreUnreachable_SaidBeforeThePasswordIsAsked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	screen, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { screen.Close(); tty.Close() })
	// Two lines for each command below, so that one that asks cannot wait for the keyboard.
	if _, err := screen.WriteString(strings.Repeat("a typed secret\r", 4)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"users", "create", "--email", "ada@example.com"},
		{"users", "set-password", "--email", "ada@example.com"},
	} {
		env := map[string]string{"REDIS_URL": "redis://" + dead + "/0", "FORMSSERVICE_DEV_STATE_DIR": t.TempDir()}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, func(k string) string { return env[k] }, tty, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "the store at redis://"+dead+"/0 is unreachable") {
			t.Errorf("%v: %v, want the store named unreachable", args, err)
		}
		if strings.Contains(stderr.String(), "assword") {
			t.Errorf("%v asked for the password before it found out there is no store: stderr %q", args, stderr.String())
		}
	}
}

// Without any store (no REDIS_URL, no --config, no dev server running), `users create` says so before
// it reads a password from its pipe: the pipe is left unread.
func TestUsersCreate_NoStore_SaidBeforeThePasswordIsRead(t *testing.T) {
	env := map[string]string{"FORMSSERVICE_DEV_STATE_DIR": t.TempDir()}
	stdin := strings.NewReader("correct horse battery staple\n")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"users", "create", "--email", "ada@example.com"},
		func(k string) string { return env[k] }, stdin, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "no store configured") {
		t.Fatalf("users create without a store: %v, want no store configured", err)
	}
	if stdin.Len() == 0 {
		t.Fatal("the password was read from the pipe before the store was looked for")
	}
}
