package render

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

const plainHook = "https://hooks.slack.com/services/T000/B000/PLAINTEXT"

func TestWebhookDelivery_SecretRefIsMountedNeverRendered(t *testing.T) {
	secretRef := &v1alpha1.SecretKeySelector{Name: "slack.hook", Key: "url"}
	cases := []struct {
		name        string
		webhook     v1alpha1.WebhookDelivery
		wantURL     string // config.Webhook.URL
		wantURLFile string // config.Webhook.URLFile
		wantMount   bool   // the forms pods mount slack.hook/url
	}{
		{"plain url (kept for compatibility)", v1alpha1.WebhookDelivery{URL: plainHook}, plainHook, "", false},
		{"url in a Secret", v1alpha1.WebhookDelivery{URLSecretRef: secretRef}, "", SecretsDir + "/slack.hook/url", true},
		{"both: the Secret wins", v1alpha1.WebhookDelivery{URL: plainHook, URLSecretRef: secretRef}, "", SecretsDir + "/slack.hook/url", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := base()
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{Webhook: &tc.webhook}

			w := ServiceConfig(fs, Forms, in).Forms.Delivery.Webhook
			if w == nil || w.URL != tc.wantURL || w.URLFile != tc.wantURLFile {
				t.Fatalf("webhook config = %+v, want url %q urlFile %q", w, tc.wantURL, tc.wantURLFile)
			}
			cm, err := ConfigMap(fs, in)
			if err != nil {
				t.Fatal(err) // whatever is rendered must pass the services' own validation
			}
			for key, doc := range cm.Data {
				if inCM := strings.Contains(doc, plainHook); inCM != (key == ConfigKey(Forms) && tc.wantURL != "") {
					t.Errorf("%s: the plain webhook URL is in the ConfigMap = %v", key, inCM)
				}
			}
			if tc.wantURLFile != "" && !strings.Contains(cm.Data[ConfigKey(Forms)], "urlFile: "+tc.wantURLFile) {
				t.Errorf("forms.yaml lacks the urlFile:\n%s", cm.Data[ConfigKey(Forms)])
			}

			// Mounted into forms only, and only its key; named in the checks the reconciler runs.
			for _, comp := range Components {
				var vol *corev1.SecretVolumeSource
				d := typed[appsv1.Deployment](t, Deployment(fs, comp, in))
				for _, v := range d.Spec.Template.Spec.Volumes {
					if v.Secret != nil && v.Secret.SecretName == "slack.hook" {
						vol = v.Secret
					}
				}
				if want := tc.wantMount && comp == Forms; (vol != nil) != want {
					t.Fatalf("%s mounts the webhook Secret = %v, want %v", comp, vol != nil, want)
				}
				if vol != nil && (len(vol.Items) != 1 || vol.Items[0].Key != "url" || vol.Items[0].Path != "url") {
					t.Errorf("the webhook Secret is mounted with items %+v, want only its key", vol.Items)
				}
				if vol != nil {
					mounted := false
					for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
						mounted = mounted || (m.MountPath == SecretsDir+"/slack.hook" && m.ReadOnly)
					}
					if !mounted {
						t.Errorf("no read-only mount at %s/slack.hook", SecretsDir)
					}
				}
			}
			var ref *SecretRef
			for _, r := range UserSecretRefs(fs) {
				if r.Field == "spec.forms.delivery.webhook.urlSecretRef" {
					ref = &r
				}
			}
			if (ref != nil) != tc.wantMount {
				t.Fatalf("UserSecretRefs names the webhook Secret = %v, want %v", ref != nil, tc.wantMount)
			}
			if ref != nil && (ref.Secret != "slack.hook" || ref.Key != "url" || !slices.Equal(ref.Components, []string{Forms}) || ref.Check == nil) {
				t.Errorf("ref = %+v", *ref)
			}
			if tc.wantMount != slices.Contains(ReferencedSecretNames(fs), "slack.hook") {
				t.Error("the Secret watch does not cover the webhook Secret")
			}
		})
	}
}

