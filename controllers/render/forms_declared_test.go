package render

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

// withDeclaredForm is base with one declared form that uses every setting: two webhooks, one from a
// Secret with its signing secrets, one by plain URL.
func withDeclaredForm() *v1alpha1.FormsService {
	fs := base()
	fs.Spec.Ingress = &v1alpha1.IngressSpec{Host: "id.acme.example", FormsHost: "forms.acme.example"}
	fs.Spec.Forms.Declared = []v1alpha1.DeclaredForm{{
		ID: "demo", Title: "Request a demo", AdditionalFields: "keep", Origins: []string{"https://www.acme.example"}, Unique: "email",
		Fields: []v1alpha1.FormField{
			{Name: "name", Label: "Your name", Type: "text", Required: true, MinLength: 2, MaxLength: 120},
			{Name: "email", Type: "email", Required: true},
			{Name: "seats", Type: "number", Min: "1", Max: "500"},
			{Name: "products", Type: "manyof", Choices: []v1alpha1.FormChoice{"forms", "auth"}, MaxChoices: 1},
		},
		Notify: &v1alpha1.FormNotifySpec{
			MailTo: []v1alpha1.MailAddress{"sales@acme.example"},
			Webhooks: []v1alpha1.FormWebhook{
				{URLSecretRef: &v1alpha1.SecretKeySelector{Name: "demo-hook", Key: "url"},
					SigningSecretRef:         &v1alpha1.SecretKeySelector{Name: "demo-hook", Key: "secret"},
					PreviousSigningSecretRef: &v1alpha1.SecretKeySelector{Name: "demo-hook-old", Key: "secret"}, Format: "markdown"},
				{URL: "https://chat.acme.example/hooks/demo"},
			},
		},
		Autoresponder: &v1alpha1.AutoresponderSpec{Subject: "Thanks", Text: "Hello {{name}}"},
		ThanksURL:     "/thanks", ErrorURL: "https://www.acme.example/oops", Durability: "primary",
	}}
	return fs
}

// spec.forms.declared reaches forms.yaml field by field; a webhook's address and secrets from Secrets are
// files, never the values, and the file loads in the service (RenderConfig validates it).
func TestServiceConfig_DeclaredFormsRenderedFieldByField(t *testing.T) {
	fs := withDeclaredForm()
	s, err := RenderConfig(fs, Forms, in)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Forms.Declared) != 1 {
		t.Fatalf("declared %+v", c.Forms.Declared)
	}
	f := c.Forms.Declared[0]
	if f.ID != "demo" || f.Title != "Request a demo" || !f.Keep() || !slices.Equal(f.Origins, []string{"https://www.acme.example"}) ||
		f.Unique != "email" || f.ThanksURL != "/thanks" || f.ErrorURL != "https://www.acme.example/oops" || f.Durability != config.DurabilityPrimary {
		t.Errorf("form %+v", f)
	}
	want := []config.FormField{
		{Name: "name", Label: "Your name", Type: config.FieldText, Required: true, MinLength: 2, MaxLength: 120},
		{Name: "email", Type: config.FieldEmail, Required: true},
		{Name: "seats", Type: config.FieldNumber, Min: "1", Max: "500"},
		{Name: "products", Type: config.FieldManyOf, Choices: []string{"forms", "auth"}, MaxChoices: 1},
	}
	if !slices.EqualFunc(f.Fields, want, func(a, b config.FormField) bool {
		return a.Name == b.Name && a.Label == b.Label && a.Type == b.Type && a.Required == b.Required && a.MinLength == b.MinLength &&
			a.MaxLength == b.MaxLength && a.Min == b.Min && a.Max == b.Max && slices.Equal(a.Choices, b.Choices) && a.MaxChoices == b.MaxChoices
	}) {
		t.Errorf("fields %+v", f.Fields)
	}
	if n := f.Notify; n == nil || !slices.Equal(n.MailTo, []string{"sales@acme.example"}) || len(n.Webhooks) != 2 {
		t.Fatalf("notify %+v", f.Notify)
	}
	secret := config.Webhook{URLFile: SecretsDir + "/demo-hook/url", SecretFile: SecretsDir + "/demo-hook/secret",
		PreviousSecretFile: SecretsDir + "/demo-hook-old/secret", Format: "markdown"}
	if w := f.Notify.Webhooks; w[0] != secret || w[1] != (config.Webhook{URL: "https://chat.acme.example/hooks/demo"}) {
		t.Errorf("webhooks %+v", w)
	}
	if a := f.Autoresponder; a == nil || a.Field != "" || a.Subject != "Thanks" || a.Text != "Hello {{name}}" {
		t.Errorf("autoresponder %+v", f.Autoresponder)
	}
	for _, comp := range []string{Auth, Health} {
		if got := ServiceConfig(fs, comp, in).Forms.Declared; got != nil {
			t.Errorf("%s got the declared forms: %+v", comp, got)
		}
	}
	if ServiceConfig(base(), Forms, in).Forms.Declared != nil {
		t.Error("declared forms without spec.forms.declared")
	}
}

