package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/maintenance"
	"github.com/formsservice/formsservice/controllers/render"
)

// The upgrade phase (D73): an operator upgrade changes the image of every FormsService without
// spec.image at once. At most MaxConcurrentUpgrades of them move to it at a time; the others keep
// rendering the image their Deployments run, every other change still applies, and Progressing says
// UpgradeQueued until a slot is theirs.
//
// Who holds a slot is read from the cluster, so that a restart or a new leader counts the same: a
// FormsService without spec.image holds one while a Deployment of it runs an image other than its
// status.operandVersion (the image it last rolled out in full) and none of its Deployments failed
// (ProgressDeadlineExceeded, ReplicaFailure). Admissions this process made are remembered as well, until
// their rollout finishes or fails: the cache may not show the Deployments just written when the next
// FormsService asks. The waiting ones (status.pendingImage) take the free slots in namespace/name order.
// A FormsService with spec.updatePolicy.mode Manual waits, whatever the bound, until its annotation
// approves the waiting image (v1alpha1.ApproveUpgradeAnnotation).

// DefaultMaxConcurrentUpgrades is the manager's --max-concurrent-upgrades: two platforms move to a new
// operator's image at a time. One would make every platform wait for the slowest rollout in turn; two
// keep a fleet of fifty with rollouts of a few minutes to about an hour, while a bad image reaches two
// platforms, not fifty, before their rollouts stall (D73).
const DefaultMaxConcurrentUpgrades = 2

// DefaultUpgradeRecheck is how often a FormsService whose upgrade waits asks again for a slot. A freed
// slot wakes the first in the queue at once (upgradewake.go, D87); this is the safety net.
const DefaultUpgradeRecheck = time.Minute

// upgradeSlots holds the admissions this process made, and serialises the decisions: two workers must
// not both take the last slot.
type upgradeSlots struct {
	mu       sync.Mutex
	admitted map[types.NamespacedName]string // FormsService → the image it was admitted to
}

// remembers says whether this process admitted the FormsService's upgrade.
func (u *upgradeSlots) remembers(key types.NamespacedName) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.admitted[key]
	return ok
}

// admit remembers a FormsService's admission to target.
func (u *upgradeSlots) admit(key types.NamespacedName, target string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.admitted == nil {
		u.admitted = map[types.NamespacedName]string{}
	}
	u.admitted[key] = target
}

// forget drops a FormsService's admission.
func (u *upgradeSlots) forget(key types.NamespacedName) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.admitted, key)
}

// upgrade decides which services' image this reconcile renders: the operator's, unless the FormsService
// runs another one and its upgrade is not admitted; then the one its Deployments run.
func (run *reconcileRun) upgrade(ctx context.Context) {
	r, fs := run.r, run.fs
	key := client.ObjectKeyFromObject(fs)
	target := run.in.Image
	policy := fs.Spec.UpdatePolicy != nil && (fs.Spec.UpdatePolicy.Mode == v1alpha1.UpdateModeManual || len(fs.Spec.UpdatePolicy.MaintenanceWindows) > 0)
	if fs.Spec.Image != "" {
		// The team's own image: a change of spec.image is the team's decision, and the platform is
		// outside the operator's upgrades, its managed Redis too (D92: it keeps the image it runs
		// unless spec.redis.managed.image names one).
		r.upgrades.forget(key)
		run.in.KeepRunningRedisImage = true
		return
	}
	if (r.fleet().maxUpgrades <= 0 && !policy) || target == "" {
		// No bound: every platform moves at once, its managed Redis with it.
		r.upgrades.forget(key)
		return
	}
	running, err := r.serviceImages(ctx, fs)
	if err != nil {
		run.fail("ReadFailed", fmt.Errorf("reading the Deployments' images: %w", err))
		run.holdDeployments = true // neither the old image nor the new one is known to be right
		return
	}
	if len(running) == 0 {
		return // a new platform is not an upgrade
	}
	run.upgradeTarget = target
	if slices.Contains(running, target) {
		return // its Deployments got the image: it has its slot (or had it)
	}
	hold := func(why string) {
		run.in.Image = running[0]
		run.in.KeepRunningRedisImage = true // the operator's Redis image is part of the upgrade that waits (D92)
		run.PendingImage = target
		run.UpgradeQueued = fmt.Sprintf("The upgrade to %s waits: %s.", target, why)
	}
	if r.upgrades.remembers(key) {
		// Admitted, and the Deployments not yet seen with the image: a window that closed since must not
		// take back what was begun.
		return
	}
	if why, reason := heldByTeam(fs, target, r.now()); reason != "" {
		// Not queued but held by the team's policy: the operator has nothing to do until a person
		// approves or the window opens, so the resource is Current (kstatus) meanwhile, not Reconciling
		// for days.
		r.upgrades.forget(key)
		run.in.Image = running[0]
		run.in.KeepRunningRedisImage = true
		run.PendingImage = target
		run.UpgradeHeld, run.UpgradeHeldReason = why, reason
		if reason == ReasonUpgradeAwaitsWindow {
			run.windowOpensAt = nextWindow(fs, r.now())
		}
		return
	}
	if r.fleet().maxUpgrades <= 0 {
		r.upgrades.admit(key, target) // no bound; remembered so that a window closing cannot undo it
		return
	}
	queued, err := r.admitUpgrade(ctx, key, target)
	if err != nil {
		run.fail("ReadFailed", fmt.Errorf("counting the upgrades under way: %w", err))
		queued = "the operator could not count the upgrades under way"
	}
	if queued == "" {
		run.log.Info("upgrade admitted", "image", target)
		return
	}
	hold(queued)
}

