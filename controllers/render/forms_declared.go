package render

import (
	"bytes"
	"errors"
	"strconv"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

// DeclaredFormsPrefix is where the declared forms are posted (/f/<id>, services/forms/routes.go). The
// Ingress and the HTTPRoutes route it to forms only when spec.forms.declared names a form.
const DeclaredFormsPrefix = "/f/"

// declaredOptIn reports whether a declared form asks for the double opt-in (its links need the forms'
// public URL).
func declaredOptIn(fs *v1alpha1.FormsService) bool {
	for _, f := range fs.Spec.Forms.Declared {
		if f.DoubleOptIn != nil {
			return true
		}
	}
	return false
}

// hasDeclaredForms reports whether the resource declares forms of its own.
func hasDeclaredForms(fs *v1alpha1.FormsService) bool { return len(fs.Spec.Forms.Declared) > 0 }

// declaredForms renders spec.forms.declared as the service's forms.declared, field by field. A webhook's
// URL and signing secrets become the files their Secrets are mounted as (declaredSecretRefs).
func declaredForms(specs []v1alpha1.DeclaredForm) []config.DeclaredForm {
	var out []config.DeclaredForm
	for _, s := range specs {
		f := config.DeclaredForm{
			ID: s.ID, Title: s.Title, AdditionalFields: s.AdditionalFields, Origins: s.Origins, Unique: s.Unique,
			ThanksURL: s.ThanksURL, ErrorURL: s.ErrorURL, Durability: config.Durability(s.Durability),
			Retention: duration(s.Retention), Spam: spamConfig(s.Spam), MaxFileBytes: s.MaxFileBytes,
			BotCheck: botCheck(s.BotCheck),
		}
		if d := s.DoubleOptIn; d != nil {
			f.DoubleOptIn = &config.DoubleOptIn{ConfirmWithin: duration(d.ConfirmWithin), ResendAfter: duration(d.ResendAfter)}
		}
		for _, fd := range s.Fields {
			field := config.FormField{
				Name: fd.Name, Label: fd.Label, Type: config.FieldType(fd.Type), Required: fd.Required,
				MinLength: int(fd.MinLength), MaxLength: int(fd.MaxLength), Min: fd.Min, Max: fd.Max,
				MaxChoices: int(fd.MaxChoices), MaxSize: fd.MaxSize, MaxFiles: int(fd.MaxFiles),
			}
			for _, a := range fd.Accept {
				field.Accept = append(field.Accept, string(a))
			}
			for _, c := range fd.Choices {
				field.Choices = append(field.Choices, string(c))
			}
			f.Fields = append(f.Fields, field)
		}
		if n := s.Notify; n != nil {
			f.Notify = &config.FormNotify{}
			for _, to := range n.MailTo {
				f.Notify.MailTo = append(f.Notify.MailTo, string(to))
			}
			for _, w := range n.Webhooks {
				f.Notify.Webhooks = append(f.Notify.Webhooks, declaredWebhook(w))
			}
		}
		if a := s.Autoresponder; a != nil {
			f.Autoresponder = &config.Autoresponder{Field: a.Field, Subject: a.Subject, Text: a.Text}
		}
		out = append(out, f)
	}
	return out
}

// declaredWebhook is one webhook of a declared form; its address stays out of the ConfigMap when it
// comes from a Secret.
func declaredWebhook(w v1alpha1.FormWebhook) config.Webhook {
	c := config.Webhook{Format: w.Format}
	if r := w.URLSecretRef; r != nil {
		c.URLFile = SecretPath(r.Name, r.Key)
	} else {
		c.URL = w.URL
	}
	if r := w.SigningSecretRef; r != nil {
		c.SecretFile = SecretPath(r.Name, r.Key)
	}
	if r := w.PreviousSigningSecretRef; r != nil {
		c.PreviousSecretFile = SecretPath(r.Name, r.Key)
	}
	return c
}

// formFiles renders spec.forms.files as forms.files: the bucket, and the link key as the file its
// Secret is mounted as. The endpoint and credentials reach the forms pods as environment (formFilesEnv).
func formFiles(s *v1alpha1.FormFilesSpec) *config.FormFiles {
	if s == nil {
		return nil
	}
	return &config.FormFiles{Bucket: s.S3.Bucket, Prefix: s.Prefix, LinkTTL: duration(s.LinkTTL),
		LinkKeyFile: SecretPath(s.LinkKeySecretRef.Name, s.LinkKeySecretRef.Key)}
}

// formFilesEnv gives the forms container the bucket's endpoint, region and credentials as the backup
// Jobs get them (AWS_ENDPOINT_URL_S3, AWS_REGION, and the credentials Secret's keys through envFrom).
// The Secret is optional to the pod: without it only the forms with file fields answer 502 (and say
// why in the log), rather than every form failing to start.
func formFilesEnv(fs *v1alpha1.FormsService, container *corev1ac.ContainerApplyConfiguration) {
	f := fs.Spec.Forms.Files
	if f == nil {
		return
	}
	container.WithEnv(corev1ac.EnvVar().WithName("AWS_ENDPOINT_URL_S3").WithValue(f.S3.Endpoint))
	if f.S3.Region != "" {
		container.WithEnv(corev1ac.EnvVar().WithName("AWS_REGION").WithValue(f.S3.Region))
	}
	container.WithEnvFrom(corev1ac.EnvFromSource().WithSecretRef(
		corev1ac.SecretEnvSource().WithName(f.S3.CredentialsSecretRef.Name).WithOptional(true)))
}

// FilesCredentialKeys are the keys of spec.forms.files' credentials Secret that the forms service needs
// (services/platform/objectstore: a static key pair; AWS_SESSION_TOKEN is optional).
var FilesCredentialKeys = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}

