package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

func TestWebhookSecret_CheckedMountedIntoFormsAndRollsOnlyForms(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	const plain = "https://hooks.slack.com/services/T000/B000/PLAINTEXTURL"
	fs := sampleFS(ns)
	// Both set, as during a migration from url: the Secret is used and the plain URL goes nowhere.
	fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{Webhook: &v1alpha1.WebhookDelivery{
		URL: plain, URLSecretRef: &v1alpha1.SecretKeySelector{Name: "slack-hook", Key: "url"},
	}}
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}

	// No Secret yet: Degraded, and no forms pods that would fail to start.
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "SecretMissing",
		`Secret "slack-hook" named by spec.forms.delivery.webhook.urlSecretRef does not exist`)
	if err := k8s.Get(ctx, key(ns, "acme-forms"), &appsv1.Deployment{}); err == nil {
		t.Error("a forms Deployment was created although the webhook Secret is missing")
	}

	// A value the forms service would refuse at start-up: said here, without repeating the value.
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "slack-hook", Namespace: ns},
		Data: map[string][]byte{"url": []byte("hooks.slack.com/services/T000/B000/NOSCHEMESECRET")}}
	if err := k8s.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "SecretValueInvalid",
		`Secret "slack-hook" key "url" named by spec.forms.delivery.webhook.urlSecretRef`, "must be an http(s) URL")
	var cur v1alpha1.FormsService
	if err := k8s.Get(ctx, key(ns, "acme"), &cur); err != nil {
		t.Fatal(err)
	}
	for _, c := range cur.Status.Conditions {
		if strings.Contains(c.Message, "NOSCHEMESECRET") {
			t.Fatalf("condition %s repeats the Secret's value: %s", c.Type, c.Message)
		}
	}

	// A good value (with the newline `kubectl create secret --from-file` keeps): the platform rolls out.
	sec.Data["url"] = []byte("https://hooks.slack.com/services/T000/B000/SECRETURL\n")
	if err := k8s.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	for _, c := range render.Components {
		eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-"+c), &appsv1.Deployment{}) })
	}

	// The ConfigMap names the mounted file, never the URL.
	if w := configOf(t, ns, "acme", render.Forms).Forms.Delivery.Webhook; w == nil || w.URL != "" ||
		w.URLFile != render.SecretPath("slack-hook", "url") {
		t.Fatalf("forms webhook configuration = %+v", w)
	}
	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, key(ns, "acme-config"), &cm); err != nil {
		t.Fatal(err)
	}
	for k, v := range cm.Data {
		if strings.Contains(v, "hooks.slack.com") {
			t.Errorf("%s holds a webhook URL:\n%s", k, v)
		}
	}

	// Forms mounts only that key of the Secret, read-only, where the configuration says; auth and
	// health do not mount it.
	for _, c := range render.Components {
		var d appsv1.Deployment
		if err := k8s.Get(ctx, key(ns, "acme-"+c), &d); err != nil {
			t.Fatal(err)
		}
		pod := d.Spec.Template.Spec
		if got := mountsSecret(pod, "slack-hook"); got != (c == render.Forms) {
			t.Errorf("%s mounts the webhook Secret = %v", c, got)
			continue
		}
		if c != render.Forms {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Secret != nil && v.Secret.SecretName == "slack-hook" {
				if len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != "url" {
					t.Errorf("the webhook Secret is mounted with items %+v, want only url", v.Secret.Items)
				}
				found := false
				for _, m := range pod.Containers[0].VolumeMounts {
					if m.Name == v.Name {
						found = m.ReadOnly && m.MountPath+"/"+v.Secret.Items[0].Path == render.SecretPath("slack-hook", "url")
					}
				}
				if !found {
					t.Errorf("no read-only mount of %s at %s", v.Name, render.SecretPath("slack-hook", "url"))
				}
			}
		}
	}

	// A new webhook URL in the Secret rolls forms, and only forms.
	before := restartHashes(t, ns)
	sec.Data["url"] = []byte("https://hooks.slack.com/services/T000/B000/ROTATED\n")
	if err := k8s.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if after := restartHashes(t, ns); after[render.Forms] == before[render.Forms] {
			return fmt.Errorf("forms restart hash unchanged: %s", after[render.Forms])
		}
		return nil
	})
	after := restartHashes(t, ns)
	for _, c := range []string{render.Auth, render.Health} {
		if after[c] != before[c] {
			t.Errorf("a webhook Secret change rolled %s", c)
		}
	}
}
