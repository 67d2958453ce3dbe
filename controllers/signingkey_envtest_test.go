package controllers

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// waitKeyRecorded waits until the FormsService records the key its signing-key Secret holds (the
// annotation, status.signingKey and the Secret agree) and returns that key ID.
func waitKeyRecorded(t *testing.T, fs *v1alpha1.FormsService, secret string) string {
	t.Helper()
	var kid string
	eventuallyWhat(t, "the signing key recorded on the FormsService", func() error {
		cur := getFS(t, fs)
		var sec corev1.Secret
		if err := k8s.Get(context.Background(), key(fs.Namespace, secret), &sec); err != nil {
			return err
		}
		kid = keyIDsOf(&sec).Current
		if got := cur.Annotations[v1alpha1.SigningKeyIDAnnotation]; kid == "" || got != kid {
			return fmt.Errorf("annotation %s = %q, the Secret's key %q", v1alpha1.SigningKeyIDAnnotation, got, kid)
		}
		if st := cur.Status.SigningKey; st == nil || st.CurrentKeyID != kid {
			return fmt.Errorf("status.signingKey = %+v", st)
		}
		return nil
	})
	return kid
}

// deleteFormsService deletes fs and then plays the garbage collector, which envtest does not run: it
// deletes the Secrets whose owner references name fs (background propagation; the operator's other
// objects are not looked at here).
func deleteFormsService(t *testing.T, fs *v1alpha1.FormsService) {
	t.Helper()
	ctx := context.Background()
	uid := getFS(t, fs).UID
	if err := k8s.Delete(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventuallyWhat(t, "the FormsService gone", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), &v1alpha1.FormsService{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	var list corev1.SecretList
	if err := k8s.List(ctx, &list, client.InNamespace(fs.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		for _, ref := range s.OwnerReferences {
			if ref.UID == uid {
				if err := k8s.Delete(ctx, &s); err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
			}
		}
	}
}

func getSecret(t *testing.T, ns, name string) (*corev1.Secret, error) {
	t.Helper()
	sec := &corev1.Secret{}
	return sec, k8s.Get(context.Background(), key(ns, name), sec)
}

// tickFS makes the operator reconcile fs and waits until a reconcile has read that change and finished.
func tickFS(t *testing.T, fs *v1alpha1.FormsService) {
	t.Helper()
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		if fs.Annotations == nil {
			fs.Annotations = map[string]string{}
		}
		n, _ := strconv.Atoi(fs.Annotations["test.formsservice.io/tick"])
		fs.Annotations["test.formsservice.io/tick"] = strconv.Itoa(n + 1)
	})
	waitReconciled(t, fs)
}

// waitNotStalled waits until Stalled is False (whatever else the workloads, which envtest does not
// run, leave the resource at).
func waitNotStalled(t *testing.T, fs *v1alpha1.FormsService) {
	t.Helper()
	eventuallyWhat(t, "Stalled False", func() error {
		c := meta.FindStatusCondition(getFS(t, fs).Status.Conditions, v1alpha1.ConditionStalled)
		if c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("Stalled = %+v", c)
		}
		return nil
	})
}

