package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/services/auth/keys"
)

// rotationWatch follows one FormsService's signing-key rotation the way its pods would see it.
type rotationWatch struct {
	t  *testing.T
	fs *v1alpha1.FormsService
	// servedAsNext is when the test, playing the Deployment controller, finished rolling out an auth
	// pod template that lists a key as next: from then on every pod serves it in the JWKS.
	servedAsNext map[string]time.Time
	ticks        int
}

func (w *rotationWatch) secret() *corev1.Secret {
	w.t.Helper()
	var sec corev1.Secret
	if err := k8s.Get(context.Background(), key(w.fs.Namespace, "acme-signing-key"), &sec); err != nil {
		w.t.Fatal(err)
	}
	return &sec
}

// loaded is the key set an auth pod started now would load: the rendered auth configuration's key
// files, read from the Secret as the kubelet would mount it, by the service's own loader.
func (w *rotationWatch) loaded() *keys.Set {
	w.t.Helper()
	a := configOf(w.t, w.fs.Namespace, "acme", render.Auth).Auth
	sec := w.secret()
	dir := w.t.TempDir()
	file := func(path string) string {
		if path == "" {
			return ""
		}
		k := strings.TrimPrefix(path, render.SecretsDir+"/acme-signing-key/")
		local := filepath.Join(dir, k)
		if err := os.WriteFile(local, sec.Data[k], 0o600); err != nil {
			w.t.Fatal(err)
		}
		return local
	}
	set, err := keys.Load(keys.Files{Current: file(a.SigningKeyFile), Previous: file(a.PreviousSigningKeyFile), Next: file(a.NextSigningKeyFile)})
	if err != nil {
		w.t.Fatalf("the auth configuration and the Secret do not load together: %v", err)
	}
	return set
}

// tick makes the operator reconcile the FormsService at the clock's current time and waits until it has.
func (w *rotationWatch) tick() {
	w.t.Helper()
	w.ticks++
	updateFS(w.t, w.fs, func(fs *v1alpha1.FormsService) {
		if fs.Annotations == nil {
			fs.Annotations = map[string]string{}
		}
		fs.Annotations["test.formsservice.io/tick"] = strconv.Itoa(w.ticks)
	})
	waitReconciled(w.t, w.fs)
}

// rollOut plays the Deployment controller: once the auth pod template names the keys want, every
// replica runs it and no older one is left.
func (w *rotationWatch) rollOut(want string) {
	w.t.Helper()
	eventuallyWhat(w.t, "the auth pod template with keys "+want, func() error {
		var d appsv1.Deployment
		if err := k8s.Get(context.Background(), key(w.fs.Namespace, "acme-auth"), &d); err != nil {
			return err
		}
		if got := d.Spec.Template.Annotations[render.SigningKeysAnnotation]; got != want {
			return fmt.Errorf("template keys %q", got)
		}
		return nil
	})
	setDeploymentStatus(w.t, w.fs.Namespace, "acme-auth", 3, 3)
	for _, part := range strings.Split(want, ",") {
		if kid, ok := strings.CutPrefix(part, "next="); ok {
			w.servedAsNext[kid] = clock.Now()
		}
	}
}

// status waits until status.signingKey is in phase and returns it.
func (w *rotationWatch) status(phase string) *v1alpha1.SigningKeyStatus {
	w.t.Helper()
	var st *v1alpha1.SigningKeyStatus
	eventuallyWhat(w.t, "status.signingKey.phase "+phase, func() error {
		var fs v1alpha1.FormsService
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(w.fs), &fs); err != nil {
			return err
		}
		st = fs.Status.SigningKey
		if st == nil || st.Phase != phase {
			return fmt.Errorf("status.signingKey = %+v", st)
		}
		return nil
	})
	return st
}

// signsWith checks that a pod started now signs with kid, and that kid was served as next by every
// pod for at least the JWKS max-age first (unless it is the first key).
func (w *rotationWatch) signsWith(kid string, first bool) {
	w.t.Helper()
	set := w.loaded()
	if set.Current.ID != kid {
		w.t.Fatalf("a pod started now signs with %s, want %s", set.Current.ID, kid)
	}
	if first {
		return
	}
	at, ok := w.servedAsNext[kid]
	if !ok {
		w.t.Fatalf("%s signs but was never served as the next key by every pod", kid)
	}
	if waited := clock.Now().Sub(at); waited < keys.JWKSMaxAge {
		w.t.Fatalf("%s signs %s after every pod served it, less than the JWKS max-age %s", kid, waited, keys.JWKSMaxAge)
	}
}

func eqTime(t *testing.T, what string, got *metav1.Time, want time.Time) {
	t.Helper()
	if got == nil || !got.Time.Equal(want) {
		t.Errorf("%s = %v, want %s", what, got, want.UTC().Format(time.RFC3339))
	}
}

