package render

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

func base() *v1alpha1.FormsService {
	return &v1alpha1.FormsService{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", Namespace: "prod"},
		Spec: v1alpha1.FormsServiceSpec{
			PublicURL:      "https://id.acme.example",
			AllowedOrigins: []v1alpha1.Origin{"https://www.acme.example"},
			OAuthClients: []v1alpha1.OAuthClient{{
				ClientID: "web", RedirectURIs: []v1alpha1.RedirectURI{"https://app.acme.example/cb"},
			}},
		},
	}
}

var in = Inputs{Image: "img:1"}

func TestServiceConfig(t *testing.T) {
	cases := []struct {
		name      string
		mutate    func(*v1alpha1.FormsService)
		in        Inputs
		component string
		check     func(t *testing.T, c *config.Config)
	}{
		{"managed redis with its generated password", nil, in, Forms, func(t *testing.T, c *config.Config) {
			if !slices.Equal(c.Redis.Addrs, []string{"acme-redis.prod.svc:6379"}) || c.Redis.PasswordFile != SecretsDir+"/acme-redis-password/password" {
				t.Errorf("redis = %+v", c.Redis)
			}
		}},
		{"external standalone redis", func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"r:6380"}, Mode: v1alpha1.RedisStandalone, DB: 3, TLS: true, Username: "app",
				PasswordSecretRef: &v1alpha1.SecretKeySelector{Name: "rs", Key: "pw"}}
		}, in, Auth, func(t *testing.T, c *config.Config) {
			want := config.Redis{Addrs: []string{"r:6380"}, DB: 3, TLS: true, Username: "app", PasswordFile: SecretsDir + "/rs/pw"}
			if c.Redis.URL != "" || !slices.Equal(c.Redis.Addrs, want.Addrs) || c.Redis.DB != 3 || !c.Redis.TLS || c.Redis.Username != "app" ||
				c.Redis.PasswordFile != want.PasswordFile || c.Redis.Cluster || c.Redis.MasterName != "" {
				t.Errorf("redis = %+v", c.Redis)
			}
		}},
		{"cluster redis", func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"a:6379", "b:6379"}, Mode: v1alpha1.RedisCluster}
		}, in, Health, func(t *testing.T, c *config.Config) {
			if !c.Redis.Cluster || len(c.Redis.Addrs) != 2 || c.Redis.PasswordFile != "" {
				t.Errorf("redis = %+v", c.Redis)
			}
		}},
		{"sentinel redis", func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"s:26379"}, Mode: v1alpha1.RedisSentinel, MasterName: "mymaster"}
		}, in, Forms, func(t *testing.T, c *config.Config) {
			if c.Forms.Durability != "" {
				t.Errorf("durability %q for a Redis the operator does not run, want the service's default", c.Forms.Durability)
			}
			if c.Redis.MasterName != "mymaster" || c.Redis.Cluster {
				t.Errorf("redis = %+v", c.Redis)
			}
		}},
		{"forms gets delivery and rate limit, no auth section", func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.RateLimitPerMinute = ptr.To[int32](0)
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{
				SMTP: &v1alpha1.SMTPDelivery{Address: "smtp:587", From: "forms@acme.example", To: []string{"team@acme.example"},
					Username: "u", PasswordSecretRef: &v1alpha1.SecretKeySelector{Name: "smtp", Key: "password"}, StartTLS: true},
				Webhook: &v1alpha1.WebhookDelivery{URL: "https://hooks.example/x"},
			}
		}, in, Forms, func(t *testing.T, c *config.Config) {
			if c.Forms.Durability != config.DurabilityMachine {
				t.Errorf("durability %q with the managed Redis, want machine", c.Forms.Durability)
			}
			if c.Forms.RateLimit() != 0 {
				t.Errorf("rate limit %d, want 0 (off)", c.Forms.RateLimit())
			}
			s := c.Forms.Delivery.SMTP
			if s == nil || s.Addr != "smtp:587" || s.PasswordFile != SecretsDir+"/smtp/password" || !s.StartTLS || s.To[0] != "team@acme.example" {
				t.Errorf("smtp = %+v", s)
			}
			if c.Forms.Delivery.Webhook == nil || c.Forms.Delivery.Webhook.URL != "https://hooks.example/x" {
				t.Errorf("webhook = %+v", c.Forms.Delivery.Webhook)
			}
			if len(c.Auth.Clients) != 0 || c.Auth.SigningKeyFile != "" {
				t.Errorf("forms got the auth section: %+v", c.Auth)
			}
		}},
		{"forms gets the data policy: durability, retention, delivery limits, webhook signing secrets (new and previous)", func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{Webhook: &v1alpha1.WebhookDelivery{URL: "https://hooks.example/x"}}
			fs.Spec.Forms.DataPolicy = &v1alpha1.FormsDataPolicy{
				Durability: "primary", ContactRetention: &metav1.Duration{Duration: 90 * 24 * time.Hour},
				DeliveryMaxAttempts: ptr.To[int32](5), DeliveryMaxAge: &metav1.Duration{Duration: 6 * time.Hour},
				WebhookSigningSecretRef:         &v1alpha1.SecretKeySelector{Name: "hook", Key: "secret"},
				WebhookPreviousSigningSecretRef: &v1alpha1.SecretKeySelector{Name: "hook", Key: "old-secret"},
			}
		}, in, Forms, func(t *testing.T, c *config.Config) {
			f := c.Forms
			if f.Durability != config.DurabilityPrimary || f.ContactRetention.D() != 90*24*time.Hour ||
				f.Delivery.MaxAttempts != 5 || f.Delivery.MaxAge.D() != 6*time.Hour {
				t.Errorf("forms = %+v", f)
			}
			if f.Delivery.Webhook == nil || f.Delivery.Webhook.SecretFile != SecretsDir+"/hook/secret" ||
				f.Delivery.Webhook.PreviousSecretFile != SecretsDir+"/hook/old-secret" {
				t.Errorf("webhook = %+v", f.Delivery.Webhook)
			}
		}},
		{"auth gets a machine client's grants and keys, and the admin group", func(fs *v1alpha1.FormsService) {
			fs.Spec.Auth.AdminGroup = "ops"
			fs.Spec.OAuthClients = append(fs.Spec.OAuthClients, v1alpha1.OAuthClient{ClientID: "robot", GrantTypes: []v1alpha1.GrantType{"client_credentials"},
				TokenEndpointAuthMethod: "private_key_jwt", TokenEndpointAuthSigningAlg: "ES256",
				JWKS: `{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`})
		}, in, Auth, func(t *testing.T, c *config.Config) {
			m := c.Auth.Clients[1]
			if !slices.Equal(m.GrantTypes, []string{"client_credentials"}) || m.TokenEndpointAuthMethod != "private_key_jwt" || m.TokenEndpointAuthSigningAlg != "ES256" ||
				len(m.JWKS) == 0 || len(m.RedirectURIs) != 0 || c.Auth.Admin.Group != "ops" {
				t.Errorf("machine client = %+v, admin %+v", m, c.Auth.Admin)
			}
		}},
		{"auth: the console is off with no spec.console, and with enabled false", func(fs *v1alpha1.FormsService) {
			fs.Spec.Console = &v1alpha1.ConsoleSpec{}
		}, in, Auth, func(t *testing.T, c *config.Config) {
			// No group rendered: the service's default, formsservice-admins, applies when it loads.
			if c.Auth.Console.Enabled != nil || c.Auth.Admin.Group != "" {
				t.Errorf("console %+v, admin %+v", c.Auth.Console, c.Auth.Admin)
			}
		}},
		{"auth: spec.console.enabled serves the console for the admin group", func(fs *v1alpha1.FormsService) {
			fs.Spec.Console = &v1alpha1.ConsoleSpec{Enabled: true}
			fs.Spec.Auth.AdminGroup = "support@acme"
		}, in, Auth, func(t *testing.T, c *config.Config) {
			if !c.Auth.Console.On() || c.Auth.Admin.Group != "support@acme" {
				t.Errorf("console %+v, admin %+v", c.Auth.Console, c.Auth.Admin)
			}
		}},
		{"auth gets clients, keys and lifetimes", func(fs *v1alpha1.FormsService) {
			fs.Spec.OAuthClients[0].SecretRef = &v1alpha1.SecretKeySelector{Name: "web-client", Key: "secret"}
			fs.Spec.OAuthClients[0].Scopes = []v1alpha1.Scope{"openid"}
			fs.Spec.Auth.SelfSignup = true
			fs.Spec.Auth.RefreshTokenLifetime = &metav1.Duration{Duration: 48 * time.Hour}
			fs.Spec.Auth.SessionLifetime = &metav1.Duration{Duration: 8 * time.Hour}
			fs.Spec.Auth.Throttle = &v1alpha1.ThrottleSpec{AccountFailures: ptr.To[int32](5), Window: &metav1.Duration{Duration: time.Hour}}
			fs.Spec.OAuthClients[0].Name = "Acme Web"
			fs.Spec.OAuthClients[0].Audiences = []v1alpha1.Audience{"https://api.acme.example"}
			fs.Spec.OAuthClients[0].Resources = []v1alpha1.Audience{"https://reports.acme.example"}
		}, Inputs{PreviousSigningKey: true}, Auth, func(t *testing.T, c *config.Config) {
			a := c.Auth
			if got := a.Clients[0].Resources; len(got) != 1 || got[0] != "https://reports.acme.example" {
				t.Errorf("resources = %v", got)
			}
			if got := a.Clients[0].Audiences; len(got) != 1 || got[0] != "https://api.acme.example" {
				t.Errorf("audiences = %v", got)
			}
			if a.SessionLifetime.D() != 8*time.Hour || a.Throttle.AccountFailures != 5 || a.Throttle.IPFailures != 0 ||
				a.Throttle.Window.D() != time.Hour || a.Clients[0].Name != "Acme Web" {
				t.Errorf("session/throttle/name = %v %+v %q", a.SessionLifetime.D(), a.Throttle, a.Clients[0].Name)
			}
			if a.SigningKeyFile != SecretsDir+"/acme-signing-key/signing-key.pem" || a.PreviousSigningKeyFile != SecretsDir+"/acme-signing-key/previous-signing-key.pem" {
				t.Errorf("keys = %q %q", a.SigningKeyFile, a.PreviousSigningKeyFile)
			}
			if !a.SelfSignup || a.RefreshTokenLifetime.D() != 48*time.Hour || a.AccessTokenLifetime != 0 {
				t.Errorf("auth = %+v", a)
			}
			if len(a.Clients) != 1 || a.Clients[0].SecretFile != SecretsDir+"/web-client/secret" || !slices.Equal(a.Clients[0].Scopes, []string{"openid"}) {
				t.Errorf("clients = %+v", a.Clients)
			}
		}},
		{"auth gets the second factor, passkeys, requireMFA, and the forms' relay for its mail", func(fs *v1alpha1.FormsService) {
			fs.Spec.OAuthClients[0].RequireMFA = true
			fs.Spec.OAuthClients[0].RequireVerifiedEmail = true
			fs.Spec.OAuthClients[0].BackchannelLogoutURI = "https://app.acme.example/backchannel-logout"
			fs.Spec.OAuthClients[0].BackchannelLogoutSessionRequired = true
			fs.Spec.OAuthClients[0].AccessTokenGroups = true
			fs.Spec.OAuthClients[0].Scopes = []v1alpha1.Scope{"openid", "groups"}
			fs.Spec.Auth.SessionIdleTimeout = &metav1.Duration{Duration: 10 * time.Minute}
			fs.Spec.Auth.MFA = &v1alpha1.MFASpec{Failures: ptr.To[int32](3), ChallengeLifetime: &metav1.Duration{Duration: 2 * time.Minute},
				SecretKeyRef: &v1alpha1.SecretKeySelector{Name: "mfa", Key: "key"}}
			fs.Spec.Auth.Passkeys = &v1alpha1.PasskeysSpec{Enabled: ptr.To(false), RPName: "Acme", Timeout: &metav1.Duration{Duration: 2 * time.Minute}}
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{SMTP: &v1alpha1.SMTPDelivery{Address: "mail.acme.example:587", From: "noreply@acme.example",
				To: []string{"team@acme.example"}, Username: "relay", StartTLS: true, PasswordSecretRef: &v1alpha1.SecretKeySelector{Name: "smtp", Key: "password"}}}
		}, in, Auth, func(t *testing.T, c *config.Config) {
			a := c.Auth
			if !a.Clients[0].RequireMFA || a.MFA.Failures != 3 || a.MFA.ChallengeLifetime.D() != 2*time.Minute || a.MFA.Window != 0 ||
				a.MFA.SecretKeyFile != SecretsDir+"/mfa/key" {
				t.Errorf("mfa = %+v, requireMFA %v", a.MFA, a.Clients[0].RequireMFA)
			}
			if !a.Clients[0].RequireVerifiedEmail || a.SessionIdleTimeout.D() != 10*time.Minute {
				t.Errorf("requireVerifiedEmail %v, sessionIdleTimeout %v", a.Clients[0].RequireVerifiedEmail, a.SessionIdleTimeout.D())
			}
			if cl := a.Clients[0]; cl.BackchannelLogoutURI != "https://app.acme.example/backchannel-logout" || !cl.BackchannelLogoutSessionRequired || !cl.AccessTokenGroups {
				t.Errorf("back-channel logout and access token groups: %+v", cl)
			}
			if a.Passkeys.On() || a.Passkeys.RPName != "Acme" || a.Passkeys.Timeout.D() != 2*time.Minute {
				t.Errorf("passkeys = %+v", a.Passkeys)
			}
			m, ok := c.MailSettings()
			if !ok || m.From != "noreply@acme.example" || m.SMTP.Addr != "mail.acme.example:587" || m.SMTP.TLS != config.MailTLSStartTLS ||
				m.SMTP.Username != "relay" || m.SMTP.PasswordFile != SecretsDir+"/smtp/password" {
				t.Errorf("auth's mail = %+v %+v (ok %v)", m, m.SMTP, ok)
			}
			if c.Forms.Delivery.SMTP != nil {
				t.Error("auth's configuration carries the forms' delivery")
			}
		}},
		{"auth's links never go to another machine in clear text: a relay off loopback gets STARTTLS even without startTLS", func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{SMTP: &v1alpha1.SMTPDelivery{Address: "mail.acme.example:25", From: "noreply@acme.example", To: []string{"team@acme.example"}}}
		}, in, Auth, func(t *testing.T, c *config.Config) {
			if m, ok := c.MailSettings(); !ok || m.SMTP.TLS != config.MailTLSStartTLS {
				t.Errorf("mail = %+v %+v", c.Mail, c.Mail.SMTP)
			}
		}},
		{"without a relay auth's configuration names none", nil, in, Auth, func(t *testing.T, c *config.Config) {
			if _, ok := c.MailSettings(); ok {
				t.Errorf("mail = %+v", c.Mail)
			}
		}},
		{"health points at the in-cluster services", func(fs *v1alpha1.FormsService) {
			fs.Spec.Health.Timeout = &metav1.Duration{Duration: 3 * time.Second}
		}, in, Health, func(t *testing.T, c *config.Config) {
			if c.Health.FormsURL != "http://acme-forms.prod.svc" || c.Health.AuthURL != "http://acme-auth.prod.svc" ||
				c.Health.Timeout.D() != 3*time.Second || c.Health.WarnAfter != 0 {
				t.Errorf("health = %+v", c.Health)
			}
		}},
		{"public URL defaults to the ingress host", func(fs *v1alpha1.FormsService) {
			fs.Spec.PublicURL = ""
			fs.Spec.Ingress = &v1alpha1.IngressSpec{Host: "login.acme.example"}
		}, in, Auth, func(t *testing.T, c *config.Config) {
			if c.PublicURL != "https://login.acme.example" {
				t.Errorf("publicURL = %q", c.PublicURL)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := base()
			if tc.mutate != nil {
				tc.mutate(fs)
			}
			tc.check(t, ServiceConfig(fs, tc.component, tc.in))
			// Whatever was rendered loads in the service.
			if _, err := RenderConfig(fs, tc.component, tc.in); err != nil {
				t.Errorf("RenderConfig: %v", err)
			}
		})
	}
}

