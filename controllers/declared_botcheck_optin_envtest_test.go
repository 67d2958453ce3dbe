package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// A declared form's own bot check (spec.forms.declared[].botCheck) is judged by the API server as the
// forms service judges the configuration rendered from it (the pattern of
// TestCRD_DeclaredFormsAgreeWithTheService). narrower marks the documented case where the CRD is
// stricter: an action outside the providers' alphabet.
func TestCRD_DeclaredBotCheckAgreesWithTheService(t *testing.T) {
	ns := newNamespace(t)
	check := func(mutate func(b *v1alpha1.BotCheckSpec)) func(f *v1alpha1.DeclaredForm) {
		return func(f *v1alpha1.DeclaredForm) {
			f.BotCheck = &v1alpha1.BotCheckSpec{Provider: "turnstile", SecretRef: v1alpha1.SecretKeySelector{Name: "demo-captcha", Key: "secret"}}
			mutate(f.BotCheck)
		}
	}
	cases := []struct {
		name     string
		declare  func(f *v1alpha1.DeclaredForm)
		want     string
		narrower bool
	}{
		{"turnstile with an action", check(func(b *v1alpha1.BotCheckSpec) { b.Action = "demo-request" }), "", false},
		{"recaptcha v3 with a score, an action and a verify URL", check(func(b *v1alpha1.BotCheckSpec) {
			b.Provider, b.MinScore, b.Action, b.VerifyURL = "recaptcha", "0.7", "demo/submit", "http://verify.internal:8080/siteverify"
		}), "", false},
		{"hcaptcha", check(func(b *v1alpha1.BotCheckSpec) { b.Provider = "hcaptcha" }), "", false},
		{"an action of 100 characters", check(func(b *v1alpha1.BotCheckSpec) { b.Action = strings.Repeat("a", 100) }), "", false},

		{"an unknown provider", check(func(b *v1alpha1.BotCheckSpec) { b.Provider = "friendlycaptcha" }), "spec.forms.declared[0].botCheck.provider", false},
		{"an action with hcaptcha", check(func(b *v1alpha1.BotCheckSpec) { b.Provider, b.Action = "hcaptcha", "demo" }),
			"action is for turnstile and recaptcha", false},
		{"an action of 101 characters", check(func(b *v1alpha1.BotCheckSpec) { b.Action = strings.Repeat("a", 101) }),
			"spec.forms.declared[0].botCheck.action", false},
		{"an action with a leading space", check(func(b *v1alpha1.BotCheckSpec) { b.Action = " demo" }), "spec.forms.declared[0].botCheck.action", false},
		{"a score above 1", check(func(b *v1alpha1.BotCheckSpec) { b.Provider, b.MinScore = "recaptcha", "1.5" }), "spec.forms.declared[0].botCheck.minScore", false},
		{"a verify URL over ftp", check(func(b *v1alpha1.BotCheckSpec) { b.VerifyURL = "ftp://verify.internal/x" }), "verifyURL must be an http or https URL", false},

		// The rendered configuration names a file under the Secrets' folder either way: the service
		// would refuse it only at start-up, when the file cannot be read.
		{"no secret", check(func(b *v1alpha1.BotCheckSpec) { b.SecretRef = v1alpha1.SecretKeySelector{} }), "spec.forms.declared[0].botCheck.secretRef", true},
		{"an action with an inner space (the providers' alphabet has none)", check(func(b *v1alpha1.BotCheckSpec) { b.Action = "request demo" }),
			"spec.forms.declared[0].botCheck.action", true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := sampleFS(ns)
			fs.Name = fmt.Sprintf("declaredbot%d", i)
			fs.Spec.Forms.Declared = []v1alpha1.DeclaredForm{demoForm()}
			tc.declare(&fs.Spec.Forms.Declared[0])
			_, svcErr := render.RenderConfig(fs.DeepCopy(), render.Forms, render.Inputs{Image: testImage})
			apiErr := k8s.Create(context.Background(), fs, client.DryRunAll)
			judgedAlike(t, tc.want, tc.narrower, apiErr, svcErr)
			if tc.narrower && svcErr != nil {
				t.Errorf("the service refuses it too (not a narrower case): %v", svcErr)
			}
		})
	}
}

