package federation

import (
	"fmt"

	"github.com/formsservice/formsservice/services/auth/directory"
	"github.com/formsservice/formsservice/services/auth/realm"
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
