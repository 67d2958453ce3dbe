package controllers

// The signing key's rotation without a window (docs/architecture.md D34). A rotation has three steps,
// each taken by a reconcile only once the cluster shows the one before has reached every auth pod:
//
//  1. Publish: a new key goes into the Secret as next-signing-key.pem and into the auth configuration as
//     nextSigningKeyFile. The auth pods roll; they list it in the JWKS and accept it, but sign nothing
//     with it.
//  2. Promote, once the auth Deployment has rolled out the pod template that names the next key (so no
//     pod of an older template is left in its count), a drain allowance (the pods' termination grace
//     period: a pod that has left the count may answer until it is killed) and the JWKS max-age
//     (keys.JWKSMaxAge) have passed: every JWKS a verifier can still hold lists the key. The next key
//     becomes signing-key.pem, the old current one previous-signing-key.pem.
//  3. Retire the previous key once the auth Deployment has rolled out the promotion and the longest token
//     lifetime (plus the drain allowance) has passed since: every token it signed has expired.
//
// The Secret's annotations are the rotation's record, written in the same update as the keys, so that the
// record survives a lost status and a restarted operator, and a reconcile that failed half-way repeats
// nothing. The status mirrors it.

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/services/auth/keys"
)

// keyRecord is what the signing-key Secret says about the rotation.
type keyRecord struct {
	HasPrevious, HasNext bool
	// CurrentSince is when the current key was created or promoted.
	CurrentSince time.Time
	// NextPublishedAt is when the next key was written; NextServedAt when every auth pod served it.
	NextPublishedAt, NextServedAt time.Time
	// PromotionServedAt is when every auth pod signed with the key promoted last.
	PromotionServedAt time.Time
	// RotatedFor is the value of the rotate-signing-key annotation last answered.
	RotatedFor string
}

func recordOf(sec *corev1.Secret) keyRecord {
	a := sec.Annotations
	at := func(name string) time.Time {
		t, err := time.Parse(time.RFC3339, a[name])
		if err != nil {
			return time.Time{}
		}
		return t
	}
	k := keyRecord{
		HasPrevious:       len(sec.Data[render.PreviousSigningKeyKey]) > 0,
		HasNext:           len(sec.Data[render.NextSigningKeyKey]) > 0,
		CurrentSince:      at(render.CurrentSinceAnnotation),
		NextPublishedAt:   at(render.NextPublishedAtAnnotation),
		NextServedAt:      at(render.NextServedAtAnnotation),
		PromotionServedAt: at(render.PromotionServedAtAnnotation),
		RotatedFor:        a[render.RotatedForAnnotation],
	}
	if k.CurrentSince.IsZero() {
		// A Secret of an older operator, or brought by the user: its key is as old as the Secret.
		k.CurrentSince = sec.CreationTimestamp.Time
	}
	return k
}

// rotationFacts are what a rotation step depends on besides the Secret.
type rotationFacts struct {
	Now time.Time
	// Served: the auth Deployment has rolled out the pod template that loads the Secret's keys as they
	// are now, and no pod of an older template is left in its count.
	Served bool
	// Drain is how long a pod that has left the Deployment's count may still answer: its termination
	// grace period.
	Drain time.Duration
	// Lifetime is the longest lifetime of a token the auth service signs.
	Lifetime time.Duration
	// Every is spec.auth.signingKeyRotation.every; 0 without a schedule.
	Every time.Duration
	// Requested is the rotate-signing-key annotation's value ("" when unset).
	Requested string
}

// A rotation step: what one reconcile writes to the Secret.
type rotationStep string

const (
	stepNone rotationStep = ""
	// stepServed records that every auth pod serves the Secret's keys (the next key, or the promotion).
	stepServed  rotationStep = "Served"
	stepPromote rotationStep = "Promote"
	stepRetire  rotationStep = "Retire"
	stepPublish rotationStep = "Publish"
	// stepAcknowledge answers a rotate-signing-key value with the rotation already under way.
	stepAcknowledge rotationStep = "Acknowledge"
)

// promoteAfter is the earliest time the next key may sign: the drain allowance and the JWKS max-age after
// every auth pod served it. Zero until then.
func (k keyRecord) promoteAfter(f rotationFacts) time.Time {
	if !k.HasNext || k.NextServedAt.IsZero() {
		return time.Time{}
	}
	return k.NextServedAt.Add(f.Drain + keys.JWKSMaxAge)
}

