package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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