// A declared webhook's Secrets are checked and mounted like spec.forms.delivery.webhook's: into the
// forms pods only, each key by name; a changed one rolls forms only.
func TestDeclaredWebhookSecrets_CheckedMountedIntoFormsOnly(t *testing.T) {
	fs := withDeclaredForm()
	refs := map[string]SecretRef{}
	for _, r := range UserSecretRefs(fs) {
		refs[r.Field] = r
	}
	at := "spec.forms.declared[demo].notify.webhooks[0]."
	for field, want := range map[string]string{"urlSecretRef": "demo-hook/url", "signingSecretRef": "demo-hook/secret",
		"previousSigningSecretRef": "demo-hook-old/secret"} {
		r, ok := refs[at+field]
		if !ok || r.Secret+"/"+r.Key != want || !slices.Equal(r.Components, []string{Forms}) || r.Check == nil {
			t.Errorf("%s: %+v", field, r)
		}
	}
	if err := refs[at+"urlSecretRef"].Check([]byte("hooks.slack.com/x")); err == nil {
		t.Error("a URL file that is no http(s) URL passes the check")
	}
	if err := refs[at+"urlSecretRef"].Check([]byte(" https://hooks.slack.com/x\n")); err != nil {
		t.Errorf("a good URL file: %v", err)
	}
	if err := refs[at+"signingSecretRef"].Check([]byte("whsec_short")); err == nil {
		t.Error("a signing secret of a few bytes passes the check")
	}
	if !slices.Contains(ReferencedSecretNames(fs), "demo-hook") || !slices.Contains(ReferencedSecretNames(fs), "demo-hook-old") {
		t.Errorf("referenced Secrets %v", ReferencedSecretNames(fs))
	}

	mounted := func(component string) map[string][]string {
		out := map[string][]string{}
		for _, v := range typed[appsv1.Deployment](t, Deployment(fs, component, in)).Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				for _, k := range v.Secret.Items {
					out[v.Secret.SecretName] = append(out[v.Secret.SecretName], k.Key)
				}
			}
		}
		return out
	}
	forms := mounted(Forms)
	if !slices.Equal(forms["demo-hook"], []string{"secret", "url"}) || !slices.Equal(forms["demo-hook-old"], []string{"secret"}) {
		t.Errorf("forms mounts %v", forms)
	}
	for _, comp := range []string{Auth, Health} {
		if m := mounted(comp); m["demo-hook"] != nil || m["demo-hook-old"] != nil {
			t.Errorf("%s mounts a declared webhook's Secret: %v", comp, m)
		}
	}
	for _, comp := range Components {
		h1 := RestartHash(fs, comp, Inputs{SecretDigests: map[string]string{"demo-hook": "a"}})
		h2 := RestartHash(fs, comp, Inputs{SecretDigests: map[string]string{"demo-hook": "b"}})
		if (h1 != h2) != (comp == Forms) {
			t.Errorf("%s: a changed webhook Secret changed the hash: %v", comp, h1 != h2)
		}
	}
}

