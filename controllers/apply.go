package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// FieldOwner is the server-side apply field manager of every object the operator writes.
const FieldOwner = "formsservice-operator"

// AppliedHashAnnotation records a digest of what the operator last applied to an object. A different
// digest means the desired object changed (including a field that was removed, which a comparison with
// the live object cannot see); together with the live comparison it lets a no-op reconcile write nothing.
const AppliedHashAnnotation = "platform.formsservice.io/applied-hash"

// applyResult says what apply did.
type applyResult string

const (
	unchanged applyResult = ""
	created   applyResult = "Created"
	updated   applyResult = "Updated"
)

// applier writes desired objects with server-side apply, and only when they differ from the live ones.
type applier struct {
	client client.Client
	scheme *runtime.Scheme
}

// apply makes desired (a typed object with TypeMeta set) exist as built, owned by fs. It reads the live
// object from the cache and sends nothing when the live object already holds every desired field and
// carries the digest of the same desired object.
func (a applier) apply(ctx context.Context, fs *v1alpha1.FormsService, desired client.Object) (applyResult, error) {
	if err := controllerutil.SetControllerReference(fs, desired, a.scheme); err != nil {
		return unchanged, err
	}
	want, err := toApplyMap(desired)
	if err != nil {
		return unchanged, err
	}
	digest := digestOf(want)
	setAnnotation(want, AppliedHashAnnotation, digest)

	live, ok := desired.DeepCopyObject().(client.Object)
	if !ok {
		return unchanged, fmt.Errorf("%T is not a client.Object", desired)
	}
	result := updated
	switch err := a.client.Get(ctx, client.ObjectKeyFromObject(desired), live); {
	case apierrors.IsNotFound(err):
		result = created
	case err != nil:
		return unchanged, err
	default:
		liveMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
		if err != nil {
			return unchanged, err
		}
		if live.GetAnnotations()[AppliedHashAnnotation] == digest && holds(liveMap, want) {
			return unchanged, nil
		}
	}
	u := &unstructured.Unstructured{Object: want}
	if err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return unchanged, err
	}
	return result, nil
}

// toApplyMap turns a typed object into the map sent by server-side apply: without status, without null
// values, and without the empty objects that Go's zero values produce (so the operator does not claim
// fields it never set). emptyDir {} is kept: there an empty object is the value.
func toApplyMap(obj client.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	prune(m)
	return m, nil
}

func prune(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(t)
			if len(t) == 0 && k != "emptyDir" {
				delete(m, k)
			}
		case []any:
			for _, e := range t {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}

// holds reports whether live contains every field of want with the same value. Lists must have the same
// length and hold element by element; owner references are compared as a set. Fields the API server
// defaults (and want does not mention) are ignored.
func holds(live, want map[string]any) bool {
	for k, w := range want {
		l, ok := live[k]
		if !ok {
			return false
		}
		if k == "ownerReferences" {
			if !holdsAll(l, w) {
				return false
			}
			continue
		}
		if !holdsValue(l, w) {
			return false
		}
	}
	return true
}

func holdsValue(l, w any) bool {
	switch wt := w.(type) {
	case map[string]any:
		lt, ok := l.(map[string]any)
		return ok && holds(lt, wt)
	case []any:
		lt, ok := l.([]any)
		if !ok || len(lt) != len(wt) {
			return false
		}
		for i := range wt {
			if !holdsValue(lt[i], wt[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(l, w)
	}
}

// holdsAll reports whether every element of w is held by some element of l.
func holdsAll(l, w any) bool {
	lt, ok1 := l.([]any)
	wt, ok2 := w.([]any)
	if !ok1 || !ok2 {
		return false
	}
	for _, we := range wt {
		found := false
		for _, le := range lt {
			if holdsValue(le, we) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func digestOf(m map[string]any) string {
	b, _ := json.Marshal(m) // maps of JSON values always marshal; keys are sorted
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

func setAnnotation(m map[string]any, key, value string) {
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		m["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann[key] = value
}

// deleteIfOwned deletes obj (read from the cache) when it exists and fs controls it; objects someone
// else created under the same name are left alone.
func (a applier) deleteIfOwned(ctx context.Context, fs *v1alpha1.FormsService, obj client.Object) (bool, error) {
	if err := a.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.UID != fs.UID {
		return false, nil
	}
	if err := a.client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return true, nil
}