// A rotation driven step by step on the operator's clock: the next key is published and signs nothing
// until every auth pod serves it and the JWKS max-age (plus the pods' drain) has passed; the previous
// key verifies until the longest token lifetime after every pod stopped signing with it; then it is
// retired. Each step is held back for as long as its condition does not hold, however much time passes.
func TestSigningKeyRotation_PublishPromoteRetire(t *testing.T) {
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	w := &rotationWatch{t: t, fs: fs, servedAsNext: map[string]time.Time{}}
	const drain = 30 * time.Second // the auth pods' termination grace period
	lifetime := 720 * time.Hour    // sampleFS's longest token lifetime: the default refresh token's

	st := w.status(v1alpha1.SigningKeyStable)
	a := st.CurrentKeyID
	w.signsWith(a, true)
	if st.CurrentSince == nil || st.NextRotationAt != nil {
		t.Errorf("a stable key without a schedule: %+v", st)
	}

	// 1. Publish, on demand.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Annotations = map[string]string{v1alpha1.RotateSigningKeyAnnotation: "now"}
	})
	st = w.status(v1alpha1.SigningKeyPublishing)
	b := st.NextKeyID
	if b == "" || b == a || st.CurrentKeyID != a {
		t.Fatalf("publishing: %+v", st)
	}
	eqTime(t, "nextPublishedAt", st.NextPublishedAt, clock.Now())
	eventually(t, func() error { return hasEvent(ns, "acme", "SigningKeyPublished", b) })
	set := w.loaded()
	if set.Current.ID != a || set.Next == nil || set.Next.ID != b || set.Verifying(b) == nil || !strings.Contains(string(set.JWKS()), b) {
		t.Fatalf("published: a pod started now signs with %s and does not publish %s", set.Current.ID, b)
	}

	// Until every pod serves it, no time is enough.
	clock.Advance(1000 * time.Hour)
	w.tick()
	w.signsWith(a, true)
	w.status(v1alpha1.SigningKeyPublishing)

	// 2. Every pod serves it: promotion after the drain and the JWKS max-age, not a second earlier.
	w.rollOut("current=" + a + ",next=" + b)
	servedAt := clock.Now()
	st = w.status(v1alpha1.SigningKeyPublished)
	eqTime(t, "nextServedAt", st.NextServedAt, servedAt)
	eqTime(t, "promoteAfter", st.PromoteAfter, servedAt.Add(drain+keys.JWKSMaxAge))
	eventually(t, func() error { return hasEvent(ns, "acme", "SigningKeyServed", b) })
	clock.Advance(drain + keys.JWKSMaxAge - time.Second)
	w.tick()
	w.signsWith(a, true)
	w.status(v1alpha1.SigningKeyPublished)

	clock.Advance(time.Second)
	w.tick()
	st = w.status(v1alpha1.SigningKeyPromoting)
	if st.CurrentKeyID != b || st.PreviousKeyID != a || st.NextKeyID != "" {
		t.Fatalf("promoted: %+v", st)
	}
	eqTime(t, "currentSince", st.CurrentSince, clock.Now())
	promotedAt := clock.Now()
	w.signsWith(b, false)
	if w.loaded().Verifying(a) == nil {
		t.Fatal("after the promotion the old key no longer verifies")
	}
	eventually(t, func() error { return hasEvent(ns, "acme", "SigningKeyPromoted", b) })

	// 3. The previous key's retention counts from when every pod signs with the new one.
	clock.Advance(1000 * time.Hour)
	w.tick()
	if w.status(v1alpha1.SigningKeyPromoting); w.loaded().Verifying(a) == nil {
		t.Fatal("the previous key went before every pod signed with the new one")
	}
	w.rollOut("current=" + b + ",previous=" + a)
	signedAt := clock.Now()
	st = w.status(v1alpha1.SigningKeyRetiring)
	eqTime(t, "previousRetiresAt", st.PreviousRetiresAt, signedAt.Add(drain+lifetime))

	clock.Advance(drain + lifetime - time.Second)
	w.tick()
	w.status(v1alpha1.SigningKeyRetiring)
	if set := w.loaded(); set.Verifying(a) == nil || set.Current.ID != b {
		t.Fatal("the previous key stopped verifying before the longest token lifetime had passed")
	}

	clock.Advance(time.Second)
	w.tick()
	st = w.status(v1alpha1.SigningKeyStable)
	if st.PreviousKeyID != "" || st.CurrentKeyID != b {
		t.Fatalf("retired: %+v", st)
	}
	if set := w.loaded(); set.Verifying(a) != nil || set.Previous != nil {
		t.Fatal("the retired key still verifies")
	}
	eventually(t, func() error { return hasEvent(ns, "acme", "SigningKeyRetired", a) })
	w.rollOut("") // one key: the template names none

	// A schedule: the key has signed for longer than every, so the next rotation starts at once.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Auth.SigningKeyRotation = &v1alpha1.SigningKeyRotation{Every: metav1.Duration{Duration: 24 * time.Hour}}
	})
	st = w.status(v1alpha1.SigningKeyPublishing)
	if st.NextKeyID == "" || st.NextKeyID == b || st.CurrentKeyID != b {
		t.Fatalf("scheduled rotation: %+v", st)
	}
	eventually(t, func() error { return hasEvent(ns, "acme", "SigningKeyPublished", "on schedule") })
	if clock.Now().Sub(promotedAt) < 24*time.Hour {
		t.Fatal("the schedule started a rotation early")
	}
}