// /f/ (Prefix) reaches the forms through the Ingress and the Gateway, on the forms' host, only when forms
// are declared; nothing else of the forms' paths changes.
func TestRoutes_DeclaredFormsRoutedToTheForms(t *testing.T) {
	if DeclaredFormsPrefix != "/f/" {
		t.Fatalf("DeclaredFormsPrefix %q: the forms take POST /f/<id> (services/forms/routes.go)", DeclaredFormsPrefix)
	}
	ingressPaths := func(fs *v1alpha1.FormsService) map[string]string {
		out := map[string]string{}
		for _, r := range typed[networkingv1.Ingress](t, Ingress(fs)).Spec.Rules {
			for _, p := range r.HTTP.Paths {
				out[r.Host+p.Path] = p.Backend.Service.Name + ":" + string(*p.PathType)
			}
		}
		return out
	}
	fs := withDeclaredForm()
	got := ingressPaths(fs)
	if got["forms.acme.example/f/"] != "acme-forms:Prefix" || got["id.acme.example/f/"] != "" {
		t.Errorf("ingress with declared forms: %v", got)
	}
	if got["forms.acme.example/contact"] != "acme-forms:Exact" || len(got) != 3+len(mainPathsOf(got)) {
		t.Errorf("ingress: %v", got)
	}
	fs.Spec.Ingress.FormsHost = ""
	if got := ingressPaths(fs); got["id.acme.example/f/"] != "acme-forms:Prefix" {
		t.Errorf("ingress on one host: %v", got)
	}
	fs.Spec.Forms.Declared = nil
	if got := ingressPaths(fs); got["id.acme.example/f/"] != "" {
		t.Errorf("/f/ routed without declared forms: %v", got)
	}

	routeRules := func(fs *v1alpha1.FormsService) map[string][]string {
		out := map[string][]string{}
		for _, ac := range HTTPRoutes(fs) {
			r := typed[gatewayv1.HTTPRoute](t, ac)
			for _, rule := range r.Spec.Rules {
				m := rule.Matches[0].Path
				out[r.Name] = append(out[r.Name], string(*m.Type)+" "+*m.Value+" -> "+string(rule.BackendRefs[0].Name))
			}
		}
		return out
	}
	fs = withDeclaredForm()
	fs.Spec.Ingress = nil
	fs.Spec.Gateway = &v1alpha1.GatewaySpec{Host: "id.acme.example", FormsHost: "forms.acme.example", ParentRefs: []v1alpha1.GatewayParentRef{{Name: "gw"}}}
	rules := routeRules(fs)
	if !slices.Contains(rules["acme-forms"], "PathPrefix /f/ -> acme-forms") || slices.ContainsFunc(rules["acme"], func(s string) bool { return strings.Contains(s, "/f/") }) {
		t.Errorf("gateway with declared forms: %v", rules)
	}
	fs.Spec.Forms.Declared = nil
	if rules := routeRules(fs); slices.Contains(rules["acme-forms"], "PathPrefix /f/ -> acme-forms") {
		t.Errorf("gateway routes /f/ without declared forms: %v", rules)
	}
}

// mainPathsOf lists the paths of the main host (auth and health).
func mainPathsOf(paths map[string]string) []string {
	var out []string
	for p := range paths {
		if strings.HasPrefix(p, "id.acme.example/") {
			out = append(out, p)
		}
	}
	return out
}

