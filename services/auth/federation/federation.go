// Package federation is the kit of signing in through upstream providers (connectors, D58): the
// connectors of the configuration in effect (an OpenID provider through package upstream, GitHub
// through package github, a SAML IdP through package samlsp: one Upstream interface, D64, D76), each sign-in's state kept in Redis between the redirect to
// the upstream and its answer (single use, short-lived, bound to the browser by a cookie), and the rule
// that finds the local account of an upstream account: its link, an automatic link only for a verified
// address of a connector trusted to say so, or a new account. The hosted sign-in (package signin)
// starts and finishes the flow; the account page links and unlinks.
package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/directory"
	"github.com/formsservice/formsservice/services/auth/github"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/samlsp"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/secretfile"
	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// Cookie is the browser's half of a sign-in's state: the state itself, which the upstream's answer must
// carry back (an answer without this browser's cookie is another browser's, or forged: login CSRF).
const Cookie = "fs_fed"

// Lifetime bounds one trip to the upstream and back.
const Lifetime = 10 * time.Minute

// CallbackPath is where upstreams send their answers (below the issuer).
const CallbackPath = "/oauth2/callback"

// Errors callers tell apart (with upstream.ErrRefused and upstream.ErrUnreachable).
var (
	ErrState        = errors.New("federation: no sign-in state, or not this browser's")
	ErrUnknown      = errors.New("federation: no such connector")
	ErrUpstream     = errors.New("federation: the provider answered with an error")
	ErrNoEmail      = errors.New("federation: the provider gave no e-mail address")
	ErrLinkRequired = errors.New("federation: an account has this address; it is linked from the account page")
	ErrDisabled     = errors.New("federation: the account is disabled")
	ErrUnavailable  = storeerr.Unavailable("federation store unavailable")
)

// Purposes of a trip to the upstream.
const (
	PurposeSignIn = "signin" // the hosted sign-in: Query is the authorization request
	PurposeLink   = "link"   // the account page: User links the upstream account
)

// Pending is what a trip to the upstream keeps in Redis.
type Pending struct {
	Connector string `json:"c"`
	Purpose   string `json:"p"`
	Query     string `json:"q,omitempty"` // the authorization request (PurposeSignIn)
	User      string `json:"u,omitempty"` // the signed-in user (PurposeLink)
	Nonce     string `json:"n"`
	Verifier  string `json:"v"`
}

// Upstream is one connector's provider: an OpenID provider (package upstream) or GitHub (package
// github, D64). Each makes the authorization URL of a trip and turns the answer into an Identity.
type Upstream interface {
	Config() config.Connector
	// AuthOrigin is the origin of the provider's authorization page (for a CSP form-action).
	AuthOrigin(ctx context.Context) (string, error)
	AuthURL(ctx context.Context, s upstream.Start, extra map[string]string) (string, error)
	// Exchange checks the answer (its code and iss parameters) and reads the person; its errors wrap
	// upstream.ErrRefused, ErrUnreachable or ErrNotAllowed.
	Exchange(ctx context.Context, s upstream.Start, code, iss string) (*upstream.Identity, error)
}

// newUpstream is the client of connector c's provider, by its type.
func newUpstream(c config.Connector, secret, redirectURL string, client *http.Client) Upstream {
	if c.Type == config.TypeGitHub {
		return github.New(c, secret, redirectURL, client)
	}
	return upstream.New(c, secret, redirectURL, client)
}

// Kit holds the connectors and the trips' state.
type Kit struct {
	rdb    redis.UniversalClient
	log    *slog.Logger
	client *http.Client
	now    func() time.Time

	seal *sealer // the re-check states' (recheck.go)

	mu    sync.Mutex
	built *config.Config // the configuration conns were built from
	conns map[string]Upstream
	dirs  map[string]*directory.Connector // the connectors of type ldap (directory.go)
}

