package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/internal/testwait"
)

// finishRollout plays the Deployment controller for one Deployment: every replica of its current
// generation updated and available, no old pods.
func finishRollout(t *testing.T, ns, name string) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k8s.Get(context.Background(), key(ns, name), d); err != nil {
		t.Fatal(err)
	}
	n := ptr.Deref(d.Spec.Replicas, 1)
	setDeploymentStatus(t, ns, name, n, n)
}

func finishRollouts(t *testing.T, fs *v1alpha1.FormsService) {
	t.Helper()
	setStatefulSetReady(t, fs.Namespace, render.NamesOf(fs).Redis)
	for _, c := range render.Components {
		finishRollout(t, fs.Namespace, render.WorkloadName(fs, c))
	}
}

// waitOperandVersion waits until status.operandVersion is want.
func waitOperandVersion(t *testing.T, fs *v1alpha1.FormsService, want string) {
	t.Helper()
	eventuallyWhat(t, "status.operandVersion "+want, func() error {
		var cur v1alpha1.FormsService
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fs), &cur); err != nil {
			return err
		}
		if cur.Status.OperandVersion != want {
			return fmt.Errorf("status.operandVersion = %q", cur.Status.OperandVersion)
		}
		return nil
	})
}

// setFleet changes the operator's image and its bound on upgrades while the manager runs, and puts them
// back when the test ends.
func setFleet(t *testing.T, image string, maxUpgrades int) {
	t.Helper()
	set := func(image string, n int) {
		reconciler.upgrades.mu.Lock()
		defer reconciler.upgrades.mu.Unlock()
		reconciler.ServiceImage, reconciler.MaxConcurrentUpgrades = image, n
	}
	set(image, maxUpgrades)
	t.Cleanup(func() { set(testImage, 0) })
}

// setRecheck sets how often a waiting upgrade asks again for a slot, until the test ends.
func setRecheck(t *testing.T, every time.Duration) {
	t.Helper()
	set := func(d time.Duration) {
		reconciler.upgrades.mu.Lock()
		defer reconciler.upgrades.mu.Unlock()
		reconciler.UpgradeRecheck = d
	}
	was := reconciler.fleet().recheck
	set(every)
	t.Cleanup(func() { set(was) })
}

func TestOperandVersion_NamesTheImageOnlyOnceEveryDeploymentRolledOut(t *testing.T) {
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	waitCondition(t, fs, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RollingOut")
	var cur v1alpha1.FormsService
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fs), &cur); err != nil {
		t.Fatal(err)
	}
	if cur.Status.OperandVersion != "" {
		t.Fatalf("status.operandVersion = %q before any Deployment rolled out", cur.Status.OperandVersion)
	}
	finishRollouts(t, fs)
	waitOperandVersion(t, fs, testImage)

	const next = "registry.example/formsservice:next"
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Image = next })
	// Two of three Deployments done: the platform does not run next yet.
	waitCondition(t, fs, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RollingOut", "forms:", "auth:", "health:")
	finishRollout(t, ns, render.WorkloadName(fs, render.Auth))
	finishRollout(t, ns, render.WorkloadName(fs, render.Health))
	eventuallyWhat(t, "only forms rolling", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fs), &cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionProgressing)
		if c == nil || c.Reason != "RollingOut" || strings.Contains(c.Message, "auth:") || strings.Contains(c.Message, "health:") {
			return fmt.Errorf("Progressing = %+v", c)
		}
		return nil
	})
	if cur.Status.OperandVersion != testImage {
		t.Fatalf("status.operandVersion = %q while forms still rolls, want %q", cur.Status.OperandVersion, testImage)
	}
	finishRollout(t, ns, render.WorkloadName(fs, render.Forms))
	waitOperandVersion(t, fs, next)
}

// fleetMember is what the test, playing the Deployment controller, sees of one FormsService.
type fleetMember struct {
	key      types.NamespacedName
	onTarget bool // a Deployment runs the target image
	done     bool // status.operandVersion is the target
	queued   bool // status.pendingImage is the target
}

