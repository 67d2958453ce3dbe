// Package controllers holds the FormsService reconciler: it turns one FormsService into the configuration,
// Secrets, Deployments, Services, Ingress and Redis of a running platform, and reports how that went in the
// resource's status. The desired objects come from the pure functions of package render.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// FormsServiceReconciler reconciles FormsService objects.
type FormsServiceReconciler struct {
	// Client reads owned objects from the cache and writes to the API server.
	Client client.Client
	// APIReader reads Secrets directly from the API server, by name: the operator neither caches nor
	// lists nor watches Secrets, so its RBAC needs no list or watch on them (see secrets.go).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// ServiceImage runs the services of a FormsService that sets no spec.image.
	ServiceImage string
	// RedisImage runs the managed Redis of a FormsService that sets no spec.redis.managed.image; ""
	// means render.DefaultRedisImage.
	RedisImage string
	// RedisRunAsUser is the managed Redis's user where spec.redis.managed.runAsUser is unset; nil or 0
	// names none.
	RedisRunAsUser *int64
	// ImagePullSecrets are added to every pod the operator renders.
	ImagePullSecrets []string
	// Operator names the operator's own pods, which the highly available Redis's NetworkPolicy admits
	// (its roll asks the nodes and sentinels, redisroll.go).
	Operator render.OperatorPeer
	// SecretRecheck is how often a FormsService is reconciled again to pick up a changed Secret;
	// 0 means DefaultSecretRecheck. A missing Secret is looked for again sooner (missingSecretRecheck).
	SecretRecheck time.Duration
	// Kinds says which optional kinds (HTTPRoute, ServiceMonitor) the cluster serves; nil: discovered
	// by SetupWithManager.
	Kinds *ServedKinds
	// Workers is how many FormsServices are reconciled at once; 0 means DefaultWorkers.
	Workers int
	// Now is the clock of the signing key's rotation; nil means time.Now.
	Now func() time.Time
	// MaxConcurrentUpgrades is how many FormsServices without spec.image may move to a new ServiceImage
	// at once; 0 means no bound (upgrades.go).
	MaxConcurrentUpgrades int
	// Skew is the supported-skew rule between this operator and the services' image (D86); the zero
	// value means render.DefaultSkew().
	Skew render.Skew
	// RedisHADial, when set, dials the highly available Redis's nodes and sentinels instead of the
	// network (a test's processes on loopback behind the pods' names); nil: the cluster's network.
	RedisHADial func(ctx context.Context, network, addr string) (net.Conn, error)
	// RedisHAAddrs, when set and it names three of each, are the highly available Redis's nodes and
	// sentinels (host:port, in ordinal order) instead of the pods' names: a test's processes on loopback.
	RedisHAAddrs func(fs *v1alpha1.FormsService) (nodes, sentinels []string)
	// UpgradeRecheck is how often a FormsService whose upgrade waits asks again for a slot; 0 means
	// DefaultUpgradeRecheck.
	UpgradeRecheck time.Duration

	written writtenStatuses
	// checkedStores spares the claims' reads while a store runs an image already checked (redisformat.go).
	checkedStores checkedStores
	// upgrades serialises the upgrade admissions and remembers this process's (upgrades.go).
	upgrades upgradeSlots
}

// serves asks Kinds whether the cluster serves gvk; wanted says a FormsService needs it (only then is a
// missing kind looked for again).
func (r *FormsServiceReconciler) serves(gvk schema.GroupVersionKind, wanted bool) (bool, error) {
	return r.Kinds.Serves(gvk, wanted)
}