// Options are the kit's dependencies.
type Options struct {
	Redis redis.UniversalClient
	Log   *slog.Logger
	// Client makes the requests to the upstreams (nil: upstream's default, 10 s).
	Client *http.Client
	Now    func() time.Time
	// Seal are the secrets the re-check states are sealed with (recheck.go; none: nothing is kept to
	// re-check).
	Seal SealKeys
}

// New returns the kit.
func New(o Options) (*Kit, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	seal, err := newSealer(o.Seal)
	if err != nil {
		return nil, err
	}
	return &Kit{rdb: o.Redis, log: o.Log, client: o.Client, now: o.Now, seal: seal}, nil
}

// Connector is the connector id of the realm's configuration; ErrUnknown when there is none (or its
// secret cannot be read: logged).
func (k *Kit) Connector(rt *realm.Realm, id string) (Upstream, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.build(rt)
	c, ok := k.conns[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, id)
	}
	return c, nil
}

// build makes the clients of the realm's connectors when its configuration is not the one they were
// made from; k.mu is held.
func (k *Kit) build(rt *realm.Realm) {
	if k.built != rt.Config {
		k.conns, k.dirs = map[string]Upstream{}, map[string]*directory.Connector{}
		for _, c := range rt.Config.Auth.Connectors {
			if c.Type == config.TypeLDAP {
				k.buildDirectory(c)
				continue
			}
			if c.Type == config.TypeSAML {
				sp, err := samlsp.New(c, samlsp.Options{Issuer: rt.Issuer, Redis: k.rdb, Client: k.client, Now: k.now})
				if err != nil {
					k.log.Error("connector not offered: its SAML key or certificate cannot be read", "connector", c.ID, "err", err)
					continue
				}
				k.conns[c.ID] = sp
				continue
			}
			secret, err := secretfile.Read(c.ClientSecretFile)
			if err != nil {
				k.log.Error("connector not offered: its client secret cannot be read", "connector", c.ID, "err", err)
				continue
			}
			k.conns[c.ID] = newUpstream(c, secret, rt.Issuer+CallbackPath, k.client)
		}
		k.built = rt.Config
	}
}

func pendingKey(state string) string { return "auth:fed:{" + state + "}" }