// FilesCredentialsDigestKey is where Inputs.SecretDigests keeps the digest of the files' credentials
// Secret (all its keys, as envFrom passes them all): apart from the Secret's name, whose mounted keys
// may be digested too.
func FilesCredentialsDigestKey(fs *v1alpha1.FormsService) string {
	if f := fs.Spec.Forms.Files; f != nil {
		return "envFrom/" + f.S3.CredentialsSecretRef.Name
	}
	return ""
}

// checkLinkKey is what the forms service needs of the link key: 32 bytes or more once trimmed.
func checkLinkKey(b []byte) error {
	if len(bytes.TrimSpace(b)) < config.MinLinkKey {
		return errors.New("the link key must have at least 32 bytes")
	}
	return nil
}

// declaredSecretRefs are the Secrets the declared forms' bot checks and webhooks name, mounted into the forms pods and
// checked as the service checks them at start-up (an http(s) URL, a Standard Webhooks secret), and the
// files' link key.
func declaredSecretRefs(fs *v1alpha1.FormsService) []SecretRef {
	var refs []SecretRef
	if f := fs.Spec.Forms.Files; f != nil {
		refs = append(refs, SecretRef{Secret: f.LinkKeySecretRef.Name, Key: f.LinkKeySecretRef.Key,
			Field: "spec.forms.files.linkKeySecretRef", Components: []string{Forms}, Check: checkLinkKey})
	}
	for _, f := range fs.Spec.Forms.Declared {
		if b := f.BotCheck; b != nil {
			refs = append(refs, SecretRef{Secret: b.SecretRef.Name, Key: b.SecretRef.Key,
				Field: "spec.forms.declared[" + f.ID + "].botCheck.secretRef", Components: []string{Forms}})
		}
		if f.Notify == nil {
			continue
		}
		for i, w := range f.Notify.Webhooks {
			at := "spec.forms.declared[" + f.ID + "].notify.webhooks[" + strconv.Itoa(i) + "]."
			for _, r := range []struct {
				ref   *v1alpha1.SecretKeySelector
				field string
				check func([]byte) error
			}{
				{w.URLSecretRef, "urlSecretRef", checkWebhookURL},
				{w.SigningSecretRef, "signingSecretRef", checkWebhookSecret},
				{w.PreviousSigningSecretRef, "previousSigningSecretRef", checkWebhookSecret},
			} {
				if r.ref != nil {
					refs = append(refs, SecretRef{Secret: r.ref.Name, Key: r.ref.Key, Field: at + r.field,
						Components: []string{Forms}, Check: r.check})
				}
			}
		}
	}
	return refs
}