func TestRenderConfig_RoundTripsAndRefusesWhatTheServicesWouldRefuse(t *testing.T) {
	fs := base()
	s, err := RenderConfig(fs, Auth, in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s, "# Rendered by the formsservice operator from FormsService prod/acme.") {
		t.Errorf("no header: %q", s[:60])
	}
	c, err := config.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	if c.Auth.Clients[0].ClientID != "web" {
		t.Errorf("round trip lost the client: %+v", c.Auth.Clients)
	}

	// Built in Go, past the CRD's rules: the renderer is the last line of defence.
	fs.Spec.AllowedOrigins = []v1alpha1.Origin{"https://Bad.example/"}
	if _, err := RenderConfig(fs, Forms, in); err == nil || !strings.Contains(err.Error(), "allowedOrigins") {
		t.Errorf("bad origin rendered: %v", err)
	}
	if _, err := ConfigMap(fs, in); err == nil {
		t.Error("ConfigMap rendered a configuration the services refuse")
	}
}

func TestRestartHash_ChangesOnlyForStartUpSettings(t *testing.T) {
	digests := func(smtp string) Inputs {
		return Inputs{SecretDigests: map[string]string{"smtp": smtp, "acme-signing-key": "k1", "acme-redis-password": "r1"}}
	}
	withSMTP := func(fs *v1alpha1.FormsService) {
		fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{SMTP: &v1alpha1.SMTPDelivery{
			Address: "smtp:587", StartTLS: true, From: "a@b.example", To: []string{"c@d.example"}, Username: "relay",
			PasswordSecretRef: &v1alpha1.SecretKeySelector{Name: "smtp", Key: "pw"}}}
	}
	cases := []struct {
		name    string
		mutate  func(*v1alpha1.FormsService)
		in      Inputs
		changed []string // components whose hash must change; the others must not
	}{
		{"origins are reloaded live", func(fs *v1alpha1.FormsService) {
			fs.Spec.AllowedOrigins = append(fs.Spec.AllowedOrigins, "https://new.example")
		}, digests("s1"), nil},
		{"clients are reloaded live", func(fs *v1alpha1.FormsService) {
			fs.Spec.OAuthClients = append(fs.Spec.OAuthClients, v1alpha1.OAuthClient{ClientID: "two", RedirectURIs: []v1alpha1.RedirectURI{"https://two.example/cb"}})
		}, digests("s1"), nil},
		{"trusted proxies are read at start-up", func(fs *v1alpha1.FormsService) {
			fs.Spec.TrustedProxies = []string{"10.0.0.0/8"}
		}, digests("s1"), Components},
		{"the SMTP password rolls forms and auth (auth mails through the same relay)", nil, digests("s2"), []string{Forms, Auth}},
		{"token lifetimes roll auth only", func(fs *v1alpha1.FormsService) {
			fs.Spec.Auth.AccessTokenLifetime = &metav1.Duration{Duration: time.Hour}
		}, digests("s1"), []string{Auth}},
		{"the platform's branding rolls auth only", func(fs *v1alpha1.FormsService) {
			fs.Spec.Auth.Branding = &v1alpha1.BrandingSpec{ProductName: "Acme ID"}
		}, digests("s1"), []string{Auth}},
		{"a client's branding is reloaded live with its client", func(fs *v1alpha1.FormsService) {
			fs.Spec.OAuthClients[0].Branding = &v1alpha1.BrandingSpec{AccentColor: "#00aa55"}
		}, digests("s1"), nil},
		{"a rotated signing key rolls auth only", nil, Inputs{SecretDigests: map[string]string{"smtp": "s1", "acme-signing-key": "k2", "acme-redis-password": "r1"}}, []string{Auth}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, after := base(), base()
			withSMTP(before)
			withSMTP(after)
			if tc.mutate != nil {
				tc.mutate(after)
			}
			for _, c := range Components {
				h1, h2 := RestartHash(before, c, digests("s1")), RestartHash(after, c, tc.in)
				if want := slices.Contains(tc.changed, c); (h1 != h2) != want {
					t.Errorf("%s: hash changed = %v, want %v", c, h1 != h2, want)
				}
			}
		})
	}
}

