package render

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/forms/optin"
)

// withFormsSettings is base() with every forms setting of issue 24 items 3 to 5: a site with a bot
// check, the double opt-in, the waitlist's retention, the forms on a host of their own.
func withFormsSettings() *v1alpha1.FormsService {
	fs := base()
	fs.Spec.Ingress = &v1alpha1.IngressSpec{Host: "id.acme.example", FormsHost: "forms.acme.example"}
	fs.Spec.Forms.Sites = []v1alpha1.FormsSite{{
		Origin: "https://www.acme.example", Name: "Acme", ThanksURL: "/thanks", ErrorURL: "/oops", ConsentVersion: "2026-01",
		BotCheck: &v1alpha1.BotCheckSpec{Provider: "recaptcha", SecretRef: v1alpha1.SecretKeySelector{Name: "captcha", Key: "secret"},
			VerifyURL: "https://verify.internal:8443/siteverify", MinScore: "0.7"},
	}}
	fs.Spec.Forms.DoubleOptIn = &v1alpha1.DoubleOptInSpec{ConfirmWithin: &metav1.Duration{Duration: 24 * time.Hour}}
	fs.Spec.Forms.DataPolicy = &v1alpha1.FormsDataPolicy{WaitlistRetention: &metav1.Duration{Duration: 365 * 24 * time.Hour}}
	return fs
}

// The CRD carried none of the forms' sites, bot checks, double opt-in or waitlist retention, so an
// operator-run installation could not turn them on (issue 24 item 4: "in the CRD").
func TestServiceConfig_FormsSitesBotCheckOptInRetention(t *testing.T) {
	fs := withFormsSettings()
	c := ServiceConfig(fs, Forms, in).Forms
	if len(c.Sites) != 1 {
		t.Fatalf("sites %+v", c.Sites)
	}
	s := c.Sites[0]
	if s.Origin != "https://www.acme.example" || s.Name != "Acme" || s.ThanksURL != "/thanks" || s.ErrorURL != "/oops" || s.ConsentVersion != "2026-01" {
		t.Errorf("site %+v", s)
	}
	if b := s.BotCheck; b == nil || b.Provider != "recaptcha" || b.SecretFile != SecretsDir+"/captcha/secret" ||
		b.VerifyURL != "https://verify.internal:8443/siteverify" || b.MinScore == nil || *b.MinScore != 0.7 {
		t.Errorf("bot check %+v", s.BotCheck)
	}
	if d := c.DoubleOptIn; d == nil || d.ConfirmWithin.D() != 24*time.Hour || d.ResendAfter != 0 {
		t.Errorf("double opt-in %+v", c.DoubleOptIn)
	}
	if c.PublicURL != "https://forms.acme.example" || c.WaitlistRetention.D() != 365*24*time.Hour {
		t.Errorf("publicURL %q, waitlistRetention %v", c.PublicURL, c.WaitlistRetention)
	}
	// What the forms would refuse the operator refuses before writing it: here, nothing.
	for _, comp := range Components {
		out, err := RenderConfig(fs, comp, in)
		if err != nil {
			t.Fatalf("%s: %v", comp, err)
		}
		if comp != Forms && strings.Contains(out, "captcha") {
			t.Errorf("%s got the forms' bot check:\n%s", comp, out)
		}
		if comp == Forms && strings.Contains(out, "secret:") {
			t.Errorf("a secret value in the ConfigMap:\n%s", out)
		}
	}
	// A site for an origin that is not allowed stops the render, as the forms would stop at start-up.
	fs.Spec.Forms.Sites[0].Origin = "https://other.example"
	if _, err := RenderConfig(fs, Forms, in); err == nil {
		t.Error("a site for a foreign origin rendered")
	}
	// Without a host of their own the links use publicURL (the forms' publicURL stays unset).
	fs = withFormsSettings()
	fs.Spec.Ingress.FormsHost = ""
	if c := ServiceConfig(fs, Forms, in).Forms; c.PublicURL != "" {
		t.Errorf("forms.publicURL %q on one host", c.PublicURL)
	}
}