// The reasons of an upgrade held by the team's updatePolicy.
const (
	ReasonUpgradeAwaitsApproval = "UpgradeAwaitsApproval"
	ReasonUpgradeAwaitsWindow   = "UpgradeAwaitsWindow"
)

// heldByTeam says why fs's updatePolicy holds its upgrade to target at now, and the condition reason;
// "" when it does not: with mode Manual, until the annotation names target; with maintenance windows,
// until one is open (an approved upgrade waits for a window too). Windows the API server let through
// but Parse refuses cannot be: they share the pattern; if it happened, the upgrade is held, never let
// out of its window.
func heldByTeam(fs *v1alpha1.FormsService, target string, now time.Time) (why, reason string) {
	p := fs.Spec.UpdatePolicy
	if p == nil {
		return "", ""
	}
	if p.Mode == v1alpha1.UpdateModeManual && fs.Annotations[v1alpha1.ApproveUpgradeAnnotation] != target {
		return fmt.Sprintf("The upgrade to %s awaits approval: updatePolicy.mode is Manual; annotate the FormsService %s=%s to approve it.",
			target, v1alpha1.ApproveUpgradeAnnotation, target), ReasonUpgradeAwaitsApproval
	}
	if len(p.MaintenanceWindows) == 0 {
		return "", ""
	}
	windows, err := maintenance.ParseAll(windowTexts(p.MaintenanceWindows))
	if err != nil {
		return fmt.Sprintf("The upgrade to %s waits: %v.", target, err), ReasonUpgradeAwaitsWindow
	}
	if maintenance.Open(windows, now) {
		return "", ""
	}
	return fmt.Sprintf("The upgrade to %s waits for a maintenance window (%s UTC); the next opens at %s.",
		target, strings.Join(windowTexts(p.MaintenanceWindows), ", "),
		maintenance.NextOpening(windows, now).Format(time.RFC3339)), ReasonUpgradeAwaitsWindow
}

// heldByPolicy says whether other's waiting upgrade is held by its own updatePolicy.
func heldByPolicy(other *v1alpha1.FormsService, now time.Time) bool {
	_, reason := heldByTeam(other, other.Status.PendingImage, now)
	return reason != ""
}

// nextWindow is when fs's next maintenance window opens after now (zero without one).
func nextWindow(fs *v1alpha1.FormsService, now time.Time) time.Time {
	windows, err := maintenance.ParseAll(windowTexts(fs.Spec.UpdatePolicy.MaintenanceWindows))
	if err != nil {
		return time.Time{}
	}
	return maintenance.NextOpening(windows, now)
}

func windowTexts(ws []v1alpha1.MaintenanceWindow) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = string(w)
	}
	return out
}

// settleUpgrade drops this process's admission of fs once it no longer needs remembering: the rollout
// finished or failed, or the reconcile did not apply the Deployments.
func (r *FormsServiceReconciler) settleUpgrade(fs *v1alpha1.FormsService, run *reconcileRun, workloads []workloadState, st v1alpha1.FormsServiceStatus) {
	if run.upgradeTarget == "" || run.PendingImage != "" {
		return
	}
	if st.OperandVersion == run.upgradeTarget || !run.deploymentsApplied || deploymentFailed(workloads) {
		r.upgrades.forget(client.ObjectKeyFromObject(fs))
	}
}