func TestDeployment(t *testing.T) {
	fs := base()
	fs.Spec.Forms.Replicas = ptr.To[int32](4)
	fs.Spec.Forms.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1000Mi")}}
	fs.Spec.Forms.PodAnnotations = map[string]string{"team": "web"}
	fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{SMTP: &v1alpha1.SMTPDelivery{
		Address: "smtp:25", From: "a@b.example", To: []string{"c@d.example"}, PasswordSecretRef: &v1alpha1.SecretKeySelector{Name: "smtp.creds", Key: "pw"}}}

	d := typed[appsv1.Deployment](t, Deployment(fs, Forms, in))
	if *d.Spec.Replicas != 4 || d.Name != "acme-forms" || d.Namespace != "prod" {
		t.Errorf("replicas/name = %d %s/%s", *d.Spec.Replicas, d.Namespace, d.Name)
	}
	if d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Error("a rollout may drop below the desired replicas")
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["GOMEMLIMIT"] != "943718400" { // 90% of 1000Mi
		t.Errorf("GOMEMLIMIT = %q", env["GOMEMLIMIT"])
	}
	if d.Spec.Template.Annotations["team"] != "web" || d.Spec.Template.Annotations["prometheus.io/scrape"] != "true" {
		t.Errorf("pod annotations = %v", d.Spec.Template.Annotations)
	}
	if ptr.Deref(pod.AutomountServiceAccountToken, true) {
		t.Error("the services get an API token they never use")
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	for _, p := range []string{ConfigDir, "/tmp", SecretsDir + "/smtp.creds", SecretsDir + "/acme-redis-password"} {
		if mounts[p] == "" {
			t.Errorf("no mount at %s (mounts %v)", p, mounts)
		}
	}
	if mounts[SecretsDir+"/acme-signing-key"] != "" {
		t.Error("forms mounts the signing key")
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "smtp.creds" && (len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != "pw") {
			t.Errorf("the SMTP Secret is mounted whole: %+v", v.Secret)
		}
		if v.ConfigMap != nil && (v.ConfigMap.Items[0].Key != "forms.yaml" || v.ConfigMap.Items[0].Path != "config.yaml") {
			t.Errorf("config volume = %+v", v.ConfigMap)
		}
		if len(v.Name) > 63 || strings.Contains(v.Name, ".") {
			t.Errorf("volume name %q is not a DNS label", v.Name)
		}
	}

	a := typed[appsv1.Deployment](t, Deployment(fs, Auth, in))
	if *a.Spec.Replicas != 2 {
		t.Errorf("default replicas = %d", *a.Spec.Replicas)
	}
	if got := a.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String(); got != "512Mi" {
		t.Errorf("auth default memory limit = %s", got)
	}
	fs.Spec.Image = "mine:2"
	if typed[appsv1.Deployment](t, Deployment(fs, Health, in)).Spec.Template.Spec.Containers[0].Image != "mine:2" {
		t.Error("spec.image not used")
	}
}

func TestIngress(t *testing.T) {
	routes := func(ing *networkingv1.Ingress) map[string]string {
		out := map[string]string{}
		for _, r := range ing.Spec.Rules {
			for _, p := range r.HTTP.Paths {
				out[r.Host+p.Path] = p.Backend.Service.Name + ":" + string(*p.PathType)
			}
		}
		return out
	}
	fs := base()
	if typed[networkingv1.Ingress](t, Ingress(fs)) != nil {
		t.Fatal("an Ingress without spec.ingress")
	}
	fs.Spec.Ingress = &v1alpha1.IngressSpec{Host: "id.acme.example", Annotations: map[string]string{"cert-manager.io/cluster-issuer": "le"}}
	one := typed[networkingv1.Ingress](t, Ingress(fs))
	want := map[string]string{
		"id.acme.example/contact": "acme-forms:Exact", "id.acme.example/waitlist": "acme-forms:Exact",
		"id.acme.example/oauth2": "acme-auth:Prefix", "id.acme.example/.well-known": "acme-auth:Prefix",
		"id.acme.example/account": "acme-auth:Prefix", "id.acme.example/admin": "acme-auth:Prefix", "id.acme.example/console": "acme-auth:Prefix",
		"id.acme.example/health": "acme-health:Exact",
	}
	if got := routes(one); len(got) != len(want) || !mapsEqual(got, want) {
		t.Errorf("one host: %v", got)
	}
	if one.Spec.TLS != nil || one.Annotations["cert-manager.io/cluster-issuer"] != "le" {
		t.Errorf("tls %v annotations %v", one.Spec.TLS, one.Annotations)
	}
	fs.Spec.Ingress.FormsHost = "forms.acme.example"
	fs.Spec.Ingress.TLSSecretName = "tls"
	two := typed[networkingv1.Ingress](t, Ingress(fs))
	if got := routes(two); got["forms.acme.example/contact"] != "acme-forms:Exact" || got["id.acme.example/contact"] != "" {
		t.Errorf("two hosts: %v", got)
	}
	if !slices.Equal(two.Spec.TLS[0].Hosts, []string{"id.acme.example", "forms.acme.example"}) {
		t.Errorf("tls hosts %v", two.Spec.TLS[0].Hosts)
	}
}

func mapsEqual(a, b map[string]string) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

func TestRedis(t *testing.T) {
	fs := base()
	s := typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, Inputs{SecretDigests: map[string]string{"acme-redis-password": "d1"}}))
	if s.Spec.Template.Annotations[RestartHashAnnotation] != "d1" {
		t.Errorf("the Redis pod does not restart when its password changes: %v", s.Spec.Template.Annotations)
	}
	if s.Spec.Template.Spec.Containers[0].Image != DefaultRedisImage || s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("defaults: %+v", s.Spec)
	}
	if s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted != "Retain" || s.Spec.ServiceName != "acme-redis" {
		t.Errorf("retention/service: %+v", s.Spec)
	}
	size := resource.MustParse("10Gi")
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{Image: "redis:8", StorageSize: &size, StorageClassName: ptr.To("fast")}
	s = typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in))
	if s.Spec.Template.Spec.Containers[0].Image != "redis:8" || *s.Spec.VolumeClaimTemplates[0].Spec.StorageClassName != "fast" ||
		s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String() != "10Gi" {
		t.Errorf("overrides: %+v", s.Spec)
	}
	for _, want := range []string{"appendonly yes", "appendfsync always", "maxmemory-policy noeviction", "sanitize-dump-payload yes", "include /etc/redis-secret/requirepass.conf"} {
		if !strings.Contains(typed[corev1.ConfigMap](t, RedisConfigMap(fs)).Data["redis.conf"], want) {
			t.Errorf("redis.conf lacks %q", want)
		}
	}
	for _, e := range s.Spec.Template.Spec.Containers[0].Env {
		if e.Value != "" {
			t.Errorf("a literal value in the Redis environment: %s", e.Name)
		}
	}
}

