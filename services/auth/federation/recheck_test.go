package federation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// entryDirectory is a small real Rechecker, the shape of the LDAP connector's: its state is an entry's
// name, which it looks up in its table at every re-check (and renames, to show a changed state is
// kept). The token endpoint's wiring is the same for any Rechecker (the OpenID connector's is tested
// against a real upstream in services/auth).
type entryDirectory struct {
	cfg     config.Connector
	entries map[string]bool
	down    bool
	asked   int
}

func (d *entryDirectory) Config() config.Connector                   { return d.cfg }
func (d *entryDirectory) AuthOrigin(context.Context) (string, error) { return "", nil }
func (d *entryDirectory) AuthURL(context.Context, upstream.Start, map[string]string) (string, error) {
	return "", nil
}
func (d *entryDirectory) Exchange(context.Context, upstream.Start, string, string) (*upstream.Identity, error) {
	return nil, upstream.ErrRefused
}

func (d *entryDirectory) Recheck(_ context.Context, state string) (string, error) {
	d.asked++
	if d.down {
		return "", fmt.Errorf("%w: the directory does not answer", upstream.ErrUnreachable)
	}
	name, n, _ := strings.Cut(state, "#")
	if !d.entries[name] {
		return "", fmt.Errorf("%w: %s is gone", upstream.ErrNotAllowed, name)
	}
	return fmt.Sprintf("%s#%s+", name, n), nil
}

var _ Rechecker = (*entryDirectory)(nil)

// kitWith is a kit whose realm has the connector conn (policy onDown), on the clock now.
func kitWith(t *testing.T, conn Upstream, seal SealKeys, now func() time.Time) (*Kit, *realm.Realm) {
	t.Helper()
	k, err := New(Options{Log: slog.New(slog.DiscardHandler), Now: now, Seal: seal})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Auth: config.Auth{Connectors: []config.Connector{conn.Config()}}}
	k.built, k.conns = cfg, map[string]Upstream{conn.Config().ID: conn}
	return k, &realm.Realm{Config: cfg}
}

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestRecheck_AnyRechecker(t *testing.T) {
	clock := time.Unix(1_800_000_000, 0)
	now := func() time.Time { return clock }
	dir := &entryDirectory{cfg: config.Connector{ID: "ldap", RecheckEvery: config.Duration(time.Minute), OnUpstreamDown: config.UpstreamDownKeep},
		entries: map[string]bool{"uid=ada": true}}
	k, rt := kitWith(t, dir, SealKeys{Current: key(1)}, now)
	ctx := context.Background()

	up := k.KeepForRecheck(dir, "user-1", &upstream.Identity{Subject: "ada", Recheck: "uid=ada#0"})
	if up == nil || up.Connector != "ldap" || strings.Contains(up.Sealed, "uid=ada") || up.CheckedAt != clock.UnixMilli() {
		t.Fatalf("kept %+v: want the connector, the state sealed, the sign-in's time", up)
	}
	if k.KeepForRecheck(dir, "user-1", &upstream.Identity{Subject: "ada"}) != nil {
		t.Fatal("an identity without a state kept something to re-check")
	}

	check := func(want string) {
		t.Helper()
		if got, err := k.Recheck(ctx, rt, "user-1", up); got != want {
			t.Fatalf("re-check %s (%v), want %s", got, err, want)
		}
	}
	check(RecheckNotDue)
	if dir.asked != 0 {
		t.Fatal("the directory was asked before recheckEvery passed")
	}
	clock = clock.Add(time.Minute)
	sealed := up.Sealed
	check(RecheckOK)
	if up.Sealed == sealed || up.CheckedAt != clock.UnixMilli() {
		t.Fatalf("after a re-check: %+v, want the new state sealed and the time", up)
	}
	if state, _ := k.seal.open("user-1", "ldap", up.Sealed); state != "uid=ada#0+" {
		t.Fatalf("the kept state is %q, want the one the directory answered", state)
	}

	// The upstream down: keep skips (not checked: due again at once), end ends.
	clock = clock.Add(time.Minute)
	dir.down = true
	check(RecheckUnreachableKept)
	check(RecheckUnreachableKept)
	dir.cfg.OnUpstreamDown = config.UpstreamDownEnd
	rt.Config.Auth.Connectors[0] = dir.cfg
	check(RecheckUnreachableEnd)
	dir.down = false

	// A state copied into another user's grant does not open.
	if got, _ := k.Recheck(ctx, rt, "user-2", up); got != RecheckUnreadable {
		t.Fatalf("another user's grant with ada's state: %s, want %s", got, RecheckUnreadable)
	}
	// After a key rotation the previous key still opens it.
	rotated, rotatedRealm := kitWith(t, dir, SealKeys{Current: key(2), Others: [][]byte{key(1)}}, now)
	copied := *up
	if got, err := rotated.Recheck(ctx, rotatedRealm, "user-1", &copied); got != RecheckOK {
		t.Fatalf("after a key rotation: %s (%v), want ok", got, err)
	}
	clock = clock.Add(time.Minute)

	// The entry removed: the grant ends.
	delete(dir.entries, "uid=ada")
	if got, err := k.Recheck(ctx, rt, "user-1", up); got != RecheckNotAllowed || !errors.Is(err, upstream.ErrNotAllowed) || !Ends(got) {
		t.Fatalf("a removed entry: %s (%v), want not_allowed, which ends the grant", got, err)
	}
	// The connector removed from the configuration: nothing can vouch for the grant any more.
	rt.Config.Auth.Connectors = nil
	if got, _ := k.Recheck(ctx, rt, "user-1", up); got != RecheckConnectorGone || !Ends(got) {
		t.Fatalf("a removed connector: %s, want connector_removed", got)
	}
	for _, r := range []string{RecheckNotDue, RecheckOK, RecheckUnreachableKept} {
		if Ends(r) {
			t.Errorf("%s ends the grant", r)
		}
	}
}

// Without sealing keys nothing is kept: the state is never stored in the clear.
func TestRecheck_NoKeyKeepsNothing(t *testing.T) {
	dir := &entryDirectory{cfg: config.Connector{ID: "ldap"}}
	k, _ := kitWith(t, dir, SealKeys{}, time.Now)
	if up := k.KeepForRecheck(dir, "user-1", &upstream.Identity{Recheck: "uid=ada"}); up != nil {
		t.Fatalf("kept %+v without a key", up)
	}
}
