package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

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