// +kubebuilder:rbac:groups=platform.formsservice.io,resources=formsservices,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=platform.formsservice.io,resources=formsservices/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.formsservice.io,resources=formsservices/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services;serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses;networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile makes the cluster match one FormsService and rebuilds its status from what it finds. Every
// object is applied on its own: one that fails is reported (Degraded, and Stalled or Reconciling) and
// does not keep the unrelated ones from being applied; only what depends on it waits (the Deployments on
// the ConfigMap and the Secrets they mount, the Redis StatefulSet on its password). The status is
// written on every path that has a FormsService to write it to.
func (r *FormsServiceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	fs := &v1alpha1.FormsService{}
	if err := r.Client.Get(ctx, req.NamespacedName, fs); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.forget(req.NamespacedName)
			r.checkedStores.forget(req.NamespacedName)
			r.upgrades.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !fs.DeletionTimestamp.IsZero() {
		r.written.forget(req.NamespacedName)
		r.checkedStores.forget(req.NamespacedName)
		r.upgrades.forget(req.NamespacedName)
		return ctrl.Result{}, nil // owner references let the garbage collector remove the rest
	}

	run := r.apply(ctx, fs)
	workloads, err := r.observeWorkloads(ctx, fs)
	if err != nil {
		run.fail("ObserveFailed", fmt.Errorf("reading the workloads from the cache: %w", err))
	}
	st := buildStatus(fs, workloads, run.observed)
	r.settleUpgrade(fs, run, workloads, st) // upgrades.go
	run.monitoring.setCondition(&st)
	run.data.setDataStatus(fs, &st) // backup.go
	if err := r.updateStatus(ctx, fs, st); err != nil {
		run.errs = append(run.errs, fmt.Errorf("writing the status: %w", err))
	}
	// Returning an error requeues with the controller's bounded exponential backoff. Missing Secrets
	// are not errors: the resource is looked at again after a while (secretRecheck).
	err = errors.Join(run.errs...)
	if err != nil && ctx.Err() != nil {
		return ctrl.Result{}, nil // the manager is stopping; the next leader reconciles again
	}
	res := run.monitoring.result(err)
	if err == nil {
		res.RequeueAfter = minPositive(res.RequeueAfter, r.secretRecheck(run.Problems)) // secrets.go
		if !run.wakeAt.IsZero() {
			// Come back when the rotation's next step is due by the clock: nothing else would (the
			// operator does not watch Secrets).
			res.RequeueAfter = minPositive(res.RequeueAfter, max(run.wakeAt.Sub(r.now()), time.Second))
		}
		res.RequeueAfter = minPositive(res.RequeueAfter, run.requeueAfter) // e.g. the Redis roll (redisroll.go)
		switch {
		case !run.windowOpensAt.IsZero():
			// Held until its maintenance window opens: come back then, not every 15 s.
			res.RequeueAfter = minPositive(res.RequeueAfter, max(run.windowOpensAt.Sub(r.now()), time.Second))
		case run.PendingImage != "" && run.UpgradeHeld == "":
			// A freed slot wakes the first in the queue (upgradewake.go); the others, and a slot freed
			// without a change the wake sees, are caught by asking again (upgrades.go).
			res.RequeueAfter = minPositive(res.RequeueAfter, r.fleet().recheck)
		}
	}
	return res, err
}

// skew is the supported-skew rule in force.
func (r *FormsServiceReconciler) skew() render.Skew {
	if r.Skew.Operator == "" {
		return render.DefaultSkew()
	}
	return r.Skew
}

// apply applies every object of fs, each on its own, and says what happened. Its phases run in an
// order that matters: the secrets phase's digests and key IDs go into the pod templates, the store
// phase's running Redis image into the StatefulSet and the configuration, and the rollout waits for
// what the secrets phase could not read.
func (r *FormsServiceReconciler) apply(ctx context.Context, fs *v1alpha1.FormsService) *reconcileRun {
	run := r.newRun(ctx, fs) // reconcile_run.go
	run.upgrade(ctx)         // upgrades.go: the services' image, the operator's or, while its upgrade waits, the running one
	run.secrets(ctx)         // reconcile_secrets.go: the signing key and its rotation, the Redis password, the spec's Secrets
	run.serviceAccounts(ctx) // reconcile_services.go
	run.store(ctx)           // reconcile_store.go: the managed Redis, single or highly available, or its removal
	run.services(ctx)        // reconcile_services.go: Services, PodDisruptionBudgets, NetworkPolicies
	run.rollout(ctx)         // reconcile_rollout.go: the ConfigMap, backup and restore, the Deployments
	run.autoscalers(ctx)     // reconcile_services.go
	run.edge(ctx)            // reconcile_edge.go: the Ingress, HTTPRoutes, ServiceMonitors
	return run
}

func objectMeta(fs *v1alpha1.FormsService, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: fs.Namespace, Name: name}
}

// observeWorkloads reads the Deployments and the Redis StatefulSet from the cache.
func (r *FormsServiceReconciler) observeWorkloads(ctx context.Context, fs *v1alpha1.FormsService) ([]workloadState, error) {
	var out []workloadState
	for _, c := range render.Components {
		d := &appsv1.Deployment{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: render.WorkloadName(fs, c)}, d)
		switch {
		case apierrors.IsNotFound(err):
			d = nil
		case err != nil:
			return nil, err
		}
		out = append(out, deploymentState(c, d))
	}
	if render.ManagedRedis(fs) {
		s := &appsv1.StatefulSet{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: render.NamesOf(fs).Redis}, s)
		switch {
		case apierrors.IsNotFound(err):
			s = nil
		case err != nil:
			return nil, err
		}
		w := statefulSetState(render.Redis, s)
		if render.RedisHA(fs) {
			// A primary and one replica serve, writes at durability primary included (WAIT 1).
			w.MinAvailable = render.RedisHAMinAvailable
		}
		out = append(out, w)
	}
	return out, nil
}

