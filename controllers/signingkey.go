package controllers

// The signing key's life besides its rotation (rotation.go; docs/decisions D53):
//
//   - It outlives the FormsService. The Secret the operator generates carries no owner reference, so
//     deleting the FormsService (kubectl delete, a GitOps prune, helm uninstall, the CRD's removal)
//     leaves it, and a FormsService created again signs with the same key: signed-in users stay signed
//     in, refresh tokens keep refreshing. spec.auth.signingKeyRetention: Delete opts into the owner
//     reference. A Secret an older operator made with the owner reference loses it on the next
//     reconcile.
//   - It is never replaced behind anyone's back. The FormsService records the key ID it last saw
//     (SigningKeyIDAnnotation; the operator patches its own resource for it, the one write to the
//     FormsService outside its status). A Secret that is gone while the record names a key stalls the
//     resource (SigningKeyVanished) until the Secret is restored or a person acknowledges, by naming
//     the lost key (ReplaceVanishedSigningKeyAnnotation), that a new key may sign everyone out.
//   - Or it is the team's: spec.auth.signingKeySecretRef names a Secret the operator checks and mounts
//     and never generates, rotates, owns or deletes.

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/services/auth/keys"
)

// signingKey is what the reconcile learned about the signing-key Secret.
type signingKey struct {
	Secret *corev1.Secret
	// Created is true when this reconcile created the Secret; Replaced when that was in place of a
	// vanished key, as acknowledged.
	Created, Replaced bool
	// External: the Secret is spec.auth.signingKeySecretRef's; the operator does not rotate it.
	External bool
}

// ensureSigningKey returns the signing-key Secret: the team's (signingKeySecretRef), or the one the
// operator generates once (after that only a rotation rewrites it), with the owner reference its
// retention asks for. A Secret of that name the user made before the FormsService is used as it is.
func (r *FormsServiceReconciler) ensureSigningKey(ctx context.Context, fs *v1alpha1.FormsService) (signingKey, *problem, error) {
	if ref := fs.Spec.Auth.SigningKeySecretRef; ref != nil {
		return r.externalSigningKey(ctx, fs, ref.Name)
	}
	name := render.NamesOf(fs).SigningKey
	owned := fs.Spec.Auth.SigningKeyRetention == v1alpha1.SigningKeyDelete
	sec := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: fs.Namespace, Name: name}, sec)
	if apierrors.IsNotFound(err) {
		if p := vanished(fs, name); p != nil {
			return signingKey{}, p, nil
		}
		key, kid, err := newSigningKey()
		if err != nil {
			return signingKey{}, nil, err
		}
		sec = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: fs.Namespace, Labels: render.Labels(fs, render.Auth),
				Annotations: map[string]string{
					// A rotate-signing-key value set before the Secret existed asks for nothing more.
					render.RotatedForAnnotation:   fs.Annotations[v1alpha1.RotateSigningKeyAnnotation],
					render.KeyIDAnnotation:        kid,
					render.CurrentSinceAnnotation: r.now().UTC().Format(time.RFC3339),
				},
				OwnerReferences: signingKeyOwners(fs, nil, owned),
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{render.SigningKeyKey: key},
		}
		if err := r.Client.Create(ctx, sec); err != nil {
			return signingKey{}, nil, err
		}
		return signingKey{Secret: sec, Created: true, Replaced: fs.Annotations[v1alpha1.SigningKeyIDAnnotation] != ""}, nil, nil
	}
	if err != nil {
		return signingKey{}, nil, err
	}
	if err := r.ownSigningKey(ctx, fs, sec, owned); err != nil {
		return signingKey{}, nil, err
	}
	if len(sec.Data[render.SigningKeyKey]) == 0 {
		return signingKey{Secret: sec}, &problem{Reason: "SigningKeyMissing", Message: fmt.Sprintf(
			"Secret %q has no %s: put the key back (from your copy of the Secret), or delete the Secret to have the operator generate a new one", name, render.SigningKeyKey)}, nil
	}
	return signingKey{Secret: sec}, nil, nil
}

// vanished is the problem of a signing-key Secret that is gone while the FormsService records a key
// (nil when it records none, or a person acknowledged that this key is lost).
func vanished(fs *v1alpha1.FormsService, name string) *problem {
	kid := fs.Annotations[v1alpha1.SigningKeyIDAnnotation]
	if kid == "" || fs.Annotations[v1alpha1.ReplaceVanishedSigningKeyAnnotation] == kid {
		return nil
	}
	return &problem{Reason: "SigningKeyVanished", Message: fmt.Sprintf(
		"the signing-key Secret %q is gone; it held the key %s, which signed every token and refresh token in use, so the operator generates no new one by itself: "+
			"restore the Secret (its data and annotations, from your copy), or, to sign everyone out and start with a new key, "+
			"kubectl annotate formsservice %s %s=%s",
		name, kid, fs.Name, v1alpha1.ReplaceVanishedSigningKeyAnnotation, kid)}
}

