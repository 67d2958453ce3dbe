package render

import (
	"slices"
	"testing"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A declared form's own bot check is rendered with its action, its secret as the file its Secret is
// mounted as (into the forms pods only), and an egress to its verify URL's port.
func TestDeclaredForms_BotCheckRenderedMountedAndReached(t *testing.T) {
	fs := base()
	fs.Spec.Forms.Declared = []v1alpha1.DeclaredForm{{ID: "ticket", Fields: []v1alpha1.FormField{{Name: "email", Type: "email", Required: true}},
		BotCheck: &v1alpha1.BotCheckSpec{Provider: "turnstile", SecretRef: v1alpha1.SecretKeySelector{Name: "ticket-captcha", Key: "secret"},
			VerifyURL: "https://verify.internal:9443/siteverify", Action: "ticket"}}}
	c := ServiceConfig(fs, Forms, in).Forms
	want := &config.BotCheck{Provider: "turnstile", SecretFile: SecretsDir + "/ticket-captcha/secret",
		VerifyURL: "https://verify.internal:9443/siteverify", Action: "ticket"}
	if len(c.Declared) != 1 || c.Declared[0].BotCheck == nil || *c.Declared[0].BotCheck != *want {
		t.Fatalf("forms.declared %+v", c.Declared)
	}
	if _, err := RenderConfig(fs, Forms, in); err != nil {
		t.Fatalf("the forms would refuse it: %v", err)
	}
	var field string
	for _, r := range UserSecretRefs(fs) {
		if r.Secret == "ticket-captcha" {
			field = r.Field
		}
	}
	if field != "spec.forms.declared[ticket].botCheck.secretRef" {
		t.Errorf("the Secret is named by %q", field)
	}
	mounted := func(component string) bool {
		return slices.ContainsFunc(secretMounts(fs, component), func(m secretMount) bool {
			return m.Secret == "ticket-captcha" && slices.Equal(m.Keys, []string{"secret"})
		})
	}
	if !mounted(Forms) || mounted(Auth) || mounted(Health) {
		t.Errorf("mounted into forms %v, auth %v, health %v", mounted(Forms), mounted(Auth), mounted(Health))
	}
	fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{}
	reached := func(component string) bool {
		for _, e := range ServiceNetworkPolicy(fs, component).Spec.Egress {
			for _, p := range e.Ports {
				if p.Port.IntVal == 9443 {
					return true
				}
			}
		}
		return false
	}
	if !reached(Forms) || reached(Auth) {
		t.Errorf("egress to the form's verify URL's port: forms %v, auth %v", reached(Forms), reached(Auth))
	}
}
