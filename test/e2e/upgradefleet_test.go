//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/test/internal/cluster"
)

// The FormsServices the upgrade step adds beside the sample's (D92): a second one on the operator's
// images, which must wait for the sample's upgrade (--max-concurrent-upgrades 1), and one that pins
// spec.image, which the operator's upgrade must not touch at all.
const (
	fleetSecond = "acme-second"
	fleetPinned = "acme-pinned"
)

// createSmallFormsService creates a FormsService of one pod per service and a single managed Redis,
// pinned to image unless it is "", and waits until it is Ready and has rolled out in full.
func (k *kind) createSmallFormsService(t *testing.T, name, image string) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{
		"publicURL":      "https://" + name + ".acme.example",
		"allowedOrigins": []any{e2eOrigin},
		"oauthClients":   []any{map[string]any{"clientID": name + "-web", "redirectURIs": []any{"https://" + name + ".acme.example/cb"}}},
		"forms":          map[string]any{"replicas": int64(1)},
		"auth":           map[string]any{"replicas": int64(1)},
		"health":         map[string]any{"replicas": int64(1)},
	}
	if image != "" {
		spec["image"] = image
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(formsServiceGVK)
	u.SetNamespace(appNS)
	u.SetName(name)
	if err := k.client.Create(context.Background(), u); err != nil {
		t.Fatalf("creating FormsService %s: %v", name, err)
	}
	return u
}

// waitOperandVersion waits until the FormsService reports image as fully rolled out.
func (k *kind) waitOperandVersion(t *testing.T, name, image string, timeout time.Duration) {
	t.Helper()
	cluster.Eventually(t, timeout, name+" status.operandVersion "+image, func() (bool, string) {
		v, _, _ := unstructured.NestedString(k.get(t, name).Object, "status", "operandVersion")
		return v == image, "status.operandVersion " + v
	})
}

// fleetWatch samples the FormsServices of an operator upgrade every half second while it runs: which
// ones are moving (a service Deployment or the managed Redis on the new images, and not every one of
// them rolled out on them), which ones say UpgradeQueued, whether two ever move at once, and whether a
// pinned one's workloads change their images at all.
type fleetWatch struct {
	k                                 *kind
	moving, pinned                    []string
	next, nextRedis, image, redisImg  string
	mu                                sync.Mutex
	started, done                     map[string]time.Time
	queued                            map[string]bool
	overlaps, pinnedChanges, readErrs []string
	idle                              map[string]time.Time // when the last sample that saw nothing of the upgrade began
	redisDone                         map[string]time.Time // when the first sample that saw the Redis rolled out on the new image ended
	stop                              chan struct{}
	wg                                sync.WaitGroup
}

func (k *kind) watchFleet(t *testing.T, moving, pinned []string, image, next, redisImg, nextRedis string) *fleetWatch {
	w := &fleetWatch{k: k, moving: moving, pinned: pinned, image: image, next: next, redisImg: redisImg, nextRedis: nextRedis,
		started: map[string]time.Time{}, done: map[string]time.Time{}, queued: map[string]bool{},
		idle: map[string]time.Time{}, redisDone: map[string]time.Time{}, stop: make(chan struct{})}
	w.wg.Go(func() {
		for {
			w.sample(t)
			select {
			case <-w.stop:
				return
			case <-time.After(500 * time.Millisecond): // the sampling's pace, not a wait for a condition
			}
		}
	})
	return w
}

func (w *fleetWatch) end() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

// workloads reads the three service Deployments and the managed Redis StatefulSet of a FormsService.
func (w *fleetWatch) workloads(name string) ([]*appsv1.Deployment, *appsv1.StatefulSet, error) {
	ctx := context.Background()
	var deps []*appsv1.Deployment
	for _, c := range render.Components {
		d := &appsv1.Deployment{}
		if err := w.k.client.Get(ctx, types.NamespacedName{Namespace: appNS, Name: name + "-" + c}, d); err != nil {
			return nil, nil, err
		}
		deps = append(deps, d)
	}
	sts := &appsv1.StatefulSet{}
	if err := w.k.client.Get(ctx, types.NamespacedName{Namespace: appNS, Name: name + "-redis"}, sts); err != nil {
		return nil, nil, err
	}
	return deps, sts, nil
}

