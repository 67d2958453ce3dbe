package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The dev server tells the tools where its store is: `formsservice dev` writes a small state file while it
// runs, and `users`, `export`, `forget` and `deliveries` read it when neither REDIS_URL nor --config names a
// store. Without it, the embedded store's random address had to be copied out of a log line.
//
// Where: $FORMSSERVICE_DEV_STATE_DIR, else $XDG_RUNTIME_DIR/formsservice, else
// $TMPDIR/formsservice-<uid> (/tmp when TMPDIR is unset); one file per dev server, dev-<host>-<port>.json,
// removed when it stops. The folder must be the user's own and closed to others (0700), since the file
// names the store; the file itself is 0600.

// devState is what the state file holds.
type devState struct {
	PID      int       `json:"pid"`
	URL      string    `json:"url"`      // the dev server, e.g. http://localhost:8080
	RedisURL string    `json:"redisURL"` // its store, as REDIS_URL would name it
	Embedded bool      `json:"embedded"` // the in-memory store that ends with the server
	Config   string    `json:"config"`   // the --config file it read, absolute ("" for none)
	Started  time.Time `json:"started"`

	path string
}

// devStateDir is the folder of the state files (see above).
func devStateDir(getenv func(string) string) string {
	if d := getenv("FORMSSERVICE_DEV_STATE_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "formsservice")
	}
	return filepath.Join(cmp.Or(getenv("TMPDIR"), "/tmp"), "formsservice-"+strconv.Itoa(os.Getuid()))
}

// writeDevState writes the running dev server's state file and returns a function that removes it.
func writeDevState(getenv func(string) string, s devState) (path string, remove func(), err error) {
	dir := devStateDir(getenv)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	if err := checkPrivateDir(dir); err != nil {
		return "", nil, err
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
	path = filepath.Join(dir, "dev-"+host+"-"+port+".json")
	s.PID = os.Getpid()
	b, _ := json.MarshalIndent(s, "", "  ")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return "", nil, err
	}
	if err := os.Rename(tmp, path); err != nil { // a reader never sees half a file
		return "", nil, err
	}
	return path, func() { os.Remove(path) }, nil
}

// checkPrivateDir refuses a state folder that another user owns or could write to: a file planted there
// could point the tools at a store of someone else's choosing.
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s must be a folder of your own that only you can open (chmod 700)", dir)
	}
	return nil
}

// findDevState returns the state of the running dev server. With several, it takes the one on addr
// (ADDR, or the default 127.0.0.1:8080) and otherwise says which there are. It returns (nil, nil) when no
// dev server runs; files left by a dev server that was killed are removed.
func findDevState(getenv func(string) string) (*devState, error) {
	dir := devStateDir(getenv)
	if checkPrivateDir(dir) != nil {
		return nil, nil // no folder (no dev server ever ran), or not one to trust
	}
	files, err := filepath.Glob(filepath.Join(dir, "dev-*.json"))
	if err != nil {
		return nil, err
	}
	var live []*devState
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile: that server stopped
		}
		var s devState
		if err != nil || json.Unmarshal(b, &s) != nil || s.PID <= 0 || s.RedisURL == "" {
			continue
		}
		if !processRuns(s.PID) {
			os.Remove(f)
			continue
		}
		s.path = f
		live = append(live, &s)
	}
	switch len(live) {
	case 0:
		return nil, nil
	case 1:
		return live[0], nil
	}
	want := devURLOf(cmp.Or(getenv("ADDR"), "127.0.0.1:8080"))
	if i := slices.IndexFunc(live, func(s *devState) bool { return s.URL == want }); i >= 0 {
		return live[i], nil
	}
	var each []string
	for _, s := range live {
		each = append(each, fmt.Sprintf("%s (REDIS_URL=%s)", s.URL, s.RedisURL))
	}
	return nil, fmt.Errorf("several dev servers run: %s; set REDIS_URL to the store of the one you mean", strings.Join(each, ", "))
}

// processRuns reports whether a process with this ID exists (signal 0 checks without sending).
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// devURLOf is the URL a dev server listening on addr announces: http://localhost:<port> on a loopback
// address (D74, devlisten.go), else the address itself.
func devURLOf(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && loopbackName(host) {
		return "http://localhost:" + port
	}
	return "http://" + addr
}

// loopbackName: the names of the loopback interface the dev server's URL says localhost for.
func loopbackName(host string) bool {
	return host == "127.0.0.1" || host == "::1" || strings.EqualFold(host, "localhost")
}