// externalSigningKey reads and checks the Secret of spec.auth.signingKeySecretRef.
func (r *FormsServiceReconciler) externalSigningKey(ctx context.Context, fs *v1alpha1.FormsService, name string) (signingKey, *problem, error) {
	sec := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: fs.Namespace, Name: name}, sec)
	if apierrors.IsNotFound(err) {
		return signingKey{External: true}, &problem{Reason: "SigningKeySecretMissing", Message: fmt.Sprintf(
			"Secret %q named by spec.auth.signingKeySecretRef does not exist in namespace %s; the operator generates no key in its place", name, fs.Namespace)}, nil
	}
	if err != nil {
		return signingKey{External: true}, nil, err
	}
	// The team's Secret is never the FormsService's to delete, also when it is one the operator once made.
	if err := r.ownSigningKey(ctx, fs, sec, false); err != nil {
		return signingKey{External: true}, nil, err
	}
	if err := checkSigningKeys(sec); err != nil {
		return signingKey{Secret: sec, External: true}, &problem{Reason: "SigningKeyInvalid", Message: fmt.Sprintf(
			"Secret %q named by spec.auth.signingKeySecretRef: %v", name, err)}, nil
	}
	return signingKey{Secret: sec, External: true}, nil, nil
}

// checkSigningKeys is the auth service's start-up check of the Secret's keys (keys.Load): a current
// EC P-256 key, and a previous and next one where present. Its errors never repeat a key.
func checkSigningKeys(sec *corev1.Secret) error {
	parse := func(k string) (*ecdsa.PrivateKey, error) {
		if len(sec.Data[k]) == 0 {
			return nil, nil
		}
		key, err := keys.ParsePEM(sec.Data[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		return key, nil
	}
	if len(sec.Data[render.SigningKeyKey]) == 0 {
		return fmt.Errorf("no key %s", render.SigningKeyKey)
	}
	var ks [3]*ecdsa.PrivateKey
	for i, k := range []string{render.SigningKeyKey, render.PreviousSigningKeyKey, render.NextSigningKeyKey} {
		key, err := parse(k)
		if err != nil {
			return err
		}
		ks[i] = key
	}
	_, err := keys.NewRotatingSet(ks[0], ks[1], ks[2])
	return err
}

// signingKeyOwners are the owner references the signing-key Secret should have: those it has that do
// not name this FormsService (of any UID: a reference to a deleted FormsService of the same name would
// have the garbage collector delete the key), and, when owned, this FormsService as its controller.
func signingKeyOwners(fs *v1alpha1.FormsService, have []metav1.OwnerReference, owned bool) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, ref := range have {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == v1alpha1.GroupVersion.Group && ref.Kind == "FormsService" && ref.Name == fs.Name {
			continue
		}
		out = append(out, ref)
	}
	if owned {
		out = append(out, *metav1.NewControllerRef(fs, v1alpha1.GroupVersion.WithKind("FormsService")))
	}
	return out
}

// ownSigningKey gives the signing-key Secret the owner references its retention asks for, when it has
// others: an older operator's Secret loses its owner reference here (adopted, kept), and one opted into
// Delete gets it.
func (r *FormsServiceReconciler) ownSigningKey(ctx context.Context, fs *v1alpha1.FormsService, sec *corev1.Secret, owned bool) error {
	want := signingKeyOwners(fs, sec.OwnerReferences, owned)
	if equality.Semantic.DeepEqual(want, sec.OwnerReferences) || (len(want) == 0 && len(sec.OwnerReferences) == 0) {
		return nil
	}
	changed := sec.DeepCopy()
	changed.OwnerReferences = want
	// Update carries the resourceVersion just read: a concurrent rotation step makes this fail and retry.
	if err := r.Client.Update(ctx, changed); err != nil {
		return fmt.Errorf("setting the owner references of Secret %s: %w", sec.Name, err)
	}
	*sec = *changed
	if owned {
		r.eventAbout(fs, sec, corev1.EventTypeNormal, "SigningKeyOwned",
			"Secret %s is deleted with the FormsService (spec.auth.signingKeyRetention Delete)", sec.Name)
	} else {
		r.eventAbout(fs, sec, corev1.EventTypeNormal, "SigningKeyKept",
			"Secret %s no longer has the FormsService as its owner: it is kept when the FormsService is deleted", sec.Name)
	}
	return nil
}

// recordSigningKey writes the current key's ID to the FormsService (SigningKeyIDAnnotation) when it
// differs: the record that the FormsService has a key, which the next reconcile reads if the Secret
// is gone.
func (r *FormsServiceReconciler) recordSigningKey(ctx context.Context, fs *v1alpha1.FormsService, kid string) error {
	if kid == "" || fs.Annotations[v1alpha1.SigningKeyIDAnnotation] == kid {
		return nil
	}
	orig := fs.DeepCopy()
	if fs.Annotations == nil {
		fs.Annotations = map[string]string{}
	}
	fs.Annotations[v1alpha1.SigningKeyIDAnnotation] = kid
	// A merge patch of this one annotation: the spec and the other annotations are the user's.
	return r.Client.Patch(ctx, fs, client.MergeFrom(orig))
}

// externalKeyStatus is status.signingKey for the team's Secret: its key IDs, no rotation.
func externalKeyStatus(sec *corev1.Secret) *v1alpha1.SigningKeyStatus {
	ids := keyIDsOf(sec)
	return &v1alpha1.SigningKeyStatus{Phase: v1alpha1.SigningKeyExternal, CurrentKeyID: ids.Current, PreviousKeyID: ids.Previous, NextKeyID: ids.Next}
}
