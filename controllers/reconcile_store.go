package controllers

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// The store phase: the managed Redis, a single one or the highly available set (D41), or, for an
// external Redis (spec.redis.addresses), the managed one left from before: kept until a person
// acknowledges its removal (D72).

// store applies the managed Redis's objects, or, when the spec names an external Redis, keeps or
// removes the managed one of before.
func (run *reconcileRun) store(ctx context.Context) {
	if render.ManagedRedis(run.fs) {
		run.managedRedis(ctx)
	} else {
		run.formerManagedRedis(ctx)
	}
}

// managedRedis applies the managed Redis, and notes its running image and its data format in the
// renderers' inputs.
func (run *reconcileRun) managedRedis(ctx context.Context) {
	fs := run.fs
	running, err := run.r.runningRedisImage(ctx, fs)
	if err != nil {
		run.fail("ReadFailed", fmt.Errorf("StatefulSet %s: %w", render.NamesOf(fs).Redis, err))
	}
	run.in.RunningRedisImage = running
	// The data format recorded on the claims (redisformat.go): an image that cannot read it is never
	// applied, whatever names it; the StatefulSet keeps the image it has.
	imageOK := err == nil && run.guardRedisImage(ctx, running)
	run.apply(ctx, render.ServiceAccount(fs, render.Redis))
	run.apply(ctx, render.RedisConfigMap(fs))
	run.apply(ctx, render.RedisService(fs))
	run.apply(ctx, render.RedisNetworkPolicy(fs, run.in))
	// Without the password's digest the pod template would change and roll Redis for nothing.
	// Nor without the running image and the data format: a store must not be switched to an image that
	// cannot read it.
	if run.redisPasswordKnown && imageOK && run.r.resizeRedisVolume(ctx, fs, run.in, run) && // volume.go
		run.r.replaceRedisForPodManagement(ctx, fs, run.in, run) && run.toOnDelete(ctx) { // redisroll.go
		run.apply(ctx, render.RedisStatefulSet(fs, run.in))
	}
	if render.RedisHA(fs) { // the highly available Redis's own objects (D41)
		for _, svc := range render.RedisHANodeServices(fs) {
			run.apply(ctx, svc)
		}
		run.apply(ctx, render.RedisHAPodDisruptionBudget(fs))
		run.rollRedisHA(ctx) // redisroll.go: the pods on an old revision, in the operator's order (D85)
	}
}

// formerManagedRedis looks after the managed Redis of a FormsService whose spec now names an external
// one. While its StatefulSet exists it keeps running as it is — nothing is applied to it, nothing
// removed — and is reported (ManagedRedisRetained), until the FormsService's
// RemoveManagedRedisAnnotation names that StatefulSet's UID: an addresses edit made by mistake, or
// before the data was moved, must not stop the store that holds it. Removing the addresses again
// finds it as it was. What is left of a managed Redis whose StatefulSet is gone serves nothing and is
// removed.
func (run *reconcileRun) formerManagedRedis(ctx context.Context) {
	fs := run.fs
	name := render.NamesOf(fs).Redis
	sts := &appsv1.StatefulSet{}
	err := run.r.Client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: name}, sts)
	switch {
	case apierrors.IsNotFound(err):
		run.removeManagedRedisLeftovers(ctx)
	case err != nil:
		run.fail("ReadFailed", fmt.Errorf("StatefulSet %s: %w", name, err))
		// Not knowing is no news: the condition stays as the last reconcile left it.
		if c := meta.FindStatusCondition(fs.Status.Conditions, v1alpha1.ConditionManagedRedisRetained); c != nil {
			run.RetainedRedis = c.Message
		}
	case !controlledBy(sts, fs):
		// Not this FormsService's store (NotOwned while it was managed): left as it is, and so is
		// whatever else is not this FormsService's.
		run.removeManagedRedis(ctx)
	case !sts.DeletionTimestamp.IsZero():
		// Going already (removed as acknowledged, or by a person): nothing to keep; what is left of it
		// goes once it is gone.
	case fs.Annotations[v1alpha1.RemoveManagedRedisAnnotation] == string(sts.UID):
		if run.removeManagedRedis(ctx) {
			run.r.eventAbout(fs, sts, corev1.EventTypeNormal, "ManagedRedisRemoved",
				"Removed the managed Redis (StatefulSet %s, UID %s) as acknowledged by %s; its claims (%s) are kept",
				name, sts.UID, v1alpha1.RemoveManagedRedisAnnotation, redisClaims(sts))
		}
	default:
		run.RetainedRedis = retainedRedisMessage(fs, sts)
	}
}