// retiresAt is when the previous key may go: the longest token lifetime after the last pod that could
// sign with it stopped. Zero until every auth pod signs with the promoted key.
func (k keyRecord) retiresAt(f rotationFacts) time.Time {
	if !k.HasPrevious || k.PromotionServedAt.IsZero() {
		return time.Time{}
	}
	return k.PromotionServedAt.Add(f.Drain + f.Lifetime)
}

// nextRotationAt is when the schedule starts the next rotation: every after the current key began to
// sign, and never before the previous key has been retired. Zero without a schedule, during a rotation,
// and while the previous key's retirement is not yet known.
func (k keyRecord) nextRotationAt(f rotationFacts) time.Time {
	if f.Every <= 0 || k.HasNext {
		return time.Time{}
	}
	t := k.CurrentSince.Add(f.Every)
	if k.HasPrevious {
		r := k.retiresAt(f)
		if r.IsZero() {
			return time.Time{}
		}
		if r.After(t) {
			t = r
		}
	}
	return t
}

// decideRotation is the one step a reconcile takes, if any.
func decideRotation(k keyRecord, f rotationFacts) rotationStep {
	due := func(t time.Time) bool { return !t.IsZero() && !f.Now.Before(t) }
	switch {
	case due(k.retiresAt(f)):
		return stepRetire
	case f.Served && ((k.HasNext && k.NextServedAt.IsZero()) || (k.HasPrevious && k.PromotionServedAt.IsZero())):
		return stepServed
	case due(k.promoteAfter(f)):
		return stepPromote
	}
	if f.Requested != "" && f.Requested != k.RotatedFor {
		if k.HasNext {
			return stepAcknowledge
		}
		// On demand a rotation starts at once, also while the previous key is kept: promoting then drops
		// it before its time (an event says so). The schedule never does.
		return stepPublish
	}
	if due(k.nextRotationAt(f)) {
		return stepPublish
	}
	return stepNone
}

// rotationEvent is what a step's Event says.
type rotationEvent struct {
	Type, Reason, Note string
}