// The signing key outlives its FormsService (D53): the Secret has no owner reference, so deleting the
// FormsService leaves it, and the FormsService created again signs with the same key. Opted into
// Delete, the Secret gets the FormsService as its owner and goes with it.
func TestSigningKey_KeptWhenTheFormsServiceIsDeleted_DeletedWithItWhenOptedIn(t *testing.T) {
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	kid := waitKeyRecorded(t, fs, "acme-signing-key")
	sec, err := getSecret(t, ns, "acme-signing-key")
	if err != nil {
		t.Fatal(err)
	}
	if len(sec.OwnerReferences) != 0 {
		t.Fatalf("the signing-key Secret has owner references %+v: the garbage collector would delete it with the FormsService", sec.OwnerReferences)
	}

	deleteFormsService(t, fs)
	kept, err := getSecret(t, ns, "acme-signing-key")
	if err != nil {
		t.Fatalf("the signing key went with the FormsService: %v", err)
	}
	if string(kept.Data[render.SigningKeyKey]) != string(sec.Data[render.SigningKeyKey]) {
		t.Fatal("the kept Secret holds another key")
	}
	if _, err := getSecret(t, ns, "acme-redis-password"); !apierrors.IsNotFound(err) {
		t.Errorf("the managed Redis's password (no data depends on it) should go with the FormsService: %v", err)
	}

	// Created again (the same name): the same key signs, nothing asked of anyone.
	again := createAndWait(t, sampleFS(ns))
	if got := waitKeyRecorded(t, again, "acme-signing-key"); got != kid {
		t.Fatalf("the FormsService created again signs with %s, want the kept %s", got, kid)
	}

	// Opted in: the FormsService becomes the Secret's controlling owner, and the Secret goes with it.
	updateFS(t, again, func(fs *v1alpha1.FormsService) { fs.Spec.Auth.SigningKeyRetention = v1alpha1.SigningKeyDelete })
	uid := getFS(t, again).UID
	eventuallyWhat(t, "the FormsService as the signing key's owner", func() error {
		s, err := getSecret(t, ns, "acme-signing-key")
		if err != nil {
			return err
		}
		if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != uid || ref.Kind != "FormsService" {
			return fmt.Errorf("controller reference %+v", ref)
		}
		return nil
	})
	eventually(t, func() error { return hasEvent(ns, "acme", "SigningKeyOwned", "acme-signing-key") })
	deleteFormsService(t, again)
	if _, err := getSecret(t, ns, "acme-signing-key"); !apierrors.IsNotFound(err) {
		t.Fatalf("signingKeyRetention Delete: the signing key outlived the FormsService: %v", err)
	}
}

// A Secret made by an operator before D53 names the FormsService as its controller, and perhaps a
// deleted FormsService of the same name: the next reconcile removes both (the key is kept from then
// on), and leaves every other owner reference alone.
func TestSigningKey_AnOlderOperatorsOwnerReferenceIsRemoved(t *testing.T) {
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	waitKeyRecorded(t, fs, "acme-signing-key")
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "team-inventory", UID: types.UID("5d1c0a2e-0000-4000-8000-000000000001")}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-signing-key"}}
	updateObject(t, sec, func(s *corev1.Secret) {
		old := *metav1.NewControllerRef(getFS(t, fs), v1alpha1.GroupVersion.WithKind("FormsService"))
		stale := old
		stale.UID, stale.Controller, stale.BlockOwnerDeletion = types.UID("5d1c0a2e-0000-4000-8000-000000000002"), nil, nil
		s.OwnerReferences = []metav1.OwnerReference{old, stale, other}
	})
	tickFS(t, fs)
	eventuallyWhat(t, "the FormsService's owner references removed", func() error {
		s, err := getSecret(t, ns, "acme-signing-key")
		if err != nil {
			return err
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != other.UID {
			return fmt.Errorf("owner references %+v, want only %s's", s.OwnerReferences, other.Name)
		}
		return nil
	})
	eventually(t, func() error { return hasEvent(ns, "acme", "SigningKeyKept", "acme-signing-key") })
}

// A signing-key Secret that vanishes is never silently replaced (D53): the FormsService records its
// key, so it is Stalled with SigningKeyVanished and no new key is generated; a restored Secret is taken
// up as it is, and a new key comes only with the acknowledgement that names the lost one.
func TestSigningKey_AVanishedKeyStallsUntilRestoredOrAcknowledged(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	kid := waitKeyRecorded(t, fs, "acme-signing-key")
	saved, err := getSecret(t, ns, "acme-signing-key")
	if err != nil {
		t.Fatal(err)
	}
	authHash := restartHashes(t, ns)[render.Auth]
	if err := k8s.Delete(ctx, saved); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "SigningKeyVanished",
		kid, "restore the Secret", v1alpha1.ReplaceVanishedSigningKeyAnnotation+"="+kid)
	waitCondition(t, fs, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RolloutBlocked")
	tickFS(t, fs)
	if _, err := getSecret(t, ns, "acme-signing-key"); !apierrors.IsNotFound(err) {
		t.Fatalf("a vanished key was replaced without being asked: %v", err)
	}
	if restartHashes(t, ns)[render.Auth] != authHash {
		t.Error("the auth pods were rolled while their key is gone")
	}

	// Restored from the team's copy: taken up as it is.
	restored := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: saved.Name, Annotations: saved.Annotations, Labels: saved.Labels},
		Type: saved.Type, Data: saved.Data}
	if err := k8s.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	waitNotStalled(t, fs)
	if got := waitKeyRecorded(t, fs, "acme-signing-key"); got != kid {
		t.Fatalf("after the restore the key is %s, want %s", got, kid)
	}

	// Lost again; an acknowledgement that names another key answers nothing.
	if err := k8s.Delete(ctx, restored); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "SigningKeyVanished", kid)
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Annotations[v1alpha1.ReplaceVanishedSigningKeyAnnotation] = "a-key-lost-long-ago"
	})
	waitReconciled(t, getFS(t, fs))
	if _, err := getSecret(t, ns, "acme-signing-key"); !apierrors.IsNotFound(err) {
		t.Fatalf("an acknowledgement of another key replaced this one: %v", err)
	}
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "SigningKeyVanished", kid)

	// Acknowledged: a new key, recorded in place of the lost one.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Annotations[v1alpha1.ReplaceVanishedSigningKeyAnnotation] = kid })
	var fresh string
	eventuallyWhat(t, "a new signing key", func() error {
		s, err := getSecret(t, ns, "acme-signing-key")
		if err != nil {
			return err
		}
		if fresh = keyIDsOf(s).Current; fresh == "" || fresh == kid {
			return fmt.Errorf("key %q", fresh)
		}
		return nil
	})
	if got := waitKeyRecorded(t, fs, "acme-signing-key"); got != fresh {
		t.Fatalf("recorded %s, want the new key %s", got, fresh)
	}
	waitNotStalled(t, fs)
	eventually(t, func() error { return hasEvent(ns, "acme", "SigningKeyCreated", "in place of the vanished key "+kid) })
}