// Begin keeps p for a new trip to the connector's upstream, sets the browser's cookie and answers with
// the redirect there. extra are further parameters of the upstream's authorization request.
func (k *Kit) Begin(w http.ResponseWriter, r *http.Request, rt *realm.Realm, p Pending, extra map[string]string) error {
	ctx := r.Context()
	conn, err := k.Connector(rt, p.Connector)
	if err != nil {
		return err
	}
	s := upstream.NewStart()
	p.Nonce, p.Verifier = s.Nonce, s.Verifier
	to, err := conn.AuthURL(ctx, s, extra)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(p)
	if err := k.rdb.Set(ctx, pendingKey(s.State), b, Lifetime).Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	web.SetCookie(w, rt, Cookie, s.State, Lifetime)
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// Result is an upstream's answer, checked.
type Result struct {
	Pending
	Conn     Upstream
	Identity *upstream.Identity
}

// Finish takes the trip's state that the upstream's answer r names (once: a second answer with the same
// state finds none), checks that this browser started it, and exchanges the code. The Result carries
// the pending trip whenever it was found, even with an error (the sign-in goes back to its page).
func (k *Kit) Finish(w http.ResponseWriter, r *http.Request, rt *realm.Realm) (*Result, error) {
	ctx := r.Context()
	q := r.URL.Query()
	state := q.Get("state")
	cookie := web.ReadCookie(r, rt, Cookie)
	if state == "" || len(state) > 128 || cookie != state {
		return nil, ErrState
	}
	web.SetCookie(w, rt, Cookie, "", -1)
	b, err := k.rdb.GetDel(ctx, pendingKey(state)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrState
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	res := &Result{}
	if err := json.Unmarshal(b, &res.Pending); err != nil {
		return nil, ErrState
	}
	if res.Conn, err = k.Connector(rt, res.Connector); err != nil {
		return res, err
	}
	if e := q.Get("error"); e != "" {
		return res, fmt.Errorf("%w: %.64s", ErrUpstream, e)
	}
	res.Identity, err = res.Conn.Exchange(ctx, upstream.Start{State: state, Nonce: res.Nonce, Verifier: res.Verifier}, q.Get("code"), q.Get("iss"))
	return res, err
}

// How a sign-in found its account.
const (
	AccountLinked     = "linked"      // the upstream account was linked to it before
	AccountAutoLinked = "auto_linked" // the address is the account's, verified by a trusted connector: linked now
	AccountCreated    = "created"     // no account had the address: made now (just in time)
)

// Resolve finds the local account of the upstream account id signing in through c, linking or creating
// it by the rules of D58; how says which.
func (k *Kit) Resolve(ctx context.Context, us *users.Store, c config.Connector, id *upstream.Identity) (u *users.User, how string, err error) {
	for range 2 { // a second round when a creation raced another sign-in for the address
		u, err = us.ByIdentity(ctx, c.ID, id.Subject)
		switch {
		case err == nil:
			return k.enabled(u, AccountLinked)
		case !errors.Is(err, users.ErrNotFound):
			return nil, "", err
		}
		if id.Email == "" {
			return nil, "", ErrNoEmail
		}
		u, err = us.ByEmail(ctx, id.Email)
		switch {
		case err == nil:
			// An account whose own address is not verified may have been made by someone else in advance
			// (pre-hijacking, D51): it is not linked automatically either.
			if !c.Trusts() || !id.EmailVerified || !u.EmailVerified {
				return nil, "", ErrLinkRequired
			}
			if u.Disabled {
				return nil, "", ErrDisabled
			}
			if err := us.LinkIdentity(ctx, u.ID, c.ID, id.Subject, id.Email, k.now()); err != nil {
				return nil, "", err
			}
			return u, AccountAutoLinked, nil
		case !errors.Is(err, users.ErrNotFound):
			return nil, "", err
		}
		u, err = us.CreateFederated(ctx, id.Email, id.Name, c.Trusts() && id.EmailVerified)
		if errors.Is(err, users.ErrEmailTaken) {
			continue
		}
		if err != nil {
			if errors.Is(err, users.ErrInvalidEmail) {
				return nil, "", ErrNoEmail
			}
			return nil, "", err
		}
		if err := us.LinkIdentity(ctx, u.ID, c.ID, id.Subject, id.Email, k.now()); err != nil {
			return nil, "", err
		}
		return u, AccountCreated, nil
	}
	return nil, "", ErrLinkRequired
}

func (k *Kit) enabled(u *users.User, how string) (*users.User, string, error) {
	if u.Disabled {
		return nil, "", ErrDisabled
	}
	return u, how, nil
}

// SyncGroups makes the user's groups that carry the connector's prefix exactly the upstream's groups
// (each prefixed; a name our groups cannot take is left out, and at most users.MaxGroups are kept),
// leaving every other group as an operator set it (D37). Nothing happens for a connector that reads
// no groups (config.Connector.ReadsGroups).
func (k *Kit) SyncGroups(ctx context.Context, us *users.Store, c config.Connector, u *users.User, upstreamGroups []string) (*users.User, error) {
	if !c.ReadsGroups() {
		return u, nil
	}
	want := map[string]bool{}
	for _, g := range upstreamGroups {
		name := c.GroupsPrefix + g
		if users.CheckGroup(name) == nil && len(want) < users.MaxGroups {
			want[name] = true
		}
	}
	var stale, add []string
	for _, g := range u.Groups {
		if strings.HasPrefix(g, c.GroupsPrefix) && !want[g] {
			stale = append(stale, g)
		}
		delete(want, g)
	}
	for g := range want {
		add = append(add, g)
	}
	var err error
	if len(stale) > 0 {
		if u, _, err = us.RemoveGroups(ctx, u.Email, stale); err != nil {
			return nil, err
		}
	}
	if len(add) > 0 {
		slices.Sort(add)
		if u, _, err = us.AddGroups(ctx, u.Email, add); err != nil {
			return nil, err
		}
	}
	return u, nil
}
