package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// auditWebhook is a receiver with every setting.
func auditWebhook() *v1alpha1.AuditWebhookSpec {
	return &v1alpha1.AuditWebhookSpec{
		URL:                      "https://siem.acme.example/ingest?source=formsservice",
		SigningSecretRef:         v1alpha1.SecretKeySelector{Name: "siem", Key: "secret"},
		PreviousSigningSecretRef: &v1alpha1.SecretKeySelector{Name: "siem", Key: "previous"},
		BatchSize:                500,
		Timeout:                  &metav1.Duration{Duration: 30 * time.Second},
	}
}

// The CRD refuses what the auth service refuses in auth.audit.webhook, and takes what it takes: each
// case goes to the real API server (a dry-run create) and through the configuration the operator
// renders, and both must answer alike.
func TestCRD_AuditWebhookAgreesWithTheService(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		name string
		set  func(w *v1alpha1.AuditWebhookSpec)
		want string // "" accepted; else a part of the API server's refusal
		// narrower: the CRD refuses what the service would take, on purpose (a raw space is no URL an
		// HTTP client sends as written; a timeout of 0 is the service's default, 10s, which the
		// resource spells by leaving it out).
		narrower bool
	}{
		{"every setting", func(*v1alpha1.AuditWebhookSpec) {}, "", false},
		{"only the address and the secret", func(w *v1alpha1.AuditWebhookSpec) {
			*w = v1alpha1.AuditWebhookSpec{URL: "https://siem.acme.example", SigningSecretRef: w.SigningSecretRef}
		}, "", false},
		{"http to localhost with a port", func(w *v1alpha1.AuditWebhookSpec) { w.URL = "http://localhost:8088/events" }, "", false},
		{"http to a loopback address", func(w *v1alpha1.AuditWebhookSpec) { w.URL = "http://127.0.0.1/events" }, "", false},
		{"a batch of 1", func(w *v1alpha1.AuditWebhookSpec) { w.BatchSize = 1 }, "", false},
		{"a batch of 1000", func(w *v1alpha1.AuditWebhookSpec) { w.BatchSize = 1000 }, "", false},

		{"http off loopback", func(w *v1alpha1.AuditWebhookSpec) { w.URL = "http://siem.logging.svc:8080/ingest" }, "url must be https", false},
		{"user information", func(w *v1alpha1.AuditWebhookSpec) { w.URL = "https://user:pw@siem.acme.example/" }, "without user information", false},
		{"a fragment", func(w *v1alpha1.AuditWebhookSpec) { w.URL = "https://siem.acme.example/#x" }, "without user information, fragment", false},
		{"no host", func(w *v1alpha1.AuditWebhookSpec) { w.URL = "https:///ingest" }, "with a host name", false},
		{"another scheme", func(w *v1alpha1.AuditWebhookSpec) { w.URL = "ftp://siem.acme.example/" }, "an http(s) URL", false},
		{"a space", func(w *v1alpha1.AuditWebhookSpec) { w.URL = "https://siem.acme.example/a b" }, "or spaces", true},
		{"a batch of 0", func(w *v1alpha1.AuditWebhookSpec) { w.BatchSize = -1 }, "spec.auth.audit.webhook.batchSize", false},
		{"a batch of 1001", func(w *v1alpha1.AuditWebhookSpec) { w.BatchSize = 1001 }, "spec.auth.audit.webhook.batchSize", false},
		{"a negative timeout", func(w *v1alpha1.AuditWebhookSpec) { w.Timeout = &metav1.Duration{Duration: -time.Second} }, "timeout must be between", false},
		{"a zero timeout", func(w *v1alpha1.AuditWebhookSpec) { w.Timeout = &metav1.Duration{} }, "timeout must be between", true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := sampleFS(ns)
			fs.Name = fmt.Sprintf("audit%d", i)
			w := auditWebhook()
			tc.set(w)
			fs.Spec.Auth.Audit = &v1alpha1.AuditSpec{Webhook: w}
			_, svcErr := render.RenderConfig(fs.DeepCopy(), render.Auth, render.Inputs{Image: testImage})
			apiErr := k8s.Create(context.Background(), fs, client.DryRunAll)
			judgedAlike(t, tc.want, tc.narrower, apiErr, svcErr)
		})
	}
}

// A sink whose signing secret is missing or not a Standard Webhooks secret is Degraded, naming the
// field, and the auth pods are not rolled to mount it; with a good secret the auth configuration
// names the mounted files, and the secret stays out of the ConfigMap.
func TestAuditWebhook_SecretCheckedThenMounted(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	w := auditWebhook()
	w.PreviousSigningSecretRef = nil
	fs.Spec.Auth.Audit = &v1alpha1.AuditSpec{Webhook: w}
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "SecretMissing",
		`Secret "siem" named by spec.auth.audit.webhook.signingSecretRef does not exist`)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "siem"}, Data: map[string][]byte{"secret": []byte("not-a-whsec-secret")}}
	if err := k8s.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "SecretValueInvalid", "spec.auth.audit.webhook.signingSecretRef")
	if err := k8s.Get(ctx, key(ns, "acme-auth"), &appsv1.Deployment{}); err == nil {
		t.Error("the auth Deployment was rolled out to mount a Secret the service would refuse")
	}
	const good = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	sec.Data["secret"] = []byte(good)
	if err := k8s.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	eventuallyWhat(t, "the auth configuration names the mounted secret", func() error {
		c := configOf(t, ns, "acme", render.Auth)
		if c.Auth.Audit.Webhook == nil || c.Auth.Audit.Webhook.SecretFile != render.SecretPath("siem", "secret") || c.Auth.Audit.Webhook.BatchSize != 500 {
			return fmt.Errorf("auth.audit.webhook %+v", c.Auth.Audit.Webhook)
		}
		return nil
	})
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, key(ns, "acme-config"), cm); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cm.Data["auth.yaml"], good) {
		t.Error("the signing secret is in the ConfigMap")
	}
}
