package render

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"slices"
	"sort"
	"strings"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

// SecretRef is one key of a Secret that a service reads from a mounted file.
type SecretRef struct {
	Secret string
	Key    string
	// Field is the spec field that names it, for messages a person reads ("spec.redis.passwordSecretRef").
	Field string
	// Components are the services that mount it.
	Components []string
	// Owned marks the Secrets the operator creates itself (signing key, managed Redis password).
	Owned bool
	// Check, when set, is what the service would refuse in the key's value at start-up. Its error must
	// not repeat the value.
	Check func(value []byte) error
}

// SecretPath is where a Secret's key is mounted in a pod.
func SecretPath(secret, key string) string { return SecretsDir + "/" + secret + "/" + key }

// UserSecretRefs are the Secrets the user names in the spec; the reconciler checks that each exists and
// holds its key before it rolls out pods that mount it.
func UserSecretRefs(fs *v1alpha1.FormsService) []SecretRef {
	var refs []SecretRef
	if r := fs.Spec.Redis.PasswordSecretRef; r != nil && !ManagedRedis(fs) {
		refs = append(refs, SecretRef{Secret: r.Name, Key: r.Key, Field: "spec.redis.passwordSecretRef", Components: Components})
	}
	if r := fs.Spec.Redis.CASecretRef; r != nil && !ManagedRedis(fs) {
		refs = append(refs, SecretRef{Secret: r.Name, Key: r.Key, Field: "spec.redis.caSecretRef", Components: Components,
			Check: checkCABundle})
	}
	if d := fs.Spec.Forms.Delivery; d != nil && d.SMTP != nil && d.SMTP.PasswordSecretRef != nil {
		r := d.SMTP.PasswordSecretRef
		components := []string{Forms}
		if authMails(fs) { // auth sends its own mail through the same relay
			components = append(components, Auth)
		}
		refs = append(refs, SecretRef{Secret: r.Name, Key: r.Key, Field: "spec.forms.delivery.smtp.passwordSecretRef", Components: components})
	}
	if d := fs.Spec.Forms.Delivery; d != nil && d.Webhook != nil && d.Webhook.URLSecretRef != nil {
		r := d.Webhook.URLSecretRef
		refs = append(refs, SecretRef{Secret: r.Name, Key: r.Key, Field: "spec.forms.delivery.webhook.urlSecretRef", Components: []string{Forms},
			Check: checkWebhookURL})
	}
	if p := fs.Spec.Forms.DataPolicy; p != nil && p.WebhookSigningSecretRef != nil {
		if d := fs.Spec.Forms.Delivery; d != nil && d.Webhook != nil {
			r := p.WebhookSigningSecretRef
			refs = append(refs, SecretRef{Secret: r.Name, Key: r.Key, Field: "spec.forms.dataPolicy.webhookSigningSecretRef", Components: []string{Forms},
				Check: checkWebhookSecret})
			if r := p.WebhookPreviousSigningSecretRef; r != nil {
				refs = append(refs, SecretRef{Secret: r.Name, Key: r.Key, Field: "spec.forms.dataPolicy.webhookPreviousSigningSecretRef", Components: []string{Forms},
					Check: checkWebhookSecret})
			}
		}
	}
	for _, st := range fs.Spec.Forms.Sites {
		if b := st.BotCheck; b != nil {
			refs = append(refs, SecretRef{Secret: b.SecretRef.Name, Key: b.SecretRef.Key,
				Field: "spec.forms.sites[" + string(st.Origin) + "].botCheck.secretRef", Components: []string{Forms}})
		}
	}
	refs = append(refs, declaredSecretRefs(fs)...) // forms_declared.go
	if m := fs.Spec.Auth.MFA; m != nil && m.SecretKeyRef != nil {
		r := m.SecretKeyRef
		refs = append(refs, SecretRef{Secret: r.Name, Key: r.Key, Field: "spec.auth.mfa.secretKeyRef", Components: []string{Auth}})
	}
	if au := fs.Spec.Auth.Audit; au != nil && au.Webhook != nil {
		w := au.Webhook
		refs = append(refs, SecretRef{Secret: w.SigningSecretRef.Name, Key: w.SigningSecretRef.Key, Field: "spec.auth.audit.webhook.signingSecretRef",
			Components: []string{Auth}, Check: checkWebhookSecret})
		if r := w.PreviousSigningSecretRef; r != nil {
			refs = append(refs, SecretRef{Secret: r.Name, Key: r.Key, Field: "spec.auth.audit.webhook.previousSigningSecretRef",
				Components: []string{Auth}, Check: checkWebhookSecret})
		}
	}
	for _, c := range fs.Spec.Auth.Connectors {
		if r := c.ClientSecretRef; r != (v1alpha1.SecretKeySelector{}) {
			refs = append(refs, SecretRef{Secret: r.Name, Key: r.Key, Field: ConnectorSecretField(c.ID), Components: []string{Auth}})
		}
		refs = append(refs, ldapSecretRefs(c)...) // connectors_ldap.go
		refs = append(refs, samlSecretRefs(c)...) // connectors_saml.go
	}
	for _, c := range fs.Spec.OAuthClients {
		if c.SecretRef != nil {
			refs = append(refs, SecretRef{Secret: c.SecretRef.Name, Key: c.SecretRef.Key, Field: "spec.oauthClients[" + c.ClientID + "].secretRef", Components: []string{Auth}})
		}
	}
	return refs
}

