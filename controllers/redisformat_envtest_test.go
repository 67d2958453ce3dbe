package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// mirroredValkey is what an air-gapped team's --redis-image names: its mirror's copy of Valkey 8.1, which
// reads RDB format 11 and older.
const mirroredValkey = "mirror.example/valkey/valkey:8.1.10-alpine"

// withRedisImageFlag is the operator run with --redis-image=image: a reconciler of its own on the
// suite's clients, whose apply the test calls (the suite's manager, without the flag, reconciles the
// same FormsService meanwhile, and writes its status).
func withRedisImageFlag(image string) *FormsServiceReconciler {
	return &FormsServiceReconciler{
		Client: reconciler.Client, APIReader: reconciler.APIReader, Scheme: reconciler.Scheme,
		ServiceImage: testImage, RedisImage: image, SecretRecheck: reconciler.SecretRecheck,
		Kinds: reconciler.Kinds, Now: clock.Now,
	}
}

// createRedisClaim makes the managed Redis's claim as the StatefulSet controller would have, with the
// given annotations.
func createRedisClaim(t *testing.T, ns string, annotations map[string]string) *corev1.PersistentVolumeClaim {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	eventually(t, func() error { return k8s.Get(context.Background(), key(ns, "acme-redis"), sts) })
	tmpl := sts.Spec.VolumeClaimTemplates[0]
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-acme-redis-0", Labels: tmpl.Labels, Annotations: annotations}, Spec: tmpl.Spec}
	if err := k8s.Create(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
	return pvc
}

// redisImageNow is the managed Redis StatefulSet's image ("" when there is none).
func redisImageNow(t *testing.T, ns string) string {
	t.Helper()
	s := &appsv1.StatefulSet{}
	err := k8s.Get(context.Background(), key(ns, "acme-redis"), s)
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return s.Spec.Template.Spec.Containers[0].Image
}

// applyWithFlag runs one apply of the operator with --redis-image=mirroredValkey and returns its problems'
// reasons.
func applyWithFlag(t *testing.T, fs *v1alpha1.FormsService) []problem {
	t.Helper()
	run := withRedisImageFlag(mirroredValkey).apply(context.Background(), getFS(t, fs))
	if len(run.errs) > 0 {
		t.Fatalf("apply with --redis-image: %v", run.errs)
	}
	return run.Problems
}

func hasProblem(ps []problem, reason string) bool { return hasReason(ps, reason) }

// A store that Redis 7.4 wrote (RDB format 12, as the operator before D32 left it) is recorded on its
// claim. Then neither an operator-wide --redis-image that names Valkey (which reads 11 at most) switches
// it, nor does the StatefulSet's deletion: the operator creates it again on the image that reads it.
func TestRedisFormat_TheLegacyStoreIsRecordedOnItsClaimAndKeepsItsImage(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	// The StatefulSet as the operator before D32 left it, and its claim, which records nothing yet.
	updateObject(t, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}}, func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = render.LegacyRedisImage
	})
	pvc := createRedisClaim(t, ns, nil)
	tickFS(t, fs)
	eventuallyWhat(t, "the claim records RDB format 12", func() error {
		if err := k8s.Get(ctx, key(ns, pvc.Name), pvc); err != nil {
			return err
		}
		if a := pvc.Annotations; a[render.RedisFormatAnnotation] != "12" || a[render.RedisFormatWriterAnnotation] != render.LegacyRedisImage {
			return fmt.Errorf("claim annotations %v", a)
		}
		return nil
	})

	// --redis-image names Valkey: refused, the StatefulSet keeps Redis 7.4.
	if ps := applyWithFlag(t, fs); !hasProblem(ps, "IncompatibleRedisImage") {
		t.Errorf("--redis-image=%s on a format-12 store: problems %+v", mirroredValkey, ps)
	}
	if img := redisImageNow(t, ns); img != render.LegacyRedisImage {
		t.Fatalf("the store was switched to %s", img)
	}

	// The StatefulSet deleted (a person, a volume expansion): the claim still says what the store needs.
	if err := k8s.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}}); err != nil {
		t.Fatal(err)
	}
	eventuallyWhat(t, "the StatefulSet created again on Redis 7.4", func() error {
		if img := redisImageNow(t, ns); img != render.LegacyRedisImage {
			return fmt.Errorf("image %q", img)
		}
		return nil
	})
	if ps := applyWithFlag(t, fs); !hasProblem(ps, "IncompatibleRedisImage") {
		t.Errorf("--redis-image after the StatefulSet's deletion: problems %+v", ps)
	}
	if img := redisImageNow(t, ns); img != render.LegacyRedisImage {
		t.Fatalf("the store was switched to %s", img)
	}
}