// spec.auth.signingKeySecretRef: the team's Secret (External Secrets, Vault) is mounted and used as it
// is; the operator generates no key, rotates nothing, and reports a Secret that is missing or holds no
// valid key.
func TestSigningKey_FromSigningKeySecretRef_UsedAsItIsNeverRotated(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	pemBytes, kid, err := newSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	team := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault-signing-key"}, Data: map[string][]byte{render.SigningKeyKey: pemBytes}}
	if err := k8s.Create(ctx, team); err != nil {
		t.Fatal(err)
	}
	fs := sampleFS(ns)
	fs.Spec.Auth.SigningKeySecretRef = &v1alpha1.SecretReference{Name: team.Name}
	fs = createAndWait(t, fs)
	if got := waitKeyRecorded(t, fs, team.Name); got != kid {
		t.Fatalf("signs with %s, want the team's %s", got, kid)
	}
	st := getFS(t, fs).Status
	if st.SigningKey.Phase != v1alpha1.SigningKeyExternal || st.SigningKeySecret != team.Name {
		t.Errorf("status: signingKey %+v, signingKeySecret %q", st.SigningKey, st.SigningKeySecret)
	}
	if a := configOf(t, ns, "acme", render.Auth).Auth; a.SigningKeyFile != render.SecretsDir+"/vault-signing-key/signing-key.pem" {
		t.Errorf("auth signingKeyFile = %q", a.SigningKeyFile)
	}
	var auth appsv1.Deployment
	if err := k8s.Get(ctx, key(ns, "acme-auth"), &auth); err != nil {
		t.Fatal(err)
	}
	if !mountsSecret(auth.Spec.Template.Spec, team.Name) || mountsSecret(auth.Spec.Template.Spec, "acme-signing-key") {
		t.Errorf("the auth pods do not mount the team's Secret alone: %+v", auth.Spec.Template.Spec.Volumes)
	}

	// A rotation asked for changes nothing: the team rotates where the key comes from.
	if team, err = getSecret(t, ns, team.Name); err != nil {
		t.Fatal(err)
	}
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Annotations[v1alpha1.RotateSigningKeyAnnotation] = "now" })
	waitReconciled(t, getFS(t, fs))
	tickFS(t, fs)
	if after, err := getSecret(t, ns, team.Name); err != nil || after.ResourceVersion != team.ResourceVersion || len(after.Data) != 1 {
		t.Fatalf("the team's Secret was written: %v %+v", err, after.Data)
	}
	if _, err := getSecret(t, ns, "acme-signing-key"); !apierrors.IsNotFound(err) {
		t.Fatalf("the operator generated a key beside the team's: %v", err)
	}
	if st := getFS(t, fs).Status.SigningKey; st.Phase != v1alpha1.SigningKeyExternal || st.NextKeyID != "" {
		t.Fatalf("status.signingKey %+v", st)
	}

	// Malformed: Stalled, and the message does not repeat the value.
	updateObject(t, team, func(s *corev1.Secret) {
		s.Data[render.SigningKeyKey] = []byte("-----BEGIN NOT A KEY-----\nc2VjcmV0\n-----END NOT A KEY-----\n")
	})
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "SigningKeyInvalid", "vault-signing-key", "signing-key.pem")
	if c := meta.FindStatusCondition(getFS(t, fs).Status.Conditions, v1alpha1.ConditionStalled); strings.Contains(c.Message, "c2VjcmV0") {
		t.Errorf("the message repeats the Secret's value: %s", c.Message)
	}
	// Missing: Stalled, and still no generated key.
	if err := k8s.Delete(ctx, team); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "SigningKeySecretMissing", "vault-signing-key")
	if _, err := getSecret(t, ns, "acme-signing-key"); !apierrors.IsNotFound(err) {
		t.Fatalf("the operator generated a key in place of the team's: %v", err)
	}

	// The rotation is the team's: the CRD refuses a schedule beside the reference.
	err = k8s.Update(ctx, func() *v1alpha1.FormsService {
		cur := getFS(t, fs)
		cur.Spec.Auth.SigningKeyRotation = &v1alpha1.SigningKeyRotation{Every: metav1.Duration{Duration: 2160 * time.Hour}}
		return cur
	}())
	if err == nil || !strings.Contains(err.Error(), "a key from signingKeySecretRef is rotated where it comes from") {
		t.Errorf("a rotation schedule beside signingKeySecretRef: %v", err)
	}
}