func TestRedis_MaxmemoryFromTheMemoryLimit_AndAConfigChangeRollsThePod(t *testing.T) {
	fs := base()
	in := Inputs{}
	conf := typed[corev1.ConfigMap](t, RedisConfigMap(fs)).Data["redis.conf"]
	if !strings.Contains(conf, "maxmemory 402653184\n") { // 3/4 of the default 512Mi
		t.Fatalf("redis.conf without maxmemory from the default limit:\n%s", conf)
	}
	before := typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Annotations[RedisConfigHashAnnotation]
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{Resources: &corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}
	if conf := typed[corev1.ConfigMap](t, RedisConfigMap(fs)).Data["redis.conf"]; !strings.Contains(conf, "maxmemory 805306368\n") {
		t.Fatalf("redis.conf for a 1Gi limit:\n%s", conf)
	}
	after := typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Annotations[RedisConfigHashAnnotation]
	if before == "" || before == after {
		t.Fatalf("config hash %q -> %q: a changed redis.conf must roll the Redis pod", before, after)
	}
	fs.Spec.Redis.Managed.Resources = &corev1.ResourceRequirements{} // no limit: Redis may use what the node has
	if conf := typed[corev1.ConfigMap](t, RedisConfigMap(fs)).Data["redis.conf"]; strings.Contains(conf, "\nmaxmemory ") {
		t.Fatalf("maxmemory without a limit:\n%s", conf)
	}
}