// A claim that records a format newer than any image named can read (here Valkey 9's RDB 80): the
// resource is Stalled with IncompatibleRedisImage, the StatefulSet keeps its image, with the operator's
// default image, with --redis-image, and with spec.redis.managed.image; deleted, it is not created
// again. An image that reads the format is applied.
func TestRedisFormat_ANewerFormatStallsEveryImageThatCannotReadIt(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	before := redisImageNow(t, ns)
	createRedisClaim(t, ns, map[string]string{render.RedisFormatAnnotation: "80", render.RedisFormatWriterAnnotation: "valkey/valkey:9.0.0"})
	tickFS(t, fs)
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "IncompatibleRedisImage", "RDB format 80", "data-acme-redis-0", render.DefaultRedisImage)
	if ps := applyWithFlag(t, fs); !hasProblem(ps, "IncompatibleRedisImage") {
		t.Errorf("--redis-image=%s on a format-80 store: problems %+v", mirroredValkey, ps)
	}
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{Image: "redis:7.4.2-alpine"}
	})
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "IncompatibleRedisImage", "redis:7.4.2-alpine")
	if img := redisImageNow(t, ns); img != before {
		t.Fatalf("the StatefulSet's image changed from %s to %s", before, img)
	}

	// Gone: not created again on an image that cannot read the store.
	if err := k8s.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}}); err != nil {
		t.Fatal(err)
	}
	tickFS(t, fs)
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "IncompatibleRedisImage", "redis:7.4.2-alpine")
	if img := redisImageNow(t, ns); img != "" {
		t.Fatalf("the StatefulSet was created again with %s", img)
	}
	if ps := applyWithFlag(t, fs); !hasProblem(ps, "IncompatibleRedisImage") || redisImageNow(t, ns) != "" {
		t.Errorf("--redis-image with the StatefulSet gone: problems %+v, image %q", ps, redisImageNow(t, ns))
	}

	// An image that reads it: applied, and nothing stalls on the store.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Redis.Managed.Image = "valkey/valkey:9.0.0" })
	eventuallyWhat(t, "the StatefulSet on valkey 9", func() error {
		if img := redisImageNow(t, ns); img != "valkey/valkey:9.0.0" {
			return fmt.Errorf("image %q", img)
		}
		return nil
	})
	waitNotStalled(t, fs)
}

// A reconcile that read the StatefulSet before its image changed (the cache lags a write) must not
// record the old image's format on the claim: the record is for good. It reads the image again from
// the API server first, and leaves the record to the next reconcile.
func TestRedisFormat_ARecordIsWrittenOnlyForTheImageTheAPIServerShows(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	running := redisImageNow(t, ns)
	if running == render.LegacyRedisImage || running == "" {
		t.Fatalf("the StatefulSet runs %q", running)
	}
	pvc := createRedisClaim(t, ns, nil)
	// What a reconcile with a stale cache would do: it believes the StatefulSet runs Redis 7.4.
	run := reconciler.newRun(ctx, getFS(t, fs))
	if _, _, _, err := run.storeFormat(ctx, render.LegacyRedisImage); err == nil || !strings.Contains(err.Error(), "runs "+running+" now") {
		t.Errorf("a stale image was not caught: %v", err)
	}
	if err := k8s.Get(ctx, key(ns, pvc.Name), pvc); err != nil {
		t.Fatal(err)
	}
	if a := pvc.Annotations; a[render.RedisFormatWriterAnnotation] == render.LegacyRedisImage || a[render.RedisFormatAnnotation] == "12" {
		t.Fatalf("the claim records the image the StatefulSet no longer runs: %v", a)
	}
}