// observeFleet reads every service Deployment, then every FormsService: in that order, so that a
// Deployment moved to the target after the FormsService before it finished is never taken for two
// upgrades at once.
func observeFleet(t *testing.T, target string) map[types.NamespacedName]*fleetMember {
	t.Helper()
	ctx := context.Background()
	var ds appsv1.DeploymentList
	if err := k8s.List(ctx, &ds); err != nil {
		t.Fatal(err)
	}
	var fss v1alpha1.FormsServiceList
	if err := k8s.List(ctx, &fss); err != nil {
		t.Fatal(err)
	}
	out := map[types.NamespacedName]*fleetMember{}
	for i := range fss.Items {
		fs := &fss.Items[i]
		if fs.Spec.Image != "" {
			continue
		}
		m := &fleetMember{key: client.ObjectKeyFromObject(fs), done: fs.Status.OperandVersion == target}
		m.queued = fs.Status.PendingImage == target
		for j := range ds.Items {
			d := &ds.Items[j]
			for _, comp := range render.Components {
				if d.Namespace == fs.Namespace && d.Name == render.WorkloadName(fs, comp) && serviceImageOf(comp, d) == target {
					m.onTarget = true
				}
			}
		}
		out[m.key] = m
	}
	return out
}

func TestUpgrades_BoundOfOneRollsTheFleetOneAtATimeEachInTurn(t *testing.T) {
	var mine []*v1alpha1.FormsService
	for range 3 {
		fs := createAndWait(t, sampleFS(newNamespace(t)))
		finishRollouts(t, fs)
		waitOperandVersion(t, fs, testImage)
		mine = append(mine, fs)
	}

	// An operator upgrade: a new default image, at most one FormsService moving to it at a time. No
	// waiting one asks again during the test: each turn is the wake of a freed slot (D87).
	const next = "registry.example/formsservice:fleet-next"
	setRecheck(t, time.Hour)
	setFleet(t, next, 1)

	var admitted []types.NamespacedName // my FormsServices in the order their Deployments got next
	queuedSeen := map[types.NamespacedName]bool{}
	// Every FormsService of the cluster takes part (earlier tests leave theirs): the test finishes
	// whichever rollout the operator started, and checks that there is never more than one.
	testwait.Until(t, 4*time.Minute, "every FormsService of mine on "+next, func() error {
		fleet := observeFleet(t, next)
		var rolling []types.NamespacedName
		for _, m := range fleet {
			if m.onTarget && !m.done {
				rolling = append(rolling, m.key)
			}
		}
		if len(rolling) > 1 {
			t.Fatalf("%d upgrades at once with a bound of 1: %v", len(rolling), rolling)
		}
		waiting := 0
		for _, fs := range mine {
			m := fleet[client.ObjectKeyFromObject(fs)]
			if m.queued {
				queuedSeen[m.key] = true
			}
			if m.onTarget && !slices.Contains(admitted, m.key) {
				admitted = append(admitted, m.key)
			}
			if !m.onTarget && !m.queued {
				waiting++ // has not seen the new image yet
			}
		}
		// Nothing finishes before each of mine either moved or says it waits: then the queue is
		// what orders them.
		if waiting == 0 {
			for _, k := range rolling {
				for _, c := range render.Components {
					name := render.WorkloadName(&v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Name: k.Name}}, c)
					if err := k8s.Get(context.Background(), key(k.Namespace, name), &appsv1.Deployment{}); err == nil {
						finishRollout(t, k.Namespace, name)
					}
				}
			}
		}
		for _, fs := range mine {
			if !fleet[client.ObjectKeyFromObject(fs)].done {
				return fmt.Errorf("admitted so far %v; rolling now %v", admitted, rolling)
			}
		}
		return nil
	})

	if len(admitted) != 3 {
		t.Fatalf("admitted %v, want all three", admitted)
	}
	// The first one may have taken the free slot before the others queued; the two that waited were
	// told so, and took their turns in namespace/name order.
	for _, k := range admitted[1:] {
		if !queuedSeen[k] {
			t.Errorf("%s was never seen UpgradeQueued before its turn", k)
		}
	}
	if lessKey(admitted[2], admitted[1]) {
		t.Errorf("the queue took %s before %s", admitted[2], admitted[1])
	}
}

