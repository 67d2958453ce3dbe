package controllers

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// The managed store's data format, recorded on its claims (docs/decisions D53, render/redisformat.go):
// the guard against an image that cannot read the store's files holds whatever the flags and the spec
// say, and also while the StatefulSet is gone (a volume expansion replaces it; a person may delete it),
// since the claims outlive it.

// redisClaimNames are the managed Redis's claims: data-<statefulset>-<ordinal>.
func redisClaimNames(fs *v1alpha1.FormsService) []string {
	n := 1
	if render.RedisHA(fs) {
		n = render.RedisHAReplicas
	}
	names := make([]string, n)
	for i := range names {
		names[i] = RedisClaimTemplate + "-" + render.NamesOf(fs).Redis + "-" + strconv.Itoa(i)
	}
	return names
}

// claimFormat is the RDB version a claim records (0: none).
func claimFormat(pvc *corev1.PersistentVolumeClaim) int {
	v, err := strconv.Atoi(pvc.Annotations[render.RedisFormatAnnotation])
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// checkedStores remembers, per FormsService, the running image whose format every claim of its store was
// last found to record, and that format: while the StatefulSet runs that image and nothing asks for
// another, a reconcile reads no claim (the periodic recheck of a thousand resources costs no GET per
// claim). Any other image, a missing StatefulSet, or a restarted operator reads them again.
type checkedStores struct {
	mu sync.Mutex
	m  map[types.NamespacedName]checkedStore
}

type checkedStore struct {
	uid    types.UID
	image  string
	format int
}

func (c *checkedStores) get(fs *v1alpha1.FormsService, running string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[client.ObjectKeyFromObject(fs)]
	return s.format, ok && s.uid == fs.UID && s.image == running
}

func (c *checkedStores) set(fs *v1alpha1.FormsService, running string, format int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.NamespacedName]checkedStore{}
	}
	c.m[client.ObjectKeyFromObject(fs)] = checkedStore{uid: fs.UID, image: running, format: format}
}

func (c *checkedStores) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// guardRedisImage sets the store's recorded format in the renderers' inputs and says whether the
// StatefulSet may be applied with the image they choose (a problem when not).
func (run *reconcileRun) guardRedisImage(ctx context.Context, running string) bool {
	fs := run.fs
	if format, ok := run.r.checkedStores.get(fs, running); ok && running != "" {
		run.in.StoreRDBFormat = format
		if render.RedisImage(fs, run.in) == running {
			return true // the image it runs, which read the store when the claims were last read
		}
	}
	format, claim, all, err := run.storeFormat(ctx, running)
	if err != nil {
		run.fail("ReadFailed", err)
		return false
	}
	run.in.StoreRDBFormat = format
	if p := incompatibleImage(fs, render.RedisImage(fs, run.in), format, claim); p != nil {
		run.Problems = append(run.Problems, *p)
		return false
	}
	if all && running != "" {
		run.r.checkedStores.set(fs, running, format)
	}
	return true
}

// storeFormat reads the store's claims, records on each the format of the image the StatefulSet runs
// when that is higher than what it records (the claims exist only once the StatefulSet has run), and
// returns the highest format recorded, with the claim that records it; all says every claim exists.
func (run *reconcileRun) storeFormat(ctx context.Context, running string) (format int, claim string, all bool, err error) {
	written, known := render.ImageRDBFormat(running)
	all, confirmed := true, false
	// confirm checks running against the API server before a record is written: the record is for good,
	// and the cache may lag an image change just made (a reconcile that read the StatefulSet a moment
	// earlier would record the old image's format on a claim the new image writes).
	confirm := func() error {
		if confirmed {
			return nil
		}
		s := &appsv1.StatefulSet{}
		if err := run.r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.fs.Namespace, Name: render.NamesOf(run.fs).Redis}, s); err != nil {
			return fmt.Errorf("StatefulSet %s: %w", render.NamesOf(run.fs).Redis, err)
		}
		for _, c := range s.Spec.Template.Spec.Containers {
			if c.Name == "redis" && c.Image != running {
				return fmt.Errorf("the StatefulSet %s runs %s now, not %s as this reconcile read it: the format is recorded when the operator reads it again", s.Name, c.Image, running)
			}
		}
		confirmed = true
		return nil
	}
	for _, name := range redisClaimNames(run.fs) {
		pvc := &corev1.PersistentVolumeClaim{}
		err := run.r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.fs.Namespace, Name: name}, pvc)
		if apierrors.IsNotFound(err) {
			all = false
			continue
		}
		if err != nil {
			return 0, "", false, fmt.Errorf("PersistentVolumeClaim %s: %w", name, err)
		}
		if known && running != "" && claimFormat(pvc) < written.Writes {
			if err := confirm(); err != nil {
				return 0, "", false, err
			}
			orig := pvc.DeepCopy()
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			pvc.Annotations[render.RedisFormatAnnotation] = strconv.Itoa(written.Writes)
			pvc.Annotations[render.RedisFormatWriterAnnotation] = running
			if err := run.r.Client.Patch(ctx, pvc, client.MergeFrom(orig)); err != nil {
				return 0, "", false, fmt.Errorf("recording the data format on PersistentVolumeClaim %s: %w", name, err)
			}
			run.log.Info("recorded the store's data format", "claim", name, "rdbFormat", written.Writes, "image", running)
		}
		if f := claimFormat(pvc); f > format {
			format, claim = f, name
		}
	}
	return format, claim, all, nil
}

// incompatibleImage is the problem of an image that cannot be shown to read the store's format (nil
// when it can, or nothing is recorded).
func incompatibleImage(fs *v1alpha1.FormsService, image string, format int, claim string) *problem {
	if format == 0 {
		return nil
	}
	f, known := render.ImageRDBFormat(image)
	if known && f.Reads(format) {
		return nil
	}
	why := "cannot read it"
	if !known {
		why = "is not one whose format the operator knows (a redis or valkey repository with a major.minor tag, or the default image's digest)"
	}
	return &problem{Reason: "IncompatibleRedisImage", Message: fmt.Sprintf(
		"the managed Redis's data is in RDB format %d (PersistentVolumeClaim %s, annotation %s) and the image %s %s: "+
			"the StatefulSet keeps its image; name an image that reads format %d in spec.redis.managed.image (or --redis-image), "+
			"or move the data to a new volume with a tool that rewrites it key by key",
		format, claim, render.RedisFormatAnnotation, image, why, format)}
}
