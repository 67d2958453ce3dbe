package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// The store phase: the managed Redis, a single one or the highly available set (D41), or, for an
// external Redis (spec.redis.addresses), the removal of a managed one left from before.

// store applies the managed Redis's objects, or removes them when the spec names an external Redis.
func (run *reconcileRun) store(ctx context.Context) {
	if render.ManagedRedis(run.fs) {
		run.managedRedis(ctx)
	} else {
		run.removeManagedRedis(ctx)
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
	run.apply(ctx, render.RedisNetworkPolicy(fs))
	// Without the password's digest the pod template would change and roll Redis for nothing.
	// Nor without the running image and the data format: a store must not be switched to an image that
	// cannot read it.
	if run.redisPasswordKnown && imageOK && run.r.resizeRedisVolume(ctx, fs, run.in, run) && // volume.go
		run.r.replaceRedisForPodManagement(ctx, fs, run.in, run) {
		run.apply(ctx, render.RedisStatefulSet(fs, run.in))
	}
	if render.RedisHA(fs) { // the highly available Redis's own objects (D41)
		for _, svc := range render.RedisHANodeServices(fs) {
			run.apply(ctx, svc)
		}
		run.apply(ctx, render.RedisHAPodDisruptionBudget(fs))
	}
}

// removeManagedRedis stops the managed Redis of a FormsService switched to an external one. Its volume
// claim stays (the StatefulSet's retention policy): the data is not deleted with a spec change.
func (run *reconcileRun) removeManagedRedis(ctx context.Context) {
	fs, names := run.fs, render.NamesOf(run.fs)
	run.remove(ctx, &appsv1.StatefulSet{ObjectMeta: objectMeta(fs, names.Redis)}, "StatefulSet")
	run.remove(ctx, &networkingv1.NetworkPolicy{ObjectMeta: objectMeta(fs, names.Redis)}, "NetworkPolicy")
	run.remove(ctx, &corev1.Service{ObjectMeta: objectMeta(fs, names.Redis)}, "Service")
	run.remove(ctx, &corev1.ConfigMap{ObjectMeta: objectMeta(fs, names.RedisConfigMap)}, "ConfigMap")
	run.remove(ctx, &corev1.ServiceAccount{ObjectMeta: objectMeta(fs, render.ServiceAccountName(fs, render.Redis))}, "ServiceAccount")
	run.remove(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: objectMeta(fs, names.Redis)}, "PodDisruptionBudget")
	for i := range render.RedisHAReplicas {
		run.remove(ctx, &corev1.Service{ObjectMeta: objectMeta(fs, render.RedisHANodeName(fs, i))}, "Service")
	}
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
