package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// applied is the outcome of one apply.
type applied struct {
	Result     applyResult
	APIVersion string
	Kind       string
	Name       string
	// Live is the object as it was before the apply (from the cache, or the API server when the cache
	// did not hold it); nil when it did not exist. Its status says, for example, whether an ingress
	// controller or a Gateway took a route.
	Live client.Object
}

// notOwnedError is an object of the desired kind and name that exists and that this FormsService does
// not control: the operator leaves it alone rather than take it over (and later delete it with the
// FormsService).
type notOwnedError struct {
	Kind, Name string
	// Owner describes the object's controller, or says it has none.
	Owner string
}

func (e *notOwnedError) Error() string {
	return fmt.Sprintf("%s %s already exists and is not this FormsService's (%s): the operator does not take it over; "+
		"delete or rename it, or give the FormsService another name", e.Kind, e.Name, e.Owner)
}

// applier writes desired objects with server-side apply, and only when they differ from the live ones.
type applier struct {
	client client.Client
	// reader reads past the cache: the cache holds only objects with the operator's managed-by label, so
	// an object it lacks may still exist (someone else's, of the same name) and must not be adopted.
	reader client.Reader
	scheme *runtime.Scheme
}

// apply makes the object of ac exist exactly as ac says, through server-side apply (field manager
// FieldOwner, forced: a field someone changed by hand is taken back). ac is a typed apply configuration
// (render's), or an unstructured one (ServiceMonitor); it must carry fs's controller owner reference.
//
// It reads the live object first and sends nothing when the live object holds every field of ac and
// carries the digest of the same ac. It refuses, with a *notOwnedError, an object of the same name
// that fs does not control.
func (a applier) apply(ctx context.Context, fs *v1alpha1.FormsService, ac runtime.ApplyConfiguration) (applied, error) {
	want, err := toMap(ac)
	if err != nil {
		return applied{}, err
	}
	u := &unstructured.Unstructured{Object: want}
	gvk := u.GroupVersionKind()
	out := applied{APIVersion: u.GetAPIVersion(), Kind: gvk.Kind, Name: u.GetName()}
	if ref := metav1.GetControllerOfNoCopy(u); ref == nil || ref.UID != fs.UID {
		return out, fmt.Errorf("%s %s: rendered without this FormsService's controller reference", out.Kind, out.Name)
	}
	digest := digestOf(want)
	if err := setAppliedHash(ac, digest); err != nil {
		return out, err
	}
	setAnnotation(want, AppliedHashAnnotation, digest)

	key := client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}
	live := a.newObject(gvk)
	err = a.client.Get(ctx, key, live)
	if apierrors.IsNotFound(err) && a.reader != nil {
		err = a.reader.Get(ctx, key, live)
	}
	switch {
	case apierrors.IsNotFound(err):
		out.Result = created
	case err != nil:
		return out, err
	default:
		out.Live = live
		if ref := metav1.GetControllerOfNoCopy(live); ref == nil || ref.UID != fs.UID {
			return out, &notOwnedError{Kind: out.Kind, Name: out.Name, Owner: describeOwner(ref)}
		}
		out.Result = updated
		if live.GetAnnotations()[AppliedHashAnnotation] == digest {
			liveMap, err := toMap(live)
			if err != nil {
				return out, err
			}
			// The kind is the one read; a typed object read from the API server may not repeat it.
			liveMap["apiVersion"], liveMap["kind"] = want["apiVersion"], want["kind"]
			if holds(liveMap, want) {
				out.Result = unchanged
				return out, nil
			}
		}
	}
	if err := a.client.Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return out, err
	}
	return out, nil
}

func describeOwner(ref *metav1.OwnerReference) string {
	if ref == nil {
		return "it has no controller"
	}
	return fmt.Sprintf("its controller is %s %s, uid %s", ref.Kind, ref.Name, ref.UID)
}

// newObject is an empty object of gvk to read the live object into: the scheme's type, or unstructured
// for kinds the scheme does not hold (HTTPRoute, ServiceMonitor).
func (a applier) newObject(gvk schema.GroupVersionKind) client.Object {
	if a.scheme != nil {
		if obj, err := a.scheme.New(gvk); err == nil {
			if co, ok := obj.(client.Object); ok {
				return co
			}
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// toMap is the JSON form of an apply configuration or an object as a map: exactly the fields it sets.
func toMap(v any) (map[string]any, error) {
	if u, ok := v.(interface{ UnstructuredContent() map[string]any }); ok {
		v = u.UnstructuredContent()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// setAppliedHash puts the applied-hash annotation into ac's metadata.
func setAppliedHash(ac runtime.ApplyConfiguration, digest string) error {
	if u, ok := ac.(interface{ UnstructuredContent() map[string]any }); ok {
		setAnnotation(u.UnstructuredContent(), AppliedHashAnnotation, digest)
		return nil
	}
	// Every generated apply configuration of an object embeds *ObjectMetaApplyConfiguration.
	v := reflect.ValueOf(ac)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		if f := v.Elem().FieldByName("ObjectMetaApplyConfiguration"); f.IsValid() && !f.IsNil() {
			if m, ok := f.Interface().(*metav1ac.ObjectMetaApplyConfiguration); ok {
				m.WithAnnotations(map[string]string{AppliedHashAnnotation: digest})
				return nil
			}
		}
	}
	return fmt.Errorf("%T carries no object metadata", ac)
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

// permanent reports whether an API error needs a change (of the spec, of an admission policy, of the
// operator's permissions) rather than another try: the API server refused the request itself.
func permanent(err error) bool {
	var notOwned *notOwnedError
	switch {
	case errors.As(err, &notOwned):
		return true
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err), apierrors.IsUnsupportedMediaType(err),
		apierrors.IsRequestEntityTooLargeError(err):
		return true
	}
	return false
}
