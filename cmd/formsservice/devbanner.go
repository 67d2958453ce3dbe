//go:build !formsonly

package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/logging"
	"github.com/formsservice/formsservice/services/platform/redisclient"
)

// announceDev tells whoever started the dev server what they have: where it is, the demo, the dev user,
// what their configuration file added, and the store. At a terminal that is a banner for a person; in
// JSON it is the "dev server ready" line (tests and scripts wait for it, and read "url" from it). It also
// writes the state file the tools find the store through (devstate.go), and returns what removes it.
func announceDev(env *environment, log *slog.Logger, lo logging.Options, s devState, auth config.Auth) (remove func()) {
	if s.Config != "" {
		if abs, err := filepath.Abs(s.Config); err == nil {
			s.Config = abs
		}
	}
	statePath, remove, err := writeDevState(env.getenv, s)
	if err != nil {
		log.Warn("the tools (users, export, ...) will not find this dev server's store by themselves; set REDIS_URL for them", "err", err)
		remove = func() {}
	}
	added := devAdditions(s.Config, env.getenv)
	store := redisclient.Describe(config.Redis{URL: s.RedisURL})
	if !lo.Text {
		log.Info("dev server ready", "url", s.URL, "demo", s.URL+"/demo/", "console", consoleURL(auth), "passkeys", passkeysURL(auth), "user", config.DevEmail,
			"config", s.Config, "origins", added.origins, "clients", added.clients,
			"redis_url", store, "embedded_store", s.Embedded, "state_file", statePath)
		return remove
	}
	printDevBanner(env.stderr, s, auth, added, store, statePath)
	return remove
}

// additions is what the developer's configuration file brings beyond the dev fixtures.
type additions struct{ origins, clients []string }

func devAdditions(path string, getenv func(string) string) additions {
	if path == "" {
		return additions{}
	}
	c, err := config.Load(path, getenv) // read already, successfully: the server would not be here otherwise
	if err != nil {
		return additions{}
	}
	a := additions{origins: c.AllowedOrigins}
	for _, cl := range c.Auth.Clients {
		a.clients = append(a.clients, cl.ClientID)
	}
	return a
}

func printDevBanner(w io.Writer, s devState, auth config.Auth, added additions, store, statePath string) {
	var b strings.Builder
	row := func(k, v string) { fmt.Fprintf(&b, "  %-13s %s\n", k, v) }
	fmt.Fprintf(&b, "\nformsservice dev is ready: forms, auth and health on %s\n\n", s.URL)
	row("demo", s.URL+"/demo/  (sign in, the contact and waitlist forms)")
	if c := consoleURL(auth); c != "" {
		row("console", c+"  (users, audit trail, clients; the dev user is an admin)")
	}
	row("dev user", config.DevEmail+" / "+config.DevPassword+"  (in the group "+auth.Admin.Group+")")
	row("OAuth client", config.DevClientID+" (public, PKCE), redirect URI "+s.URL+"/demo/callback")
	row("mail", s.URL+"/dev/mail/  (what the services sent, kept here instead)")
	if p := passkeysURL(auth); p != "" {
		row("passkeys", p+"  (add one once signed in, then \"Sign in with a passkey\")")
	}
	switch {
	case s.Config == "":
		row("config", "none: the dev fixtures only (make run CONFIG=my-app.yaml adds your origins and clients)")
	default:
		row("config", s.Config+" (reloaded when you save it)")
		row("  origins", listOrNone(added.origins))
		row("  clients", listOrNone(added.clients))
	}
	kind := "from REDIS_URL"
	if s.Embedded {
		kind = "embedded, in memory: lost on exit"
	}
	row("store", "REDIS_URL="+store+"  ("+kind+")")
	if statePath != "" {
		row("tools", "formsservice users list, export, forget, deliveries find this store by themselves")
		row("", "(through "+statePath+")")
	}
	b.WriteString("\nLogs follow; Ctrl+C stops the server.\n\n")
	io.WriteString(w, b.String()) //nolint:errcheck // the terminal
}

// consoleURL is where the admin console is ("" when the configuration turned it off).
func consoleURL(auth config.Auth) string {
	if !auth.Console.On() {
		return ""
	}
	return auth.Issuer + "/console/"
}

// passkeysURL is where passkeys are added ("" when they are off, or cannot work under an issuer on an IP
// address: D74 makes the dev server's issuer localhost so that they do).
func passkeysURL(auth config.Auth) string {
	u, err := url.Parse(auth.Issuer)
	if !auth.Passkeys.On() || err != nil || u.Hostname() == "" || net.ParseIP(u.Hostname()) != nil {
		return ""
	}
	return auth.Issuer + "/account/passkeys"
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none added"
	}
	return strings.Join(l, ", ")
}