func TestReferencedSecretNames(t *testing.T) {
	fs := base()
	fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"r:6379"}, PasswordSecretRef: &v1alpha1.SecretKeySelector{Name: "shared", Key: "redis"}}
	fs.Spec.OAuthClients[0].SecretRef = &v1alpha1.SecretKeySelector{Name: "shared", Key: "web"}
	got := ReferencedSecretNames(fs)
	if !slices.Equal(got, []string{"acme-signing-key", "shared"}) {
		t.Errorf("got %v", got)
	}
}

func TestPodDisruptionBudget_OnlyFromTwoReplicas(t *testing.T) {
	fs := base()
	if p := typed[policyv1.PodDisruptionBudget](t, PodDisruptionBudget(fs, Forms)); p == nil || p.Spec.MaxUnavailable.IntValue() != 1 || p.Spec.Selector.MatchLabels[LabelComponent] != Forms {
		t.Errorf("default (2 replicas): %+v", p)
	}
	fs.Spec.Auth.Replicas = ptr.To[int32](1)
	if p := typed[policyv1.PodDisruptionBudget](t, PodDisruptionBudget(fs, Auth)); p != nil {
		t.Error("a budget for one replica would block every node drain")
	}
}

func TestRedisNetworkPolicy_AdmitsOnlyTheServicesOfThisFormsService(t *testing.T) {
	np := typed[networkingv1.NetworkPolicy](t, RedisNetworkPolicy(base(), Inputs{}))
	if np.Spec.PodSelector.MatchLabels[LabelComponent] != Redis || len(np.Spec.Ingress) != 1 {
		t.Fatalf("policy = %+v", np.Spec)
	}
	var comps []string
	for _, p := range np.Spec.Ingress[0].From {
		if p.PodSelector.MatchLabels[LabelInstance] != "acme" || p.NamespaceSelector != nil {
			t.Errorf("peer %+v is not a pod of this FormsService", p)
		}
		comps = append(comps, p.PodSelector.MatchLabels[LabelComponent])
	}
	if !slices.Equal(comps, Components) || np.Spec.Ingress[0].Ports[0].Port.IntValue() != RedisPort {
		t.Errorf("from %v ports %+v", comps, np.Spec.Ingress[0].Ports)
	}
}