// The signing-key Secret the operator makes also holds the key that seals TOTP secrets, named in the
// auth configuration; a Secret of the operator's made before that gets one added once (its signing key
// unchanged); a team's Secret (signingKeySecretRef) is never written.
func TestSigningKey_HoldsTheMFASealingKey(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	waitKeyRecorded(t, fs, "acme-signing-key")
	sec, err := getSecret(t, ns, "acme-signing-key")
	if err != nil {
		t.Fatal(err)
	}
	if k, err := base64.StdEncoding.DecodeString(string(sec.Data[render.MFAKeyKey])); err != nil || len(k) != 32 {
		t.Fatalf("%s = %d bytes (%v), want 32 random bytes in base64", render.MFAKeyKey, len(k), err)
	}
	want := render.SecretsDir + "/acme-signing-key/" + render.MFAKeyKey
	eventuallyWhat(t, "the auth configuration naming the MFA key", func() error {
		if got := configOf(t, ns, "acme", render.Auth).Auth.MFA.SecretKeyFile; got != want {
			return fmt.Errorf("mfa.secretKeyFile = %q, want %q", got, want)
		}
		return nil
	})

	// An older Secret of the operator's, without the key: it gets one, and keeps its signing key.
	old := newNamespace(t)
	pemBytes, _, err := newSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: old, Name: "acme-signing-key"},
		Data: map[string][]byte{render.SigningKeyKey: pemBytes}}); err != nil {
		t.Fatal(err)
	}
	createAndWait(t, sampleFS(old))
	eventuallyWhat(t, "an MFA key added to the older Secret", func() error {
		s, err := getSecret(t, old, "acme-signing-key")
		if err != nil {
			return err
		}
		if string(s.Data[render.SigningKeyKey]) != string(pemBytes) {
			t.Fatal("the signing key was replaced")
		}
		if len(s.Data[render.MFAKeyKey]) == 0 {
			return fmt.Errorf("no %s yet", render.MFAKeyKey)
		}
		return nil
	})

	// A team's Secret is used as it is.
	ext := newNamespace(t)
	team := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ext, Name: "vault-signing-key"}, Data: map[string][]byte{render.SigningKeyKey: pemBytes}}
	if err := k8s.Create(ctx, team); err != nil {
		t.Fatal(err)
	}
	efs := sampleFS(ext)
	efs.Spec.Auth.SigningKeySecretRef = &v1alpha1.SecretReference{Name: team.Name}
	efs = createAndWait(t, efs)
	waitKeyRecorded(t, efs, team.Name)
	if s, err := getSecret(t, ext, team.Name); err != nil || len(s.Data) != 1 {
		t.Fatalf("the team's Secret was written: %v %v", s.Data, err)
	}
	if got := configOf(t, ext, "acme", render.Auth).Auth.MFA.SecretKeyFile; got != "" {
		t.Errorf("mfa.secretKeyFile = %q with a team's Secret that holds no MFA key", got)
	}
}
