package render

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A SAML connector renders into auth.connectors[].saml with every field, our SP key and certificate
// and the IdP's metadata certificate as the files their Secrets are mounted at in the auth pods (and
// only there); no client secret is asked
// for, and the rendered file is one the auth service loads (D76).
func TestConnectors_SAMLRendersWithItsKeyPairMounted(t *testing.T) {
	fs := base()
	tlsRef := func(key string) v1alpha1.SecretKeySelector {
		return v1alpha1.SecretKeySelector{Name: "saml-sp", Key: key}
	}
	fs.Spec.Auth.Connectors = []v1alpha1.ConnectorSpec{{ID: "okta", Type: "saml", Name: "Acme SSO", SAML: &v1alpha1.SAMLConnectorSpec{
		MetadataURL: "https://acme.okta.com/app/x/sso/saml/metadata", KeyRef: tlsRef("tls.key"), CertificateRef: tlsRef("tls.crt"),
		MetadataCertificateRef: &v1alpha1.SecretKeySelector{Name: "okta-signer", Key: "metadata.pem"},
		NameIDFormat:           "emailAddress", SignAuthnRequests: true, ClockSkew: &metav1.Duration{Duration: time.Minute},
		SingleLogout: ptr.To(false),
		Attributes:   &v1alpha1.SAMLAttributes{Email: "email", Groups: "groups"}}}}
	fs.Spec.OAuthClients[0].Connectors = []string{"okta"}
	text, err := RenderConfig(fs, Auth, in)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Auth.Connectors[0]
	if got.Type != config.TypeSAML || got.ClientSecretFile != "" || got.SAML == nil || got.SAML.KeyFile != SecretsDir+"/saml-sp/tls.key" ||
		got.SAML.CertificateFile != SecretsDir+"/saml-sp/tls.crt" || got.SAML.MetadataURL != "https://acme.okta.com/app/x/sso/saml/metadata" ||
		got.SAML.MetadataCertificateFile != SecretsDir+"/okta-signer/metadata.pem" || got.SAML.NameIDFormat != "emailAddress" || !got.SAML.SignAuthnRequests || got.SAML.ClockSkew.D() != time.Minute || got.SAML.Attributes.Groups != "groups" ||
		got.SAML.SingleLogout == nil || *got.SAML.SingleLogout {
		t.Fatalf("rendered %+v %+v", got, got.SAML)
	}
	var mounted []string
	for _, v := range typed[appsv1.Deployment](t, Deployment(fs, Auth, in)).Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "saml-sp" {
			for _, k := range v.Secret.Items {
				mounted = append(mounted, k.Path)
			}
		}
	}
	slices.Sort(mounted)
	if !slices.Equal(mounted, []string{"tls.crt", "tls.key"}) {
		t.Errorf("the auth pod mounts %v of saml-sp", mounted)
	}
	signer := false
	for _, v := range typed[appsv1.Deployment](t, Deployment(fs, Auth, in)).Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "okta-signer" && len(v.Secret.Items) == 1 && v.Secret.Items[0].Key == "metadata.pem" {
			signer = true
		}
	}
	if !signer {
		t.Error("the auth pod does not mount the IdP's metadata certificate (okta-signer/metadata.pem)")
	}
	for _, r := range UserSecretRefs(fs) {
		if r.Secret == "" || r.Field == ConnectorSecretField("okta") {
			t.Errorf("a SAML connector names a client secret: %+v", r)
		}
	}
}