// ConnectorSecretField is the field that names connector id's client secret, as messages say it.
func ConnectorSecretField(id string) string {
	return "spec.auth.connectors[" + id + "].clientSecretRef"
}

// ReferencedSecretNames lists every Secret a FormsService names or owns: the only Secrets the operator
// reads or writes for it.
func ReferencedSecretNames(fs *v1alpha1.FormsService) []string {
	n := NamesOf(fs)
	names := []string{n.SigningKey}
	if ManagedRedis(fs) {
		names = append(names, n.RedisPassword)
	}
	for _, r := range UserSecretRefs(fs) {
		names = append(names, r.Secret)
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// secretMount is one Secret volume of a pod: the keys it projects (nil: all of them).
type secretMount struct {
	Secret string
	Keys   []string
}

// secretMounts returns the Secret volumes a component's pods need, sorted by Secret name so that the pod
// template is stable.
func secretMounts(fs *v1alpha1.FormsService, component string) []secretMount {
	keys := map[string][]string{}
	add := func(secret, key string) {
		if !slices.Contains(keys[secret], key) {
			keys[secret] = append(keys[secret], key)
		}
	}
	n := NamesOf(fs)
	if ManagedRedis(fs) {
		add(n.RedisPassword, RedisPasswordKey)
	}
	for _, r := range UserSecretRefs(fs) {
		if slices.Contains(r.Components, component) {
			add(r.Secret, r.Key)
		}
	}
	var out []secretMount
	for s, ks := range keys {
		sort.Strings(ks)
		out = append(out, secretMount{Secret: s, Keys: ks})
	}
	if component == Auth {
		// The whole signing-key Secret: the previous key appears in it during a rotation.
		out = append(out, secretMount{Secret: n.SigningKey})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Secret < out[j].Secret })
	return out
}

// secretVolumeName is a valid, stable volume name for a Secret (Secret names may hold dots and be long).
func secretVolumeName(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "secret-" + hex.EncodeToString(sum[:6])
}

// checkWebhookSecret is the forms service's start-up check of a webhook signing secret file (trimmed).
func checkWebhookSecret(value []byte) error {
	return config.CheckWebhookSecret(strings.TrimSpace(string(value)))
}

// checkCABundle is the services' start-up check of redis.caFile: at least one PEM certificate.
func checkCABundle(value []byte) error {
	if !x509.NewCertPool().AppendCertsFromPEM(value) {
		return errors.New("no PEM certificate in it")
	}
	return nil
}

// checkWebhookURL is the forms service's start-up check of a webhook URL file (trimmed, http or https).
func checkWebhookURL(value []byte) error {
	return config.CheckWebhookURL(strings.TrimSpace(string(value)))
}
