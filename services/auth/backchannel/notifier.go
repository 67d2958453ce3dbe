package backchannel

import (
	"context"
	"slices"
	"time"

	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Target is how a client hears of logouts: where its logout tokens go, and whether each must name the
// session (backchannelLogoutSessionRequired).
type Target struct {
	URI             string
	SessionRequired bool
}

// Targets are the clients that hear of logouts, by client ID.
type Targets map[string]Target

// TargetsOf are the clients of a with a backchannelLogoutURI.
func TargetsOf(a config.Auth) Targets {
	t := Targets{}
	for _, c := range a.Clients {
		if c.BackchannelLogoutURI != "" {
			t[c.ClientID] = Target{URI: c.BackchannelLogoutURI, SessionRequired: c.BackchannelLogoutSessionRequired}
		}
	}
	return t
}

// Notifier decides which logout tokens an ending sign-in needs, and queues them.
type Notifier struct {
	queue   *Queue
	targets func() Targets
	now     func() time.Time
	wake    func()
}

// NewNotifier queues into q for the clients targets names (read at each call: the live configuration);
// wake, when set, is called after jobs were queued (the worker of this process sends them at once; any
// other polls). now defaults to time.Now.
func NewNotifier(q *Queue, targets func() Targets, now func() time.Time, wake func()) *Notifier {
	if now == nil {
		now = time.Now
	}
	return &Notifier{queue: q, targets: targets, now: now, wake: wake}
}

// Enabled reports whether any client hears of logouts: without one, the callers skip the reads that
// would find the clients to tell.
func (n *Notifier) Enabled() bool { return n != nil && len(n.targets()) > 0 }

// SessionEnded queues a logout token naming the user (subject) and the session (its sso ID) for each of
// clients that hears of logouts: the browser session ended (RP-initiated logout), and with it the grants
// these clients had in it.
func (n *Notifier) SessionEnded(ctx context.Context, subject, sessionID string, clients []string) error {
	if !n.Enabled() {
		return nil
	}
	targets, sid := n.targets(), sso.SID(sessionID)
	var jobs []Job
	for _, c := range dedupe(clients) {
		if _, ok := targets[c]; ok {
			jobs = append(jobs, Job{Client: c, Subject: subject, SID: sid})
		}
	}
	return n.add(ctx, jobs)
}

// SignedOutEverywhere queues the logout tokens of a user signed out everywhere (a sign-out everywhere,
// a new or reset password, a disabled account): to every client that hears of logouts and holds one of
// the user's grants (families: each family's client), one token naming the user only (every session at
// the client ends); to a client that requires the session, one token per session its grants started in
// (sessions: each family's session).
func (n *Notifier) SignedOutEverywhere(ctx context.Context, subject string, clients, sessions map[string]string) error {
	if !n.Enabled() {
		return nil
	}
	targets := n.targets()
	perClient := map[string][]string{}
	for fam, c := range clients {
		if _, ok := targets[c]; ok {
			perClient[c] = append(perClient[c], sessions[fam])
		}
	}
	var jobs []Job
	for _, c := range sortedKeys(perClient) {
		if !targets[c].SessionRequired {
			jobs = append(jobs, Job{Client: c, Subject: subject})
			continue
		}
		for _, s := range dedupe(perClient[c]) {
			if s != "" { // a grant of unknown session cannot be named to a client that requires one
				jobs = append(jobs, Job{Client: c, Subject: subject, SID: sso.SID(s)})
			}
		}
	}
	return n.add(ctx, jobs)
}

// BeforeSignOutEverywhere queues the logout tokens of a sign-out everywhere of subject, from the user's
// grants (their clients and sessions) read before tokens revokes them; without a client that hears of
// logouts it reads nothing. Queued first, so that a failure leaves the whole sign-out to the retry.
func (n *Notifier) BeforeSignOutEverywhere(ctx context.Context, tokens *store.Store, subject string) error {
	if !n.Enabled() {
		return nil
	}
	sessions, err := tokens.SubjectSessions(ctx, subject)
	if err != nil {
		return err
	}
	families := make([]string, 0, len(sessions))
	for f := range sessions {
		families = append(families, f)
	}
	clients, err := tokens.FamilyClients(ctx, families)
	if err != nil {
		return err
	}
	return n.SignedOutEverywhere(ctx, subject, clients, sessions)
}

// BeforeSessionEnds queues the logout tokens of a browser session (its sso ID) of subject that ends, and
// with it families (the grants started in it): one to each client of those families that hears of
// logouts. Without such a client it reads nothing.
func (n *Notifier) BeforeSessionEnds(ctx context.Context, tokens *store.Store, subject, sessionID string, families []string) error {
	if !n.Enabled() || subject == "" || len(families) == 0 {
		return nil
	}
	clients, err := tokens.FamilyClients(ctx, families)
	if err != nil {
		return err
	}
	list := make([]string, 0, len(clients))
	for _, c := range clients {
		list = append(list, c)
	}
	return n.SessionEnded(ctx, subject, sessionID, list)
}

func (n *Notifier) add(ctx context.Context, jobs []Job) error {
	if len(jobs) == 0 {
		return nil
	}
	if err := n.queue.Add(ctx, n.now(), jobs...); err != nil {
		return err
	}
	if n.wake != nil {
		n.wake()
	}
	return nil
}

func dedupe(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