func TestUpgrades_QueuedKeepsRunningImageButTakesOtherChanges(t *testing.T) {
	ctx := context.Background()
	blocker := createAndWait(t, sampleFS(newNamespace(t)))
	finishRollouts(t, blocker)
	waitOperandVersion(t, blocker, testImage)
	fs := createAndWait(t, sampleFS(newNamespace(t)))
	finishRollouts(t, fs)
	waitOperandVersion(t, fs, testImage)

	// No slot at all: every FormsService that did not move at once waits.
	const next = "registry.example/formsservice:queued-next"
	setFleet(t, next, 1)
	// Hold the slot with a rollout that never finishes: the test does not play the Deployment
	// controller for next, unless the fs under test took the slot first; then the roles swap.
	var queued *v1alpha1.FormsService
	eventuallyWhat(t, "one of the two queued", func() error {
		for _, f := range []*v1alpha1.FormsService{blocker, fs} {
			var cur v1alpha1.FormsService
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(f), &cur); err != nil {
				return err
			}
			c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionProgressing)
			if cur.Status.PendingImage == next && c != nil && c.Reason == "UpgradeQueued" && strings.Contains(c.Message, next) {
				queued = f
				return nil
			}
		}
		return fmt.Errorf("neither says UpgradeQueued")
	})

	// A change of the spec still rolls out, on the image the Deployments run.
	updateFS(t, queued, func(fs *v1alpha1.FormsService) { fs.Spec.Auth.Replicas = ptr.To[int32](4) })
	eventuallyWhat(t, "auth scaled on the old image", func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, key(queued.Namespace, render.WorkloadName(queued, render.Auth)), d); err != nil {
			return err
		}
		if ptr.Deref(d.Spec.Replicas, 0) != 4 {
			return fmt.Errorf("auth replicas %d", ptr.Deref(d.Spec.Replicas, 0))
		}
		if img := serviceImageOf(render.Auth, d); img != testImage {
			t.Fatalf("a queued FormsService's auth Deployment runs %q, want the running %q", img, testImage)
		}
		return nil
	})
	for _, c := range render.Components {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, key(queued.Namespace, render.WorkloadName(queued, c)), d); err != nil {
			t.Fatal(err)
		}
		if img := serviceImageOf(c, d); img != testImage {
			t.Errorf("%s runs %q while its upgrade waits", c, img)
		}
	}
	// Back to no bound: it moves at once. (The other one's rollout is left unfinished.)
	setFleet(t, next, 0)
	eventuallyWhat(t, "queued one on next", func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, key(queued.Namespace, render.WorkloadName(queued, render.Forms)), d); err != nil {
			return err
		}
		if img := serviceImageOf(render.Forms, d); img != next {
			return fmt.Errorf("forms runs %q", img)
		}
		return nil
	})
}

// setRedisFlag changes the operator's --redis-image while the manager runs, until the test ends.
func setRedisFlag(t *testing.T, image string) {
	t.Helper()
	set := func(image string) {
		reconciler.upgrades.mu.Lock()
		defer reconciler.upgrades.mu.Unlock()
		reconciler.RedisImage = image
	}
	set(image)
	t.Cleanup(func() { set("") })
}