func (w *fleetWatch) sample(t *testing.T) {
	now := time.Now()
	var moving []string
	for _, name := range w.moving {
		deps, sts, err := w.workloads(name)
		if err != nil {
			w.mu.Lock()
			w.readErrs = append(w.readErrs, err.Error())
			w.mu.Unlock()
			continue
		}
		started, done := false, true
		for _, d := range deps {
			onNext := d.Spec.Template.Spec.Containers[0].Image == w.next
			rolled, _ := w.k.rolledOut(t, d.Name, func(p *corev1.PodTemplateSpec) bool { return p.Spec.Containers[0].Image == w.next })
			started, done = started || onNext, done && rolled
		}
		redisOnNext := sts.Spec.Template.Spec.Containers[0].Image == w.nextRedis
		want := int32(1)
		if sts.Spec.Replicas != nil {
			want = *sts.Spec.Replicas
		}
		s := sts.Status
		redisRolled := redisOnNext && s.ObservedGeneration == sts.Generation && s.UpdatedReplicas == want &&
			s.ReadyReplicas == want && s.CurrentRevision == s.UpdateRevision
		started, done = started || redisOnNext, done && redisRolled
		fs := w.k.getQuiet(name)
		read := time.Now()
		w.mu.Lock()
		if !started {
			w.idle[name] = now
		}
		if _, ok := w.redisDone[name]; redisRolled && !ok {
			w.redisDone[name] = read
		}
		if fs != nil {
			pending, _, _ := unstructured.NestedString(fs.Object, "status", "pendingImage")
			if pending == w.next && conditionReason(fs, v1alpha1.ConditionProgressing) == "UpgradeQueued" {
				w.queued[name] = true
			}
		}
		if _, ok := w.started[name]; started && !ok {
			w.started[name] = now
		}
		if _, ok := w.done[name]; done && !ok {
			w.done[name] = now
		}
		w.mu.Unlock()
		if started && !done {
			moving = append(moving, name)
		}
	}
	var changed []string
	for _, name := range w.pinned {
		deps, sts, err := w.workloads(name)
		if err != nil {
			changed = append(changed, err.Error())
			continue
		}
		for _, d := range deps {
			if img := d.Spec.Template.Spec.Containers[0].Image; img != w.image {
				changed = append(changed, fmt.Sprintf("%s runs %s", d.Name, img))
			}
		}
		if img := sts.Spec.Template.Spec.Containers[0].Image; img != w.redisImg {
			changed = append(changed, fmt.Sprintf("%s runs %s", sts.Name, img))
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(moving) > 1 {
		w.overlaps = append(w.overlaps, fmt.Sprintf("at %s: %s", now.Format("15:04:05.0"), strings.Join(moving, ", ")))
	}
	w.pinnedChanges = append(w.pinnedChanges, changed...)
}

// check reports what the watch saw: every moving FormsService started and finished, never two at once,
// the later ones told UpgradeQueued before their turn, and the pinned ones unchanged.
func (w *fleetWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	order := slices.Clone(w.moving)
	slices.SortFunc(order, func(a, b string) int { return w.started[a].Compare(w.started[b]) })
	for i, name := range order {
		if w.started[name].IsZero() || w.done[name].IsZero() {
			t.Errorf("%s: upgrade started %v, finished %v", name, !w.started[name].IsZero(), !w.done[name].IsZero())
			continue
		}
		t.Logf("%s: moved to %s and %s from %s to %s (queued before: %v)", name, w.next, w.nextRedis,
			w.started[name].Format("15:04:05.0"), w.done[name].Format("15:04:05.0"), w.queued[name])
		if i > 0 && !w.queued[name] {
			t.Errorf("%s began its upgrade after %s without having been seen UpgradeQueued (status.pendingImage %s)", name, order[i-1], w.next)
		}
	}
	if len(w.overlaps) > 0 {
		t.Errorf("two upgrades under way at once with --max-concurrent-upgrades 1 (%d samples), first %s", len(w.overlaps), w.overlaps[0])
	}
	if len(w.pinnedChanges) > 0 {
		t.Errorf("a pinned FormsService's workloads changed during the operator's upgrade (%d samples): %s", len(w.pinnedChanges), w.pinnedChanges[0])
	}
	if len(w.readErrs) > 0 {
		t.Logf("%d samples could not read a workload, first: %s", len(w.readErrs), w.readErrs[0])
	}
}

// redisWindow is when the FormsService's managed Redis may have been restarting: from the last sample
// that saw none of its upgrade (the operator applies the Deployments and the StatefulSet in one
// reconcile, and the StatefulSet controller deletes the single pod at once) to the end of the first
// sample that saw the StatefulSet rolled out on the new image. Zero when the upgrade was not seen.
func (w *fleetWatch) redisWindow(name string) (from, to time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.idle[name], w.redisDone[name]
}

// getQuiet reads a FormsService, nil when it cannot (the watch's goroutine must not end the test).
func (k *kind) getQuiet(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(formsServiceGVK)
	if err := k.client.Get(context.Background(), types.NamespacedName{Namespace: appNS, Name: name}, u); err != nil {
		return nil
	}
	return u
}

// conditionReason is the reason of the FormsService's condition ("" without it).
func conditionReason(u *unstructured.Unstructured, typ string) string {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, r := range raw {
		if m, _ := r.(map[string]any); m["type"] == typ {
			reason, _ := m["reason"].(string)
			return reason
		}
	}
	return ""
}