// updateStatus writes the status only when it changed, and records an Event for each condition that
// changed its status or reason.
func (r *FormsServiceReconciler) updateStatus(ctx context.Context, fs *v1alpha1.FormsService, st v1alpha1.FormsServiceStatus) error {
	if equality.Semantic.DeepEqual(fs.Status, st) || r.written.stale(fs, st) {
		return nil
	}
	for _, c := range st.Conditions {
		old := meta.FindStatusCondition(fs.Status.Conditions, c.Type)
		if old != nil && old.Status == c.Status && old.Reason == c.Reason {
			continue
		}
		bad := (c.Type == v1alpha1.ConditionDegraded && c.Status == metav1.ConditionTrue) ||
			(c.Type == v1alpha1.ConditionStalled && c.Status == metav1.ConditionTrue) ||
			(c.Type == v1alpha1.ConditionReady && c.Status == metav1.ConditionFalse && old != nil) ||
			(c.Type == v1alpha1.ConditionManagedRedisRetained && c.Status == metav1.ConditionTrue)
		if c.Type == v1alpha1.ConditionProgressing || c.Type == v1alpha1.ConditionReconciling ||
			(old == nil && !bad && c.Status == metav1.ConditionFalse) {
			continue // rollouts are reported by the Deployments' own events; a first "not degraded" is no news
		}
		typ := corev1.EventTypeNormal
		if bad {
			typ = corev1.EventTypeWarning
		}
		r.event(fs, typ, c.Reason, "%s=%s: %s", c.Type, c.Status, c.Message)
	}
	orig := fs.DeepCopy()
	fs.Status = st
	if err := r.Client.Status().Patch(ctx, fs, client.MergeFrom(orig)); err != nil {
		return err
	}
	r.written.remember(fs)
	return nil
}

// writtenStatuses remembers the last status the operator wrote to each FormsService, and the
// resourceVersion that write produced. The reconcile reads the FormsService from the cache, which may
// not hold that write yet (the owned objects' events that bring the next reconcile can overtake it):
// writing the same status again would cost a request for nothing, and repeat its Events.
type writtenStatuses struct {
	mu sync.Mutex
	m  map[types.NamespacedName]writtenStatus
}

type writtenStatus struct {
	uid             types.UID
	resourceVersion int64
	status          v1alpha1.FormsServiceStatus
}

// stale reports whether fs, as the cache holds it, predates the operator's last status write and that
// write was st.
func (w *writtenStatuses) stale(fs *v1alpha1.FormsService, st v1alpha1.FormsServiceStatus) bool {
	cached, err := strconv.ParseInt(fs.ResourceVersion, 10, 64)
	if err != nil {
		return false // not an etcd revision: compare nothing, write
	}
	w.mu.Lock()
	last, ok := w.m[client.ObjectKeyFromObject(fs)]
	w.mu.Unlock()
	return ok && last.uid == fs.UID && cached < last.resourceVersion && equality.Semantic.DeepEqual(last.status, st)
}

// remember records fs's status as written, at the resourceVersion the write returned.
func (w *writtenStatuses) remember(fs *v1alpha1.FormsService) {
	rv, err := strconv.ParseInt(fs.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.NamespacedName]writtenStatus{}
	}
	w.m[client.ObjectKeyFromObject(fs)] = writtenStatus{uid: fs.UID, resourceVersion: rv, status: *fs.Status.DeepCopy()}
}

// forget drops what was remembered of a FormsService that is gone.
func (w *writtenStatuses) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// event records a Kubernetes Event on the FormsService.
func (r *FormsServiceReconciler) event(fs *v1alpha1.FormsService, eventType, reason, format string, args ...any) {
	r.eventAbout(fs, nil, eventType, reason, format, args...)
}

// eventAbout records an Event on the FormsService about one of its objects. Naming the object as the
// related object keeps the events of different objects from being folded into one series.
func (r *FormsServiceReconciler) eventAbout(fs *v1alpha1.FormsService, related runtime.Object, eventType, reason, format string, args ...any) {
	if r.Recorder == nil {
		return
	}
	note := fmt.Sprintf(format, args...)
	if len(note) > 1000 {
		note = note[:1000] + "…"
	}
	r.Recorder.Eventf(fs, related, eventType, reason, "Reconcile", "%s", note)
}

// RateLimiter requeues a failing FormsService after 1s, doubling up to 5 minutes, with an overall bucket
// of 10 per second so that many failing resources cannot flood the API server.
func RateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 5*time.Minute),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// ClientOptions make every Secret read a GET by name at the API server, never a list and watch behind a
// cache of all Secrets; and read the optional kinds, which the operator handles as unstructured objects,
// from the cache like the others (controller-runtime's client sends unstructured reads to the API server
// unless told otherwise: two GETs of HTTPRoutes per reconcile). They are only read when the cluster
// serves them, and then the cache holds them with the operator's label only (CacheOptions).
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}, Unstructured: true}}
}