// The bot check's secret is mounted into the forms pods only, and checked to exist like every Secret
// the spec names.
func TestUserSecretRefs_BotCheckSecretMountedIntoTheFormsOnly(t *testing.T) {
	fs := withFormsSettings()
	if !slices.Contains(ReferencedSecretNames(fs), "captcha") {
		t.Errorf("referenced %v", ReferencedSecretNames(fs))
	}
	has := func(component string) bool {
		for _, m := range secretMounts(fs, component) {
			if m.Secret == "captcha" && slices.Equal(m.Keys, []string{"secret"}) {
				return true
			}
		}
		return false
	}
	if !has(Forms) || has(Auth) || has(Health) {
		t.Errorf("mounted into forms %v, auth %v, health %v", has(Forms), has(Auth), has(Health))
	}
}

// The confirmation and unsubscribe links reach the forms through the Ingress and the Gateway, on the
// forms' host, only when the double opt-in is on.
func TestRoutes_OptInLinksRoutedToTheForms(t *testing.T) {
	if !slices.Equal(optInPaths, []string{optin.ConfirmPath, optin.UnsubscribePath}) {
		t.Fatalf("optInPaths %v differ from the forms' %s, %s", optInPaths, optin.ConfirmPath, optin.UnsubscribePath)
	}
	ingressPaths := func(fs *v1alpha1.FormsService) map[string]string {
		out := map[string]string{}
		for _, r := range Ingress(fs).Spec.Rules {
			for _, p := range r.HTTP.Paths {
				out[*r.Host+*p.Path] = *p.Backend.Service.Name + ":" + string(*p.PathType)
			}
		}
		return out
	}
	fs := withFormsSettings()
	got := ingressPaths(fs)
	for _, p := range optInPaths {
		if got["forms.acme.example"+p] != "acme-forms:Exact" || got["id.acme.example"+p] != "" {
			t.Errorf("ingress %s: %v", p, got)
		}
	}
	fs.Spec.Forms.DoubleOptIn = nil
	if got := ingressPaths(fs); got["forms.acme.example"+optin.ConfirmPath] != "" {
		t.Errorf("confirmation link routed without the double opt-in: %v", got)
	}

	fs = withFormsSettings()
	fs.Spec.Ingress = nil
	fs.Spec.Gateway = &v1alpha1.GatewaySpec{Host: "id.acme.example", ParentRefs: []v1alpha1.GatewayParentRef{{Name: "gw"}}}
	var paths []string
	for _, r := range HTTPRoutes(fs)[0].Spec.Rules {
		paths = append(paths, *r.Matches[0].Path.Value)
	}
	for _, p := range optInPaths {
		if !slices.Contains(paths, p) {
			t.Errorf("gateway: %s not routed: %v", p, paths)
		}
	}
}

// A NetworkPolicy around the forms lets them reach the bot-check provider's port, or every check
// would fail closed (502).
func TestServiceNetworkPolicy_FormsReachTheBotCheckProvider(t *testing.T) {
	fs := withFormsSettings()
	fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{}
	ports := func(component string) []int32 {
		var out []int32
		for _, e := range ServiceNetworkPolicy(fs, component).Spec.Egress {
			for _, p := range e.Ports {
				out = append(out, p.Port.IntVal)
			}
		}
		return out
	}
	if !slices.Contains(ports(Forms), 8443) || slices.Contains(ports(Auth), 8443) {
		t.Errorf("forms egress %v, auth egress %v", ports(Forms), ports(Auth))
	}
	fs.Spec.Forms.Sites[0].BotCheck.VerifyURL = "" // the provider's own
	if !slices.Contains(ports(Forms), 443) {
		t.Errorf("forms egress %v without a verify URL", ports(Forms))
	}
}
