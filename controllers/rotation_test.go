package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/services/auth/keys"
)

// The rotation's decisions on their own, every step and each thing that must hold it back.
func TestDecideRotation(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const drain, lifetime = 30 * time.Second, 720 * time.Hour
	facts := func(now time.Time, served bool) rotationFacts {
		return rotationFacts{Now: now, Served: served, Drain: drain, Lifetime: lifetime}
	}
	publishing := keyRecord{HasNext: true, CurrentSince: t0, NextPublishedAt: t0}
	published := publishing
	published.NextServedAt = t0.Add(time.Minute)
	promoteAt := published.NextServedAt.Add(drain + keys.JWKSMaxAge)
	promoting := keyRecord{HasPrevious: true, CurrentSince: t0}
	retiring := promoting
	retiring.PromotionServedAt = t0.Add(time.Minute)
	retireAt := retiring.PromotionServedAt.Add(drain + lifetime)

	withEvery := func(f rotationFacts, every time.Duration) rotationFacts { f.Every = every; return f }
	asking := func(f rotationFacts, v string) rotationFacts { f.Requested = v; return f }
	answered := func(k keyRecord, v string) keyRecord { k.RotatedFor = v; return k }
	for _, c := range []struct {
		name string
		k    keyRecord
		f    rotationFacts
		want rotationStep
	}{
		{"one key, nothing asked", keyRecord{CurrentSince: t0}, facts(t0.Add(1000*time.Hour), true), stepNone},
		{"asked on demand", keyRecord{CurrentSince: t0}, asking(facts(t0, true), "a"), stepPublish},
		{"the same value again", answered(keyRecord{CurrentSince: t0}, "a"), asking(facts(t0, true), "a"), stepNone},
		{"published, the pods not rolled, long after", publishing, facts(t0.Add(1000*time.Hour), false), stepNone},
		{"published, every pod serves it", publishing, facts(t0.Add(time.Minute), true), stepServed},
		{"served, a second before the JWKS caches expire", published, facts(promoteAt.Add(-time.Second), true), stepNone},
		{"served, the JWKS caches expired", published, facts(promoteAt, true), stepPromote},
		{"promoted, the pods not rolled, long after", promoting, facts(t0.Add(10000*time.Hour), false), stepNone},
		{"promoted, every pod signs with it", promoting, facts(t0.Add(time.Minute), true), stepServed},
		{"retiring, a second before the last token expires", retiring, facts(retireAt.Add(-time.Second), true), stepNone},
		{"retiring, the last token expired", retiring, facts(retireAt, true), stepRetire},
		{"asked again while a rotation publishes", answered(publishing, "a"), asking(facts(t0, false), "b"), stepAcknowledge},
		{"asked while the previous key is kept: at once", answered(retiring, "a"), asking(facts(t0.Add(2*time.Hour), true), "b"), stepPublish},
		{"schedule due", keyRecord{CurrentSince: t0}, withEvery(facts(t0.Add(24*time.Hour), true), 24*time.Hour), stepPublish},
		{"schedule not yet due", keyRecord{CurrentSince: t0}, withEvery(facts(t0.Add(24*time.Hour-time.Second), true), 24*time.Hour), stepNone},
		{"schedule due, the previous key still kept", retiring, withEvery(facts(retireAt.Add(-time.Second), true), 24*time.Hour), stepNone},
		{"schedule never publishes while promoting", promoting, withEvery(facts(t0.Add(10000*time.Hour), false), 24*time.Hour), stepNone},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := decideRotation(c.k, c.f); got != c.want {
				t.Errorf("step = %q, want %q", got, c.want)
			}
		})
	}

	// The schedule's next rotation waits for the retirement.
	if got := retiring.nextRotationAt(withEvery(facts(t0, true), 24*time.Hour)); !got.Equal(retireAt) {
		t.Errorf("nextRotationAt while retiring = %s, want the retirement %s", got, retireAt)
	}
	if got := (keyRecord{CurrentSince: t0}).nextRotationAt(withEvery(facts(t0, true), 24*time.Hour)); !got.Equal(t0.Add(24 * time.Hour)) {
		t.Errorf("nextRotationAt = %s", got)
	}
}

// Each step moves the keys between the Secret's roles, never losing one that still verifies.
func TestTakeStep_MovesTheKeysBetweenRoles(t *testing.T) {
	cur, _, _ := newSigningKey()
	next, nextID, _ := newSigningKey()
	prev, _, _ := newSigningKey()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := &corev1.Secret{Data: map[string][]byte{render.SigningKeyKey: cur, render.NextSigningKeyKey: next, render.PreviousSigningKeyKey: prev}}
	f := rotationFacts{Now: now, Drain: time.Second, Lifetime: time.Hour}
	ev, err := takeStep(sec, stepPromote, recordOf(sec), f)
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data[render.SigningKeyKey]) != string(next) || string(sec.Data[render.PreviousSigningKeyKey]) != string(cur) || sec.Data[render.NextSigningKeyKey] != nil {
		t.Error("promotion did not make next current and current previous")
	}
	if sec.Annotations[render.KeyIDAnnotation] != nextID || sec.Annotations[render.CurrentSinceAnnotation] != "2026-01-01T00:00:00Z" {
		t.Errorf("annotations after promotion: %v", sec.Annotations)
	}
	// A previous key still kept is dropped early only by an on-demand rotation, and that is a Warning.
	if ev.Type != corev1.EventTypeWarning || ev.Reason != "SigningKeyPromoted" {
		t.Errorf("promotion over a kept previous key: %+v", ev)
	}
	if _, err := takeStep(sec, stepRetire, recordOf(sec), f); err != nil {
		t.Fatal(err)
	}
	if sec.Data[render.PreviousSigningKeyKey] != nil || string(sec.Data[render.SigningKeyKey]) != string(next) {
		t.Error("retirement did not remove only the previous key")
	}
	if ids := keyIDsOf(sec); ids.annotation() != "" || ids.Current != nextID {
		t.Errorf("one key: ids %+v, annotation %q", ids, ids.annotation())
	}
}