// spec.auth.branding reaches auth's configuration as it is, each client's override beside its client,
// and the rendered file loads (config.Parse, Validate in RenderConfig).
func TestRenderConfig_BrandingPerPlatformAndPerClient(t *testing.T) {
	fs := base()
	fs.Spec.Auth.Branding = &v1alpha1.BrandingSpec{ProductName: "Acme ID", LogoURL: "https://cdn.acme.example/logo.svg", AccentColor: "#aa3300", StylesheetURL: "https://cdn.acme.example/brand.css"}
	fs.Spec.OAuthClients = append(fs.Spec.OAuthClients, v1alpha1.OAuthClient{ClientID: "shop", RedirectURIs: []v1alpha1.RedirectURI{"https://shop.acme.example/cb"},
		Branding: &v1alpha1.BrandingSpec{ProductName: "Acme Shop", AccentColor: "#00aa55"}})
	s, err := RenderConfig(fs, Auth, in)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Branding{ProductName: "Acme ID", LogoURL: "https://cdn.acme.example/logo.svg", AccentColor: "#aa3300", StylesheetURL: "https://cdn.acme.example/brand.css"}
	if c.Auth.Branding != want {
		t.Errorf("platform branding %+v, want %+v", c.Auth.Branding, want)
	}
	if c.Auth.Clients[0].Branding != nil {
		t.Errorf("web has no override, got %+v", c.Auth.Clients[0].Branding)
	}
	if b := c.Auth.Clients[1].Branding; b == nil || *b != (config.Branding{ProductName: "Acme Shop", AccentColor: "#00aa55"}) {
		t.Errorf("shop's override %+v", b)
	}
	if !strings.Contains(s, "accentColor: '#aa3300'") && !strings.Contains(s, `accentColor: "#aa3300"`) {
		t.Errorf("the colour is not quoted in YAML (a # would start a comment):\n%s", s)
	}
	// Forms does not get auth's branding.
	if s, _ := RenderConfig(fs, Forms, in); strings.Contains(s, "Acme") {
		t.Errorf("forms' configuration has the branding:\n%s", s)
	}
	// Built in Go past the CRD, a bad colour is refused before it reaches a pod.
	fs.Spec.Auth.Branding.AccentColor = "red"
	if _, err := RenderConfig(fs, Auth, in); err == nil || !strings.Contains(err.Error(), "accentColor") {
		t.Errorf("bad colour rendered: %v", err)
	}
}