// A declared form's double opt-in (spec.forms.declared[].doubleOptIn) is judged alike by the API server
// and the service; the links' https is left to the service (the operator reports Degraded with its
// message), as for the waitlist's.
func TestCRD_DeclaredDoubleOptInAgreesWithTheService(t *testing.T) {
	ns := newNamespace(t)
	optIn := func(mutate func(fs *v1alpha1.FormsService, f *v1alpha1.DeclaredForm)) func(*v1alpha1.FormsService, *v1alpha1.DeclaredForm) {
		return func(fs *v1alpha1.FormsService, f *v1alpha1.DeclaredForm) {
			f.DoubleOptIn = &v1alpha1.DoubleOptInSpec{}
			mutate(fs, f)
		}
	}
	cases := []struct {
		name    string
		declare func(fs *v1alpha1.FormsService, f *v1alpha1.DeclaredForm)
		want    string
	}{
		{"on a form unique by its email field", optIn(func(*v1alpha1.FormsService, *v1alpha1.DeclaredForm) {}), ""},
		{"with its own times", optIn(func(_ *v1alpha1.FormsService, f *v1alpha1.DeclaredForm) {
			f.DoubleOptIn.ConfirmWithin, f.DoubleOptIn.ResendAfter = &metav1.Duration{Duration: 24 * time.Hour}, &metav1.Duration{Duration: time.Hour}
		}), ""},
		{"a confirmWithin of 10 minutes", optIn(func(_ *v1alpha1.FormsService, f *v1alpha1.DeclaredForm) {
			f.DoubleOptIn.ConfirmWithin = &metav1.Duration{Duration: 10 * time.Minute}
		}), "confirmWithin must be between 1h and 720h"},
		{"a resendAfter of two days", optIn(func(_ *v1alpha1.FormsService, f *v1alpha1.DeclaredForm) {
			f.DoubleOptIn.ResendAfter = &metav1.Duration{Duration: 48 * time.Hour}
		}), "resendAfter must be between 1m and 24h"},
		{"without a unique field", optIn(func(_ *v1alpha1.FormsService, f *v1alpha1.DeclaredForm) { f.Unique = "" }),
			"doubleOptIn needs unique naming an email field"},
		{"unique by a text field", optIn(func(_ *v1alpha1.FormsService, f *v1alpha1.DeclaredForm) { f.Unique = "name" }),
			"doubleOptIn needs unique naming an email field"},
		{"on a form with a file field", optIn(func(fs *v1alpha1.FormsService, f *v1alpha1.DeclaredForm) {
			withFileField(func(*v1alpha1.DeclaredForm, *v1alpha1.FormField) {})(fs, f)
		}), "doubleOptIn is not for a form with file fields"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := sampleFS(ns)
			fs.Name = fmt.Sprintf("declaredoptin%d", i)
			fs.Spec.Forms.Declared = []v1alpha1.DeclaredForm{demoForm()}
			tc.declare(fs, &fs.Spec.Forms.Declared[0])
			cfg, svcErr := render.RenderConfig(fs.DeepCopy(), render.Forms, render.Inputs{Image: testImage})
			apiErr := k8s.Create(context.Background(), fs, client.DryRunAll)
			judgedAlike(t, tc.want, false, apiErr, svcErr)
			if tc.want == "" && !strings.Contains(cfg, "publicURL: https://forms.acme.example") {
				t.Errorf("the links' base is not the forms' host:\n%s", cfg)
			}
		})
	}
	t.Run("an http publicURL is left to the service", func(t *testing.T) {
		fs := sampleFS(ns)
		fs.Name = "declaredoptinhttp"
		fs.Spec.Ingress, fs.Spec.PublicURL = nil, "http://id.acme.example"
		fs.Spec.Forms.Declared = []v1alpha1.DeclaredForm{demoForm()}
		fs.Spec.Forms.Declared[0].DoubleOptIn = &v1alpha1.DoubleOptInSpec{}
		if err := k8s.Create(context.Background(), fs, client.DryRunAll); err != nil {
			t.Errorf("the API server refuses it now (make it a case of the table above): %v", err)
		}
		if _, err := render.RenderConfig(fs, render.Forms, render.Inputs{Image: testImage}); err == nil || !strings.Contains(err.Error(), "links need https") {
			t.Errorf("the service's refusal %v does not say the links need https", err)
		}
	})
}