// D92: an operator upgrade that also changes --redis-image moves a FormsService's managed Redis with its
// services, in its slot: the one whose upgrade waits keeps the Redis image it runs, as does the one that
// pins spec.image (outside the operator's upgrades), while the admitted one gets the new Redis image.
func TestUpgrades_TheRedisImageMovesWithTheUpgradeAndNotWithAPinnedImage(t *testing.T) {
	ctx := context.Background()
	var unpinned []*v1alpha1.FormsService
	for range 2 {
		fs := createAndWait(t, sampleFS(newNamespace(t)))
		finishRollouts(t, fs)
		waitOperandVersion(t, fs, testImage)
		unpinned = append(unpinned, fs)
	}
	pinnedSpec := sampleFS(newNamespace(t))
	pinnedSpec.Spec.Image = testImage
	pinned := createAndWait(t, pinnedSpec)
	finishRollouts(t, pinned)
	waitOperandVersion(t, pinned, testImage)
	for _, fs := range append(slices.Clone(unpinned), pinned) {
		if img := redisImageNow(t, fs.Namespace); img != render.DefaultRedisImage {
			t.Fatalf("%s/%s: Redis runs %q before the upgrade", fs.Namespace, fs.Name, img)
		}
	}

	// The operator upgraded: new services' image, new Redis image, one upgrade at a time. A rollout
	// begun is left unfinished, so that the others wait for the whole test (another test's FormsService
	// may hold the slot too: then both of these wait).
	const next, nextRedis = "registry.example/formsservice:redis-next", "mirror.example/redis:7.0-next"
	setRedisFlag(t, nextRedis)
	setFleet(t, next, 1)
	var queued []*v1alpha1.FormsService
	eventuallyWhat(t, "each admitted or queued, at least one queued", func() error {
		queued = nil
		for _, f := range unpinned {
			var cur v1alpha1.FormsService
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(f), &cur); err != nil {
				return err
			}
			d := &appsv1.Deployment{}
			if err := k8s.Get(ctx, key(f.Namespace, render.WorkloadName(f, render.Forms)), d); err != nil {
				return err
			}
			switch {
			case serviceImageOf(render.Forms, d) == next:
			case cur.Status.PendingImage == next:
				queued = append(queued, f) // said by the status of a reconcile that applied the StatefulSet before it
			default:
				return fmt.Errorf("%s neither moved nor queued", f.Namespace)
			}
		}
		if len(queued) == 0 {
			return fmt.Errorf("both admitted with a bound of one")
		}
		return nil
	})
	for _, f := range queued {
		if img := redisImageNow(t, f.Namespace); img != render.DefaultRedisImage {
			t.Errorf("a queued FormsService's Redis runs %q while its upgrade waits, want the running %q", img, render.DefaultRedisImage)
		}
	}

	// The pinned one, reconciled since the flags changed (a spec change it applies): neither its
	// services nor its Redis moved.
	updateFS(t, pinned, func(fs *v1alpha1.FormsService) { fs.Spec.Auth.Replicas = ptr.To[int32](4) })
	eventuallyWhat(t, "the pinned one's auth scaled", func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, key(pinned.Namespace, render.WorkloadName(pinned, render.Auth)), d); err != nil {
			return err
		}
		if ptr.Deref(d.Spec.Replicas, 0) != 4 {
			return fmt.Errorf("auth replicas %d", ptr.Deref(d.Spec.Replicas, 0))
		}
		return nil
	})
	if img := redisImageNow(t, pinned.Namespace); img != render.DefaultRedisImage {
		t.Errorf("the pinned one's Redis runs %q after the operator's upgrade, want the running %q", img, render.DefaultRedisImage)
	}
	for _, c := range render.Components {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, key(pinned.Namespace, render.WorkloadName(pinned, c)), d); err != nil {
			t.Fatal(err)
		}
		if img := serviceImageOf(c, d); img != testImage {
			t.Errorf("the pinned one's %s runs %q", c, img)
		}
	}

	// Their turn (no bound any more): each one's Redis moves with its services; the pinned one's stays.
	setFleet(t, next, 0)
	for _, f := range unpinned {
		eventuallyWhat(t, f.Namespace+"'s Redis on "+nextRedis, func() error {
			if img := redisImageNow(t, f.Namespace); img != nextRedis {
				return fmt.Errorf("Redis runs %q", img)
			}
			return nil
		})
	}
	updateFS(t, pinned, func(fs *v1alpha1.FormsService) { fs.Spec.Auth.Replicas = ptr.To[int32](3) })
	eventuallyWhat(t, "the pinned one's auth scaled again", func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, key(pinned.Namespace, render.WorkloadName(pinned, render.Auth)), d); err != nil {
			return err
		}
		if ptr.Deref(d.Spec.Replicas, 0) != 3 {
			return fmt.Errorf("auth replicas %d", ptr.Deref(d.Spec.Replicas, 0))
		}
		return nil
	})
	if img := redisImageNow(t, pinned.Namespace); img != render.DefaultRedisImage {
		t.Errorf("the pinned one's Redis runs %q without a bound, want the running %q", img, render.DefaultRedisImage)
	}
}