// retainedRedisMessage says what ManagedRedisRetained reports, and the two ways out.
func retainedRedisMessage(fs *v1alpha1.FormsService, sts *appsv1.StatefulSet) string {
	msg := ""
	if ack, ok := fs.Annotations[v1alpha1.RemoveManagedRedisAnnotation]; ok {
		msg = fmt.Sprintf("The annotation %s=%q names another StatefulSet: nothing was removed. ",
			v1alpha1.RemoveManagedRedisAnnotation, ack)
	}
	return msg + fmt.Sprintf("spec.redis.addresses names another Redis, which the services use; the managed Redis "+
		"of before (StatefulSet %s, data on the claims %s) keeps running, unused and unchanged. Remove "+
		"spec.redis.addresses to go back to it, or, once its data is no longer needed there, remove it: "+
		"kubectl annotate fs %s %s=%s (its claims are kept).",
		sts.Name, redisClaims(sts), fs.Name, v1alpha1.RemoveManagedRedisAnnotation, sts.UID)
}

// redisClaims names the managed Redis's volume claims, as the StatefulSet's claim template makes them.
func redisClaims(sts *appsv1.StatefulSet) string {
	var claims []string
	for _, t := range sts.Spec.VolumeClaimTemplates {
		for i := range ptr.Deref(sts.Spec.Replicas, 1) {
			claims = append(claims, fmt.Sprintf("%s-%s-%d", t.Name, sts.Name, i))
		}
	}
	return strings.Join(claims, ", ")
}

// controlledBy says whether fs is obj's controller.
func controlledBy(obj metav1.Object, fs *v1alpha1.FormsService) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == fs.UID
}

// managedRedisObjects are the objects of fs's managed Redis, its StatefulSet first (the store stops
// before its Service goes). Its claims are not among them: they outlive the StatefulSet (its
// retention policy), so a spec change never deletes data.
func managedRedisObjects(fs *v1alpha1.FormsService) []ownedObject {
	names := render.NamesOf(fs)
	objs := []ownedObject{
		{&appsv1.StatefulSet{ObjectMeta: objectMeta(fs, names.Redis)}, "StatefulSet"},
		{&networkingv1.NetworkPolicy{ObjectMeta: objectMeta(fs, names.Redis)}, "NetworkPolicy"},
		{&corev1.Service{ObjectMeta: objectMeta(fs, names.Redis)}, "Service"},
		{&corev1.ConfigMap{ObjectMeta: objectMeta(fs, names.RedisConfigMap)}, "ConfigMap"},
		{&corev1.ServiceAccount{ObjectMeta: objectMeta(fs, render.ServiceAccountName(fs, render.Redis))}, "ServiceAccount"},
		{&policyv1.PodDisruptionBudget{ObjectMeta: objectMeta(fs, names.Redis)}, "PodDisruptionBudget"},
	}
	for i := range render.RedisHAReplicas {
		objs = append(objs, ownedObject{&corev1.Service{ObjectMeta: objectMeta(fs, render.RedisHANodeName(fs, i))}, "Service"})
	}
	return objs
}

// ownedObject is an object to remove, named, and its kind for the Events.
type ownedObject struct {
	obj  client.Object
	kind string
}