// spec.forms.files reaches the forms pods as the backups' Jobs get their bucket: the endpoint and region
// as environment, the credentials Secret's keys through envFrom (optional: without it only the file
// forms fail); the link key is a checked, mounted Secret file named by forms.files.linkKeyFile. The
// other services get none of it.
func TestFormFiles_BucketReachesTheFormsPodsOnly(t *testing.T) {
	fs := withDeclaredForm()
	fs.Spec.Forms.Declared[0].Fields = append(fs.Spec.Forms.Declared[0].Fields,
		v1alpha1.FormField{Name: "cv", Type: "file", MaxSize: 1 << 20, MaxFiles: 2, Accept: []v1alpha1.FileType{"application/pdf"}})
	fs.Spec.Forms.Declared[0].MaxFileBytes = 2 << 20
	fs.Spec.Forms.Files = &v1alpha1.FormFilesSpec{
		S3:               v1alpha1.S3Location{Endpoint: "http://s3.storage:7070", Bucket: "form-uploads", Region: "eu-1", CredentialsSecretRef: corev1.LocalObjectReference{Name: "uploads-s3"}},
		Prefix:           "site/",
		LinkKeySecretRef: v1alpha1.SecretKeySelector{Name: "form-links", Key: "key"},
	}
	cfg, err := RenderConfig(fs, Forms, in)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	f := c.Forms.Files
	if f == nil || f.Bucket != "form-uploads" || f.Prefix != "site/" || f.LinkKeyFile != SecretPath("form-links", "key") {
		t.Fatalf("forms.files %+v", f)
	}
	if cv := c.Forms.Declared[0].Fields[4]; cv.Type != config.FieldFile || cv.MaxSize != 1<<20 || cv.MaxFiles != 2 || !slices.Equal(cv.Accept, []string{"application/pdf"}) ||
		c.Forms.Declared[0].MaxFileBytes != 2<<20 {
		t.Errorf("the file field %+v", cv)
	}
	var key SecretRef
	for _, r := range UserSecretRefs(fs) {
		if r.Field == "spec.forms.files.linkKeySecretRef" {
			key = r
		}
	}
	if key.Secret != "form-links" || !slices.Equal(key.Components, []string{Forms}) || key.Check == nil ||
		key.Check([]byte(strings.Repeat("k", 31)+"\n")) == nil || key.Check([]byte(strings.Repeat("k", 32))) != nil {
		t.Errorf("the link key's reference %+v", key)
	}
	for _, comp := range Components {
		ctr := typed[appsv1.Deployment](t, Deployment(fs, comp, in)).Spec.Template.Spec.Containers[0]
		env := map[string]string{}
		for _, e := range ctr.Env {
			env[e.Name] = e.Value
		}
		var from []string
		for _, e := range ctr.EnvFrom {
			if e.SecretRef != nil && e.SecretRef.Optional != nil && *e.SecretRef.Optional {
				from = append(from, e.SecretRef.Name)
			}
		}
		got := env["AWS_ENDPOINT_URL_S3"] == "http://s3.storage:7070" && env["AWS_REGION"] == "eu-1" && slices.Equal(from, []string{"uploads-s3"})
		if got != (comp == Forms) {
			t.Errorf("%s: env %v, envFrom %v", comp, env, from)
		}
	}
}

// The console's download links (D83) are the forms service's link route on the forms' own host: the
// auth service's configuration names that host, and neither its configuration nor its pods get the link
// key or the bucket. The forms' own configuration names it too, for the links in mails.
func TestFormFiles_AuthKnowsTheFormsHostButNotTheLinkKey(t *testing.T) {
	fs := withDeclaredForm()
	fs.Spec.Ingress = &v1alpha1.IngressSpec{Host: "id.acme.example", FormsHost: "forms.acme.example"}
	fs.Spec.Forms.Files = &v1alpha1.FormFilesSpec{
		S3:               v1alpha1.S3Location{Endpoint: "http://s3.storage:7070", Bucket: "form-uploads", CredentialsSecretRef: corev1.LocalObjectReference{Name: "uploads-s3"}},
		LinkKeySecretRef: v1alpha1.SecretKeySelector{Name: "form-links", Key: "key"},
	}
	for _, comp := range []string{Auth, Forms} {
		out, err := RenderConfig(fs, comp, in)
		if err != nil {
			t.Fatal(err)
		}
		c, err := config.Parse([]byte(out))
		if err != nil {
			t.Fatal(err)
		}
		if c.FormsURL() != "https://forms.acme.example" {
			t.Errorf("%s: the forms' URL is %q", comp, c.FormsURL())
		}
		if comp == Auth && (c.Forms.Files != nil || strings.Contains(out, "form-links") || strings.Contains(out, "form-uploads")) {
			t.Errorf("the auth service's configuration names the files' key or bucket:\n%s", out)
		}
	}
	for _, v := range typed[appsv1.Deployment](t, Deployment(fs, Auth, in)).Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "form-links" {
			t.Errorf("the link key is mounted into the auth pods: %+v", v)
		}
	}
	// On one host the links use publicURL.
	fs.Spec.Ingress.FormsHost = ""
	if c := ServiceConfig(fs, Auth, in); c.FormsURL() != PublicURL(fs) || c.Forms.PublicURL != "" {
		t.Errorf("on one host the auth service's forms URL is %q", c.FormsURL())
	}
}