func TestUpdatePolicy_ManualKeepsTheRunningImageUntilTheUpgradeIsApproved(t *testing.T) {
	ctx := context.Background()
	manual := sampleFS(newNamespace(t))
	manual.Spec.UpdatePolicy = &v1alpha1.UpdatePolicy{Mode: v1alpha1.UpdateModeManual}
	fs := createAndWait(t, manual)
	finishRollouts(t, fs)
	waitOperandVersion(t, fs, testImage)

	// No bound on the fleet: only the policy holds it back.
	const next = "registry.example/formsservice:manual-next"
	setFleet(t, next, 0)
	eventuallyWhat(t, "the upgrade awaits approval", func() error {
		var cur v1alpha1.FormsService
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), &cur); err != nil {
			return err
		}
		// Waiting for a person is not the operator's work: neither Progressing nor Reconciling, so
		// that GitOps tools see the resource Current meanwhile; Ready stays.
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionProgressing)
		if cur.Status.PendingImage != next || c == nil || c.Status != metav1.ConditionFalse || c.Reason != "UpgradeAwaitsApproval" ||
			!strings.Contains(c.Message, v1alpha1.ApproveUpgradeAnnotation+"="+next) {
			return fmt.Errorf("pendingImage %q, Progressing %+v", cur.Status.PendingImage, c)
		}
		if rc := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionReconciling); rc == nil || rc.Status != metav1.ConditionFalse {
			return fmt.Errorf("Reconciling %+v", rc)
		}
		if !meta.IsStatusConditionTrue(cur.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("not Ready: %+v", cur.Status.Conditions)
		}
		return nil
	})
	for _, c := range render.Components {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, key(fs.Namespace, render.WorkloadName(fs, c)), d); err != nil {
			t.Fatal(err)
		}
		if img := serviceImageOf(c, d); img != testImage {
			t.Fatalf("%s runs %q before the upgrade was approved", c, img)
		}
	}

	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		metav1.SetMetaDataAnnotation(&fs.ObjectMeta, v1alpha1.ApproveUpgradeAnnotation, next)
	})
	eventuallyWhat(t, "approved: every service on next", func() error {
		for _, c := range render.Components {
			d := &appsv1.Deployment{}
			if err := k8s.Get(ctx, key(fs.Namespace, render.WorkloadName(fs, c)), d); err != nil {
				return err
			}
			if img := serviceImageOf(c, d); img != next {
				return fmt.Errorf("%s runs %q", c, img)
			}
		}
		return nil
	})
	finishRollouts(t, fs)
	waitOperandVersion(t, fs, next)
}

// A FormsService that waits for its team's approval is not in the queue: with a bound of one, the
// automatic one after it in namespace/name order is admitted at once, not held behind an upgrade that
// may never be approved.
func TestUpgrades_AFormsServiceAwaitingApprovalIsInNobodysWay(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	const next = "registry.example/formsservice:approval-next"
	held := sampleFS(ns)
	held.Name = "aaa"
	held.Spec.UpdatePolicy = &v1alpha1.UpdatePolicy{Mode: v1alpha1.UpdateModeManual}
	held = createAndWait(t, held)

	// What the operator writes while that upgrade awaits approval. Only FormsServices of this namespace
	// count for this reconciler (a namespaced client), so other tests' upgrades hold no slot here.
	r := &FormsServiceReconciler{Client: client.NewNamespacedClient(k8s, ns), MaxConcurrentUpgrades: 1}
	eventuallyWhat(t, "zzz admitted with aaa awaiting approval", func() error {
		cur := &v1alpha1.FormsService{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(held), cur); err != nil {
			return err
		}
		cur.Status.PendingImage = next
		if err := k8s.Status().Update(ctx, cur); err != nil {
			return err
		}
		queued, err := r.admitUpgrade(ctx, types.NamespacedName{Namespace: ns, Name: "zzz"}, next)
		if err != nil {
			return err
		}
		// Only an answer given while aaa's status said it waits counts (the manager may rewrite it).
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(held), cur); err != nil {
			return err
		}
		if cur.Status.PendingImage != next {
			return fmt.Errorf("aaa's status was rewritten meanwhile")
		}
		if queued != "" {
			t.Fatalf("zzz queued behind aaa, which awaits its team's approval: %s", queued)
		}
		return nil
	})
}