// takeStep changes sec as step says (the caller writes it) and returns the Event to record.
func takeStep(sec *corev1.Secret, step rotationStep, k keyRecord, f rotationFacts) (rotationEvent, error) {
	if sec.Annotations == nil {
		sec.Annotations = map[string]string{}
	}
	a := sec.Annotations
	stamp := func(name string) { a[name] = f.Now.UTC().Format(time.RFC3339) }
	ids := keyIDsOf(sec)
	switch step {
	case stepServed:
		var done []string
		if k.HasNext && k.NextServedAt.IsZero() {
			stamp(render.NextServedAtAnnotation)
			k.NextServedAt = f.Now
			done = append(done, fmt.Sprintf("every auth pod serves the next signing key %s; it signs from %s", ids.Next, k.promoteAfter(f).UTC().Format(time.RFC3339)))
		}
		if k.HasPrevious && k.PromotionServedAt.IsZero() {
			stamp(render.PromotionServedAtAnnotation)
			k.PromotionServedAt = f.Now
			done = append(done, fmt.Sprintf("every auth pod signs with %s; the previous key %s verifies until %s", ids.Current, ids.Previous, k.retiresAt(f).UTC().Format(time.RFC3339)))
		}
		return rotationEvent{corev1.EventTypeNormal, "SigningKeyServed", capitalize(strings.Join(done, "; "))}, nil
	case stepPromote:
		ev := rotationEvent{corev1.EventTypeNormal, "SigningKeyPromoted",
			fmt.Sprintf("Promoted the signing key %s: it signs now; %s verifies until the tokens it signed have expired", ids.Next, ids.Current)}
		if k.HasPrevious {
			ev.Type = corev1.EventTypeWarning
			ev.Note += fmt.Sprintf("; the key before it, %s, was dropped before its retirement (a rotation was asked for while it was kept): tokens it signed no longer verify", ids.Previous)
		}
		sec.Data[render.PreviousSigningKeyKey] = sec.Data[render.SigningKeyKey]
		sec.Data[render.SigningKeyKey] = sec.Data[render.NextSigningKeyKey]
		delete(sec.Data, render.NextSigningKeyKey)
		a[render.KeyIDAnnotation] = ids.Next
		stamp(render.CurrentSinceAnnotation)
		delete(a, render.NextPublishedAtAnnotation)
		delete(a, render.NextServedAtAnnotation)
		delete(a, render.PromotionServedAtAnnotation)
		return ev, nil
	case stepRetire:
		delete(sec.Data, render.PreviousSigningKeyKey)
		delete(a, render.PromotionServedAtAnnotation)
		return rotationEvent{corev1.EventTypeNormal, "SigningKeyRetired",
			fmt.Sprintf("Retired the previous signing key %s: every token it signed has expired", ids.Previous)}, nil
	case stepPublish:
		key, kid, err := newSigningKey()
		if err != nil {
			return rotationEvent{}, err
		}
		sec.Data[render.NextSigningKeyKey] = key
		stamp(render.NextPublishedAtAnnotation)
		delete(a, render.NextServedAtAnnotation)
		why := "on schedule (signingKeyRotation.every)"
		if f.Requested != "" && f.Requested != k.RotatedFor {
			a[render.RotatedForAnnotation] = f.Requested
			why = fmt.Sprintf("as asked (%s=%q)", v1alpha1.RotateSigningKeyAnnotation, f.Requested)
		}
		return rotationEvent{corev1.EventTypeNormal, "SigningKeyPublished",
			fmt.Sprintf("Published the next signing key %s %s; it signs once every auth pod serves it and the JWKS caches have expired", kid, why)}, nil
	case stepAcknowledge:
		a[render.RotatedForAnnotation] = f.Requested
		return rotationEvent{corev1.EventTypeNormal, "SigningKeyRotationUnderWay",
			fmt.Sprintf("A rotation to %s is already under way; it answers %s=%q", ids.Next, v1alpha1.RotateSigningKeyAnnotation, f.Requested)}, nil
	}
	return rotationEvent{}, fmt.Errorf("unknown rotation step %q", step)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// keyIDs are the RFC 7638 thumbprints of the Secret's keys by role ("" where a key is absent or does
// not parse).
type keyIDs struct{ Current, Previous, Next string }

func keyIDsOf(sec *corev1.Secret) keyIDs {
	kid := func(key string) string {
		pemBytes := sec.Data[key]
		if len(pemBytes) == 0 {
			return ""
		}
		k, err := keys.ParsePEM(pemBytes)
		if err != nil {
			return ""
		}
		id, err := thumbprint(&k.PublicKey)
		if err != nil {
			return ""
		}
		return id
	}
	return keyIDs{Current: kid(render.SigningKeyKey), Previous: kid(render.PreviousSigningKeyKey), Next: kid(render.NextSigningKeyKey)}
}

// annotation is the auth pod template's SigningKeysAnnotation: only during a rotation, so that a
// template (and the pods) of a resource with one key is the same as before rotations had steps.
func (ids keyIDs) annotation() string {
	if ids.Previous == "" && ids.Next == "" {
		return ""
	}
	s := "current=" + ids.Current
	if ids.Previous != "" {
		s += ",previous=" + ids.Previous
	}
	if ids.Next != "" {
		s += ",next=" + ids.Next
	}
	return s
}

// authServes reports whether the auth Deployment has rolled out a pod template that loads the keys ids
// names: the template carries them, the Deployment controller has seen that template, every replica
// runs it and none of an older one is left in its count. It returns the drain allowance too.
//
// Why the Deployment and not each pod's JWKS: a pod loads its keys once, at start-up, from the files of
// the template it was created from, so the template names what it serves; the Deployment's status is
// what `kubectl rollout status` trusts, it is in the operator's cache already (no list of pods, no
// pods/proxy permission, which would reach into every pod of every namespace the operator serves), and a
// stalled rollout simply holds the rotation at its step.
func authServes(d *appsv1.Deployment, ids keyIDs) (bool, time.Duration) {
	drain := 30 * time.Second // the API's default grace period
	if d == nil {
		return false, drain
	}
	if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		drain = time.Duration(*g) * time.Second
	}
	if d.Spec.Template.Annotations[render.SigningKeysAnnotation] != ids.annotation() {
		return false, drain
	}
	return deploymentState(render.Auth, d).rollingOut() == "", drain
}

