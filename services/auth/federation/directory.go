package federation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/directory"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/secretfile"
)

// A connector of type ldap (D75) makes no trip: the sign-in page asks for the username and password
// and package directory checks them. The kit keeps its client with the others', made from the same
// version of the configuration, and the account it signs in to is found by the same Resolve.

// buildDirectory makes the client of the ldap connector c; one whose bind password or CA file cannot be
// read is not offered (logged). k.mu is held.
func (k *Kit) buildDirectory(c config.Connector) {
	secret, err := secretfile.Read(c.LDAP.BindPasswordFile)
	if err != nil {
		k.log.Error("connector not offered: its bind password cannot be read", "connector", c.ID, "err", err)
		return
	}
	d, err := directory.New(c, secret)
	if err != nil {
		k.log.Error("connector not offered", "connector", c.ID, "err", err)
		return
	}
	k.dirs[c.ID] = d
}

// Directory is the ldap connector id of the realm's configuration; ErrUnknown when there is none (or
// it could not be made: logged).
func (k *Kit) Directory(rt *realm.Realm, id string) (*directory.Connector, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.build(rt)
	d, ok := k.dirs[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, id)
	}
	return d, nil
}

// Login is a username and password for the ldap connector Connector, from the client whose address
// rate limits count as ClientKey.
type Login struct {
	Connector, Username, Password, ClientKey string
}

// Checked is what a directory made of a Login.
type Checked struct {
	Dir      *directory.Connector
	Identity *upstream.Identity // the person the directory vouched for (nil unless CheckLogin's error is nil)
	Refusal  *throttle.Refusal  // throttled: the directory was not asked
	// Wait and UsedUp are a refused password's delay before the next try and the budgets it used up
	// (a lockout, for the audit trail).
	Wait   time.Duration
	UsedUp []string
}

// Username is a directory username as the forms take it: trimmed, and no longer than a directory's.
func Username(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > directory.MaxUsername {
		s = s[:directory.MaxUsername]
	}
	return s
}

// CheckLogin asks l's directory whether l.Password is l.Username's, under the password form's throttle
// budgets lim (the sign-in page's and the account page's link share them): a reservation first, keyed
// by the connector and the username (a device cookie names an address, which a directory's username is
// not, so these are an unknown browser's budgets), then the bind. A throttled login returns Refusal
// and no error, the directory not asked. The error is directory.ErrBadCredentials for a wrong username
// or password (Wait and UsedUp set), ErrUnknown, or the directory's or the store's failure
// (upstream.ErrUnreachable, ErrRefused, an unavailable store); it never holds the password.
func (k *Kit) CheckLogin(ctx context.Context, rt *realm.Realm, limiter *throttle.Limiter, lim throttle.Limits, l Login) (Checked, error) {
	username := Username(l.Username)
	res, refusal, err := limiter.Reserve(ctx, throttle.Attempt{Account: "ldap:" + l.Connector + ":" + strings.ToLower(username), IP: l.ClientKey}, lim)
	if err != nil || refusal != nil {
		return Checked{Refusal: refusal}, err
	}
	dir, err := k.Directory(rt, l.Connector)
	if err != nil {
		res.Release(context.WithoutCancel(ctx))
		return Checked{}, err
	}
	c := Checked{Dir: dir}
	c.Identity, err = dir.Authenticate(ctx, username, l.Password)
	switch {
	case errors.Is(err, directory.ErrBadCredentials):
		var ferr error
		if c.Wait, c.UsedUp, ferr = res.Failed(ctx); ferr != nil {
			k.log.Warn("directory throttle: a failure's delay was not recorded", "err", ferr)
		}
		return c, err
	case err != nil:
		res.Release(context.WithoutCancel(ctx))
		return c, err
	}
	if err := res.Succeeded(ctx); err != nil {
		k.log.Warn("directory throttle: a success was not recorded", "err", err)
	}
	return c, nil
}