// removeManagedRedis deletes the managed Redis's objects (those fs controls), and says whether it
// deleted the StatefulSet.
func (run *reconcileRun) removeManagedRedis(ctx context.Context) bool {
	stopped := false
	for i, o := range managedRedisObjects(run.fs) {
		if deleted := run.remove(ctx, o.obj, o.kind); i == 0 {
			stopped = deleted
		}
	}
	return stopped
}

// removeManagedRedisLeftovers removes what is left of a managed Redis whose StatefulSet is gone: the
// acknowledged removal cut short by a failed request, or a StatefulSet deleted by a person. The cache
// may not hold yet a StatefulSet created a moment ago, so the API server is asked before anything of
// a store that may run is deleted; a FormsService that never had a managed Redis costs no request.
func (run *reconcileRun) removeManagedRedisLeftovers(ctx context.Context) {
	fs := run.fs
	left := false
	for _, o := range managedRedisObjects(fs)[1:] {
		obj := o.obj.DeepCopyObject().(client.Object)
		if err := run.r.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err == nil && controlledBy(obj, fs) {
			left = true
			break
		}
	}
	if !left {
		return
	}
	name := render.NamesOf(fs).Redis
	err := run.r.APIReader.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: name}, &appsv1.StatefulSet{})
	switch {
	case apierrors.IsNotFound(err):
		run.removeManagedRedis(ctx)
	case err != nil:
		run.fail("ReadFailed", fmt.Errorf("StatefulSet %s: %w", name, err))
	}
	// Found: the cache has not caught up; its watch event brings the reconcile that keeps it.
}

// replaceRedisForPodManagement says whether the managed Redis's StatefulSet may be applied now. A
// StatefulSet's podManagementPolicy cannot change, and the highly available set needs Parallel
// (render.RedisHAPodManagement): a set created OrderedReady (before this operator version, or as the
// single Redis that high availability was then turned on for) is deleted with orphan propagation, which
// leaves its pods running and its claims in place, and the next reconcile creates it again, adopting the
// pods (the same template: none restarts). As for a volume expansion (volume.go), a store kept on the
// legacy Redis only by its StatefulSet is not replaced until its image is pinned.
func (r *FormsServiceReconciler) replaceRedisForPodManagement(ctx context.Context, fs *v1alpha1.FormsService, in render.Inputs, run *reconcileRun) bool {
	if !render.RedisHA(fs) {
		return true
	}
	sts, ok := r.liveRedisStatefulSet(ctx, fs, run) // volume.go
	if sts == nil || sts.Spec.PodManagementPolicy == render.RedisHAPodManagement {
		return ok
	}
	if m := fs.Spec.Redis.Managed; (m == nil || m.Image == "") && render.RedisImage(fs, in) == render.LegacyRedisImage && in.StoreRDBFormat == 0 {
		run.Problems = append(run.Problems, problem{Reason: "PodManagementNeedsImage", Message: fmt.Sprintf(
			"the managed Redis runs %s, kept only while its StatefulSet exists, and its StatefulSet must be replaced for high availability: set spec.redis.managed.image to %s",
			render.LegacyRedisImage, render.LegacyRedisImage)})
		return false
	}
	r.replaceRedisStatefulSet(ctx, fs, sts, run, "ReplaceFailed",
		fmt.Sprintf("for pod management %s (was %s)", render.RedisHAPodManagement, sts.Spec.PodManagementPolicy))
	return false
}

// runningRedisImage is the image of the managed Redis's StatefulSet as it is now ("" when there is
// none), from the cache.
func (r *FormsServiceReconciler) runningRedisImage(ctx context.Context, fs *v1alpha1.FormsService) (string, error) {
	s := &appsv1.StatefulSet{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: render.NamesOf(fs).Redis}, s)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, c := range s.Spec.Template.Spec.Containers {
		if c.Name == "redis" {
			return c.Image, nil
		}
	}
	return "", nil
}