func TestWebhookSecretCheck_RefusesWhatTheFormsServiceRefuses(t *testing.T) {
	fs := base()
	fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{Webhook: &v1alpha1.WebhookDelivery{URLSecretRef: &v1alpha1.SecretKeySelector{Name: "h", Key: "url"}}}
	check := UserSecretRefs(fs)[0].Check
	for value, ok := range map[string]bool{
		plainHook + "\n":                                 true, // kubectl create secret --from-file keeps the newline
		"  " + plainHook + "  ":                          true,
		"http://hooks.internal/x":                        true,
		"hooks.slack.com/services/T000/B000/SECRETVALUE": false,
		"ftp://hooks.example/SECRETVALUE":                false,
		"\n":                                             false,
	} {
		err := check([]byte(value))
		if (err == nil) != ok {
			t.Errorf("%q: error %v, want ok=%v", value, err, ok)
		}
		if err != nil && strings.Contains(err.Error(), "SECRETVALUE") {
			t.Errorf("the message repeats the Secret's value: %v", err)
		}
	}
}

func TestRestartHash_WebhookSecretRollsFormsOnly(t *testing.T) {
	fs := base()
	fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{Webhook: &v1alpha1.WebhookDelivery{URLSecretRef: &v1alpha1.SecretKeySelector{Name: "hook", Key: "url"}}}
	digests := func(hook string) Inputs {
		return Inputs{SecretDigests: map[string]string{"hook": hook, "acme-signing-key": "k1", "acme-redis-password": "r1"}}
	}
	for _, c := range Components {
		changed := RestartHash(fs, c, digests("h1")) != RestartHash(fs, c, digests("h2"))
		if changed != (c == Forms) {
			t.Errorf("%s: a changed webhook Secret changes its restart hash = %v", c, changed)
		}
	}
}

// A rotation of the webhook signing secret: both Secret keys are mounted into forms, named in the checks
// the reconciler runs (a malformed old secret is refused like a new one), and rendered as secretFile and
// previousSecretFile, which the forms service's own validation accepts.
func TestWebhookSigningSecretRotation_BothSecretsMountedCheckedAndRendered(t *testing.T) {
	fs := base()
	fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{Webhook: &v1alpha1.WebhookDelivery{URL: plainHook}}
	fs.Spec.Forms.DataPolicy = &v1alpha1.FormsDataPolicy{
		WebhookSigningSecretRef:         &v1alpha1.SecretKeySelector{Name: "hook-new", Key: "secret"},
		WebhookPreviousSigningSecretRef: &v1alpha1.SecretKeySelector{Name: "hook-old", Key: "secret"},
	}
	w := ServiceConfig(fs, Forms, in).Forms.Delivery.Webhook
	if w == nil || w.SecretFile != SecretsDir+"/hook-new/secret" || w.PreviousSecretFile != SecretsDir+"/hook-old/secret" {
		t.Fatalf("webhook config = %+v", w)
	}
	if _, err := ConfigMap(fs, in); err != nil {
		t.Fatal(err)
	}
	var prev *SecretRef
	for _, r := range UserSecretRefs(fs) {
		if r.Field == "spec.forms.dataPolicy.webhookPreviousSigningSecretRef" {
			prev = &r
		}
	}
	if prev == nil || prev.Secret != "hook-old" || prev.Key != "secret" || !slices.Equal(prev.Components, []string{Forms}) || prev.Check == nil {
		t.Fatalf("the previous secret's ref = %+v", prev)
	}
	if prev.Check([]byte("not a whsec secret")) == nil {
		t.Error("a malformed previous secret passes the check")
	}
	for _, name := range []string{"hook-new", "hook-old"} {
		if !slices.Contains(ReferencedSecretNames(fs), name) {
			t.Errorf("the Secret watch does not cover %s", name)
		}
		mounted := false
		for _, v := range typed[appsv1.Deployment](t, Deployment(fs, Forms, in)).Spec.Template.Spec.Volumes {
			mounted = mounted || (v.Secret != nil && v.Secret.SecretName == name)
		}
		if !mounted {
			t.Errorf("forms does not mount %s", name)
		}
	}
}
