package controllers

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;patch

// RedisClaimTemplate is the name of the managed Redis's volume claim template: its claims are
// data-<statefulset>-<ordinal>.
const RedisClaimTemplate = "data"

// RedisStorageSize is the size the managed Redis's volume should have: spec.redis.managed.storageSize,
// else render.DefaultRedisStorageSize.
func RedisStorageSize(fs *v1alpha1.FormsService) resource.Quantity {
	if m := fs.Spec.Redis.Managed; m != nil && m.StorageSize != nil {
		return *m.StorageSize
	}
	return resource.MustParse(render.DefaultRedisStorageSize)
}

// resizeRedisVolume grows the managed Redis's volume when storageSize grew (the CRD refuses a smaller
// one), and says whether the StatefulSet may be applied now. A StatefulSet's claim templates cannot
// change, so the operator does what `kubectl` users do by hand (docs/architecture.md D40): it asks each
// PersistentVolumeClaim for the new size (the storage class must allow expansion; the CSI driver grows
// the volume, online where it can), then deletes the StatefulSet with orphan propagation, which leaves the
// Redis pod running and its claims in place, and the next reconcile creates the StatefulSet again with
// the new template, adopting the pod. A claim that cannot grow stops it there: the StatefulSet stays as
// it is, and the resource is Stalled with the API server's answer.
func (r *FormsServiceReconciler) resizeRedisVolume(ctx context.Context, fs *v1alpha1.FormsService, in render.Inputs, run *reconcileRun) bool {
	sts, ok := r.liveRedisStatefulSet(ctx, fs, run)
	if sts == nil {
		return ok
	}
	var have *resource.Quantity
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if t.Name == RedisClaimTemplate {
			q := t.Spec.Resources.Requests[corev1.ResourceStorage]
			have = &q
		}
	}
	want := RedisStorageSize(fs)
	if have == nil || want.Cmp(*have) <= 0 {
		return true
	}

	if m := fs.Spec.Redis.Managed; (m == nil || m.Image == "") && render.RedisImage(fs, in) == render.LegacyRedisImage {
		// The StatefulSet is what says the store runs the legacy Redis (render.RedisImage): re-created,
		// it would come back on Valkey, which cannot read the data.
		run.Problems = append(run.Problems, problem{Reason: "VolumeExpansionNeedsImage", Message: fmt.Sprintf(
			"the managed Redis runs %s, kept only while its StatefulSet exists: set spec.redis.managed.image to %s before growing storageSize",
			render.LegacyRedisImage, render.LegacyRedisImage)})
		return false
	}
	log := logf.FromContext(ctx)
	for i := range ptr.Deref(sts.Spec.Replicas, 1) {
		name := RedisClaimTemplate + "-" + sts.Name + "-" + strconv.Itoa(int(i))
		pvc := &corev1.PersistentVolumeClaim{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: name}, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				continue // the StatefulSet creates it, at the new size
			}
			run.fail("VolumeExpansionFailed", fmt.Errorf("PersistentVolumeClaim %s: %w", name, err))
			return false
		}
		cur := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if cur.Cmp(want) >= 0 {
			continue
		}
		orig := pvc.DeepCopy()
		if pvc.Spec.Resources.Requests == nil {
			pvc.Spec.Resources.Requests = corev1.ResourceList{}
		}
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want
		if err := r.Client.Patch(ctx, pvc, client.MergeFrom(orig)); err != nil {
			run.fail("VolumeExpansionFailed", fmt.Errorf("growing PersistentVolumeClaim %s from %s to %s: %w", name, cur.String(), want.String(), err))
			return false
		}
		log.Info("expanding volume", "claim", name, "from", cur.String(), "to", want.String())
		r.eventAbout(fs, pvc, corev1.EventTypeNormal, "VolumeExpanding", "Asked PersistentVolumeClaim %s for %s (was %s)", name, want.String(), cur.String())
	}
	r.replaceRedisStatefulSet(ctx, fs, sts, run, "VolumeExpansionFailed", "for claims of "+want.String())
	return false
}

// liveRedisStatefulSet is the managed Redis's StatefulSet from the cache, for a change that may have to
// replace it. Without one it returns nil: true when there is none (the apply creates it), false when it
// could not be read (the run failed) or is being replaced (its deletion brings the next reconcile, which
// creates it again).
func (r *FormsServiceReconciler) liveRedisStatefulSet(ctx context.Context, fs *v1alpha1.FormsService, run *reconcileRun) (*appsv1.StatefulSet, bool) {
	sts := &appsv1.StatefulSet{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: render.NamesOf(fs).Redis}, sts)
	switch {
	case apierrors.IsNotFound(err):
		return nil, true
	case err != nil:
		run.fail("ReadFailed", fmt.Errorf("StatefulSet %s: %w", render.NamesOf(fs).Redis, err))
		return nil, false
	case !sts.DeletionTimestamp.IsZero():
		return nil, false
	}
	return sts, true
}

// replaceRedisStatefulSet deletes sts with orphan propagation, which leaves its pods running and its
// claims in place; the next reconcile creates it again with what cannot change on a live StatefulSet
// (claim templates, pod management), adopting the pods. why completes the Event ("for …").
func (r *FormsServiceReconciler) replaceRedisStatefulSet(ctx context.Context, fs *v1alpha1.FormsService, sts *appsv1.StatefulSet, run *reconcileRun, failReason, why string) {
	err := r.Client.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationOrphan), client.Preconditions{UID: ptr.To(sts.UID)})
	if err != nil && !apierrors.IsNotFound(err) {
		run.fail(failReason, fmt.Errorf("replacing StatefulSet %s %s: %w", sts.Name, why, err))
		return
	}
	r.eventAbout(fs, sts, corev1.EventTypeNormal, "Replacing", "Replacing StatefulSet %s %s; its pods keep running", sts.Name, why)
}