// longestTokenLifetime is the longest lifetime of anything the auth service signs with its keys: access,
// ID and refresh tokens and codes, with the service's defaults for those the spec leaves out.
func longestTokenLifetime(fs *v1alpha1.FormsService) time.Duration {
	c := render.ServiceConfig(fs, render.Auth, render.Inputs{})
	c.ApplyDefaults()
	a := c.Auth
	return max(a.AccessTokenLifetime.D(), a.IDTokenLifetime.D(), a.RefreshTokenLifetime.D(), a.CodeLifetime.D())
}

// rotate takes the rotation's next step on the signing-key Secret sec, if one is due, and reports where
// the rotation stands and when to look again.
func (r *FormsServiceReconciler) rotate(ctx context.Context, fs *v1alpha1.FormsService, sec *corev1.Secret) (*v1alpha1.SigningKeyStatus, time.Time, error) {
	d := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: render.WorkloadName(fs, render.Auth)}, d); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, time.Time{}, err
		}
		d = nil
	}
	f := rotationFacts{Now: r.now(), Lifetime: longestTokenLifetime(fs), Requested: fs.Annotations[v1alpha1.RotateSigningKeyAnnotation]}
	if rot := fs.Spec.Auth.SigningKeyRotation; rot != nil {
		f.Every = rot.Every.Duration
	}
	f.Served, f.Drain = authServes(d, keyIDsOf(sec))
	k := recordOf(sec)
	if step := decideRotation(k, f); step != stepNone {
		changed := sec.DeepCopy()
		ev, err := takeStep(changed, step, k, f)
		if err != nil {
			return nil, time.Time{}, err
		}
		// Update carries the resourceVersion just read: a concurrent writer makes this fail and retry
		// instead of losing a key.
		if err := r.Client.Update(ctx, changed); err != nil {
			return nil, time.Time{}, err
		}
		*sec = *changed
		r.eventAbout(fs, sec, ev.Type, ev.Reason, "%s", ev.Note)
		k = recordOf(sec)
		f.Served = false // the Secret just changed: what the pods serve is not yet known
	}
	return signingKeyStatus(k, f, keyIDsOf(sec)), wakeAt(k, f), nil
}

// wakeAt is the next time the rotation has a step due by the clock alone (zero: none).
func wakeAt(k keyRecord, f rotationFacts) time.Time {
	var next time.Time
	for _, t := range []time.Time{k.promoteAfter(f), k.retiresAt(f), k.nextRotationAt(f)} {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

func signingKeyStatus(k keyRecord, f rotationFacts, ids keyIDs) *v1alpha1.SigningKeyStatus {
	at := func(t time.Time) *metav1.Time {
		if t.IsZero() {
			return nil
		}
		return ptr.To(metav1.NewTime(t.Truncate(time.Second))) // what the API keeps: no status write for nothing
	}
	st := &v1alpha1.SigningKeyStatus{
		CurrentKeyID: ids.Current, CurrentSince: at(k.CurrentSince),
		NextKeyID: ids.Next, PreviousKeyID: ids.Previous,
		NextRotationAt: at(k.nextRotationAt(f)),
	}
	if k.HasNext {
		st.NextPublishedAt, st.NextServedAt, st.PromoteAfter = at(k.NextPublishedAt), at(k.NextServedAt), at(k.promoteAfter(f))
	}
	if k.HasPrevious {
		st.PreviousRetiresAt = at(k.retiresAt(f))
	}
	switch {
	case k.HasNext && k.NextServedAt.IsZero():
		st.Phase = v1alpha1.SigningKeyPublishing
	case k.HasNext:
		st.Phase = v1alpha1.SigningKeyPublished
	case k.HasPrevious && k.PromotionServedAt.IsZero():
		st.Phase = v1alpha1.SigningKeyPromoting
	case k.HasPrevious:
		st.Phase = v1alpha1.SigningKeyRetiring
	default:
		st.Phase = v1alpha1.SigningKeyStable
	}
	return st
}

// now is the reconciler's clock.
func (r *FormsServiceReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