// admitUpgrade admits fs's upgrade to target, or says why it waits.
func (r *FormsServiceReconciler) admitUpgrade(ctx context.Context, self types.NamespacedName, target string) (string, error) {
	u := &r.upgrades
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.admitted[self]; ok {
		u.admitted[self] = target
		return "", nil
	}
	var list v1alpha1.FormsServiceList
	if err := r.Client.List(ctx, &list); err != nil {
		return "", err
	}
	inFlight, ahead, now := 0, 0, r.now()
	for i := range list.Items {
		other := &list.Items[i]
		key := client.ObjectKeyFromObject(other)
		if key == self {
			continue
		}
		_, remembered := u.admitted[key]
		upgrading, err := r.upgradeUnderWay(ctx, other)
		if err != nil {
			return "", err
		}
		switch {
		case remembered || upgrading:
			inFlight++
		case other.Status.PendingImage != "" && lessKey(key, self) && !heldByPolicy(other, now):
			// Waiting for a slot, and first in order; one that waits for its team's approval or its
			// window is in nobody's way.
			ahead++
		}
	}
	limit := r.MaxConcurrentUpgrades
	if inFlight+ahead >= limit {
		return fmt.Sprintf("%d of at most %d upgrades under way (--max-concurrent-upgrades), %d FormsServices ahead in the queue", inFlight, limit, ahead), nil
	}
	if u.admitted == nil {
		u.admitted = map[types.NamespacedName]string{}
	}
	u.admitted[self] = target
	return "", nil
}

// upgradeUnderWay says whether fs holds a slot by what the cluster shows: without spec.image, a
// Deployment of it runs an image other than the one it last rolled out in full, and none failed. A
// platform that never finished a rollout (no operandVersion) is new, not upgrading.
func (r *FormsServiceReconciler) upgradeUnderWay(ctx context.Context, fs *v1alpha1.FormsService) (bool, error) {
	if fs.Spec.Image != "" || fs.Status.OperandVersion == "" || !fs.DeletionTimestamp.IsZero() {
		return false, nil
	}
	changed := false
	for _, c := range render.Components {
		d, err := r.deployment(ctx, fs, c)
		if err != nil || d == nil {
			return false, err
		}
		w := deploymentState(c, d)
		if w.failed() != nil {
			return false, nil // a failed upgrade gives its slot back; its status says why
		}
		changed = changed || w.Image != fs.Status.OperandVersion
	}
	return changed, nil
}

// serviceImages are the images of fs's service Deployments, in render.Components order, without
// repeats; none when it has no Deployment yet.
func (r *FormsServiceReconciler) serviceImages(ctx context.Context, fs *v1alpha1.FormsService) ([]string, error) {
	var out []string
	for _, c := range render.Components {
		d, err := r.deployment(ctx, fs, c)
		if err != nil {
			return nil, err
		}
		if img := ""; d != nil {
			img = serviceImageOf(c, d)
			if img != "" && !slices.Contains(out, img) {
				out = append(out, img)
			}
		}
	}
	return out, nil
}

// deployment reads one service Deployment of fs from the cache (nil when there is none).
func (r *FormsServiceReconciler) deployment(ctx context.Context, fs *v1alpha1.FormsService, component string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: render.WorkloadName(fs, component)}, d)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return d, err
}

// deploymentFailed reports a Deployment the Deployment controller gave up on.
func deploymentFailed(workloads []workloadState) bool {
	for _, w := range workloads {
		if w.Kind == "Deployment" && w.failed() != nil {
			return true
		}
	}
	return false
}

func lessKey(a, b types.NamespacedName) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// fleetSettings are the operator's settings that a test changes while the manager runs, read together
// under the lock the test takes.
type fleetSettings struct {
	serviceImage, redisImage string
	maxUpgrades              int           // --max-concurrent-upgrades; 0 means no bound
	recheck                  time.Duration // how soon a FormsService whose upgrade waits asks again
}

func (r *FormsServiceReconciler) fleet() fleetSettings {
	r.upgrades.mu.Lock()
	defer r.upgrades.mu.Unlock()
	recheck := r.UpgradeRecheck
	if recheck <= 0 {
		recheck = DefaultUpgradeRecheck
	}
	return fleetSettings{serviceImage: r.ServiceImage, redisImage: r.RedisImage, maxUpgrades: r.MaxConcurrentUpgrades, recheck: recheck}
}