// windowAround is a maintenance window of one hour that opens at start (minute resolution, UTC).
func windowAround(start time.Time) v1alpha1.MaintenanceWindow {
	start = start.UTC()
	end := start.Add(time.Hour)
	return v1alpha1.MaintenanceWindow(start.Format("Mon") + ":" + start.Format("15:04") + "-" + end.Format("15:04"))
}

// poke changes an annotation, which the reconciler watches: the way to make it look again at once
// after the test moved its clock (it would otherwise come back when the window opens, in real time).
func poke(t *testing.T, fs *v1alpha1.FormsService) {
	t.Helper()
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		metav1.SetMetaDataAnnotation(&fs.ObjectMeta, "test.formsservice.io/poke", clock.Now().Format(time.RFC3339Nano))
	})
}

func TestUpdatePolicy_AnUpgradeBeginsOnlyInAMaintenanceWindowAndFinishesAfterIt(t *testing.T) {
	ctx := context.Background()
	opens := clock.Now().Truncate(time.Minute).Add(2 * time.Hour)
	windowed := sampleFS(newNamespace(t))
	windowed.Spec.UpdatePolicy = &v1alpha1.UpdatePolicy{MaintenanceWindows: []v1alpha1.MaintenanceWindow{windowAround(opens)}}
	fs := createAndWait(t, windowed)
	finishRollouts(t, fs)
	waitOperandVersion(t, fs, testImage)

	// No bound on the fleet: only the window holds it back.
	const next = "registry.example/formsservice:window-next"
	setFleet(t, next, 0)
	eventuallyWhat(t, "the upgrade awaits its window", func() error {
		var cur v1alpha1.FormsService
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), &cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionProgressing)
		if cur.Status.PendingImage != next || c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonUpgradeAwaitsWindow ||
			!strings.Contains(c.Message, opens.Format(time.RFC3339)) {
			return fmt.Errorf("pendingImage %q, Progressing %+v", cur.Status.PendingImage, c)
		}
		if rc := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionReconciling); rc == nil || rc.Status != metav1.ConditionFalse || rc.Reason != ReasonUpgradeAwaitsWindow {
			return fmt.Errorf("Reconciling %+v", rc)
		}
		if !meta.IsStatusConditionTrue(cur.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("not Ready: %+v", cur.Status.Conditions)
		}
		return nil
	})
	servicesRun := func(want string) func() error {
		return func() error {
			for _, c := range render.Components {
				d := &appsv1.Deployment{}
				if err := k8s.Get(ctx, key(fs.Namespace, render.WorkloadName(fs, c)), d); err != nil {
					return err
				}
				if img := serviceImageOf(c, d); img != want {
					return fmt.Errorf("%s runs %q", c, img)
				}
			}
			return nil
		}
	}
	if err := servicesRun(testImage)(); err != nil {
		t.Fatalf("before its window: %v", err)
	}

	// The window opens: the upgrade begins (the minutes around its edges: the maintenance package's tests).
	clock.Advance(opens.Add(time.Minute).Sub(clock.Now()))
	poke(t, fs)
	eventuallyWhat(t, "in the window: every service on next", servicesRun(next))

	// The window closes before the rollout finished: what began goes on.
	clock.Advance(2 * time.Hour)
	poke(t, fs)
	finishRollouts(t, fs)
	waitOperandVersion(t, fs, next)
	if err := servicesRun(next)(); err != nil {
		t.Fatalf("after its window closed: %v", err)
	}
}
