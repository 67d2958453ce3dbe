package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Inputs are the facts about the cluster that rendering needs besides the FormsService itself.
type Inputs struct {
	// Image runs the services when spec.image is empty (the operator's --service-image flag).
	Image string
	// RedisImage runs the managed Redis when spec.redis.managed.image is empty (the operator's
	// --redis-image flag); "" means DefaultRedisImage.
	RedisImage string
	// RunningRedisImage is the image the managed Redis's StatefulSet runs now ("" when there is none):
	// a store that Redis 7.4 (LegacyRedisImage) wrote stays on it (RedisImage).
	RunningRedisImage string
	// KeepRunningRedisImage keeps the managed Redis on RunningRedisImage when the spec names no image:
	// the FormsService's operator upgrade waits (a slot, an approval, a window), or it pins spec.image
	// and is outside the operator's upgrades (D92). A new store (none running) gets RedisImage's choice.
	KeepRunningRedisImage bool
	// StoreRDBFormat is the RDB format version recorded on the managed Redis's claims (0: none): a store
	// whose format the default image cannot read, and the legacy one can, stays on the legacy one
	// (RedisImage), also while its StatefulSet is gone.
	StoreRDBFormat int
	// RedisRunAsUser is the managed Redis's user when spec.redis.managed.runAsUser is unset (the
	// operator's --redis-run-as-user); nil or 0 sets none.
	RedisRunAsUser *int64
	// ImagePullSecrets are added to every pod, before the spec's own (the operator's
	// --image-pull-secrets: one registry credential for every namespace an air-gapped install serves).
	ImagePullSecrets []string
	// PreviousSigningKey says the signing-key Secret holds a previous key (a rotation is under way), so
	// the auth configuration names it for the JWKS.
	PreviousSigningKey bool
	// NextSigningKey says the signing-key Secret holds a next key (published before it signs), so the
	// auth configuration names it for the JWKS.
	NextSigningKey bool
	// MFAKey says the signing-key Secret holds the key that seals TOTP secrets (MFAKeyKey), which the
	// auth configuration names unless spec.auth.mfa.secretKeyRef names another.
	MFAKey bool
	// SigningKeyIDs names the keys of the signing-key Secret by role (SigningKeysAnnotation); "" leaves
	// the annotation out.
	SigningKeyIDs string
	// Operator is where the operator's own pods run (the manager's --operator-namespace and
	// --operator-pod-labels): the highly available Redis's NetworkPolicy lets them reach the nodes and
	// sentinels, which the operator asks when it rolls the pods. Empty: no such rule (an operator outside
	// the cluster).
	Operator OperatorPeer
	// SecretDigests maps a Secret's name to a digest of the keys the pods mount from it. A change rolls
	// the pods that mount it, since the services read Secret files at start-up.
	SecretDigests map[string]string
}

// OperatorPeer names the operator's pods for a NetworkPolicy.
type OperatorPeer struct {
	Namespace string
	PodLabels map[string]string
}

// ServiceConfig is the configuration file of one component, in exactly the format the service reads.
// Every service gets the shared sections (public URL, origins, proxies, Redis) and its own section only.
func ServiceConfig(fs *v1alpha1.FormsService, component string, in Inputs) *config.Config {
	s := fs.Spec
	c := &config.Config{
		PublicURL:      PublicURL(fs),
		LogLevel:       s.LogLevel,
		AllowedOrigins: originStrings(s.AllowedOrigins),
		TrustedProxies: s.TrustedProxies,
		Redis:          redisConfig(fs),
	}
	switch component {
	case Forms:
		c.Forms = formsConfig(s.Forms)
		if ManagedRedis(fs) {
			// The Redis the operator runs fsyncs before it answers: a 201 survives a crash of its node.
			c.Forms.Durability = config.DurabilityMachine
		}
		if RedisHA(fs) {
			// Three nodes: a 201 survives the loss of the primary (a replica has it, WAIT 1).
			c.Forms.Durability = config.DurabilityPrimary
		}
		formsDataPolicy(&c.Forms, s.Forms.DataPolicy)
		formsSitesAndOptIn(&c.Forms, fs)
		c.Forms.Declared = declaredForms(s.Forms.Declared)
		c.Forms.Spam = spamConfig(s.Forms.Spam)
		c.Forms.Files = formFiles(s.Forms.Files)
		if c.Forms.Files != nil && c.Forms.PublicURL == "" {
			c.Forms.PublicURL = formsPublicURL(fs) // the files' links in mails and webhooks
		}
	case Auth:
		c.Auth = authConfig(fs, in)
		c.Mail = authMail(s.Forms)
		if s.Forms.Files != nil {
			// The console's download links point to the forms' host (D83); the auth pods get no link key.
			c.Forms.PublicURL = formsPublicURL(fs)
		}
	case Health:
		c.Health = config.Health{
			FormsURL: ServiceURL(fs, Forms), AuthURL: ServiceURL(fs, Auth),
			WarnAfter: duration(s.Health.WarnAfter), Timeout: duration(s.Health.Timeout),
		}
	}
	return c
}

func originStrings(os []v1alpha1.Origin) []string {
	if len(os) == 0 {
		return nil
	}
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = string(o)
	}
	return out
}

func redisConfig(fs *v1alpha1.FormsService) config.Redis {
	if RedisHA(fs) {
		return redisHAConfig(fs) // redis_ha.go
	}
	if ManagedRedis(fs) {
		n := NamesOf(fs)
		return config.Redis{
			Addrs:        []string{fmt.Sprintf("%s.%s.svc:%d", n.Redis, fs.Namespace, RedisPort)},
			PasswordFile: SecretPath(n.RedisPassword, RedisPasswordKey),
		}
	}
	r := fs.Spec.Redis
	c := config.Redis{Username: r.Username, DB: int(r.DB), TLS: r.TLS}
	for _, a := range r.Addresses {
		c.Addrs = append(c.Addrs, string(a))
	}
	switch r.Mode {
	case v1alpha1.RedisCluster:
		c.Cluster = true
	case v1alpha1.RedisSentinel:
		c.MasterName = r.MasterName
	}
	if p := r.PasswordSecretRef; p != nil {
		c.PasswordFile = SecretPath(p.Name, p.Key)
	}
	if p := r.CASecretRef; p != nil {
		c.CAFile = SecretPath(p.Name, p.Key)
	}
	return c
}

func formsConfig(f v1alpha1.FormsSpec) config.Forms {
	var c config.Forms
	if f.RateLimitPerMinute != nil {
		n := int(*f.RateLimitPerMinute)
		c.RateLimitPerMinute = &n
	}
	if d := f.Delivery; d != nil {
		if s := d.SMTP; s != nil {
			c.Delivery.SMTP = &config.SMTP{
				Addr: string(s.Address), From: s.From, To: s.To, Username: s.Username, StartTLS: s.StartTLS, Subject: s.Subject,
			}
			if p := s.PasswordSecretRef; p != nil {
				c.Delivery.SMTP.PasswordFile = SecretPath(p.Name, p.Key)
			}
		}
		if w := d.Webhook; w != nil {
			// The Secret wins over the plain URL: the address is a credential and stays out of the ConfigMap.
			if r := w.URLSecretRef; r != nil {
				c.Delivery.Webhook = &config.Webhook{URLFile: SecretPath(r.Name, r.Key)}
			} else {
				c.Delivery.Webhook = &config.Webhook{URL: w.URL}
			}
		}
	}
	return c
}

// formsDataPolicy applies spec.forms.dataPolicy; what it leaves unset keeps the defaults.
func formsDataPolicy(c *config.Forms, p *v1alpha1.FormsDataPolicy) {
	if p == nil {
		return
	}
	if p.Durability != "" {
		c.Durability = config.Durability(p.Durability)
	}
	c.ContactRetention = duration(p.ContactRetention)
	c.WaitlistRetention = duration(p.WaitlistRetention)
	if p.DeliveryMaxAttempts != nil {
		c.Delivery.MaxAttempts = int(*p.DeliveryMaxAttempts)
	}
	c.Delivery.MaxAge = duration(p.DeliveryMaxAge)
	if r := p.WebhookSigningSecretRef; r != nil && c.Delivery.Webhook != nil {
		c.Delivery.Webhook.SecretFile = SecretPath(r.Name, r.Key)
	}
	if r := p.WebhookPreviousSigningSecretRef; r != nil && c.Delivery.Webhook != nil {
		c.Delivery.Webhook.PreviousSecretFile = SecretPath(r.Name, r.Key)
	}
}

// botCheck renders a site's or a declared form's bot check; its secret is the file its Secret is
// mounted as (UserSecretRefs).
func botCheck(b *v1alpha1.BotCheckSpec) *config.BotCheck {
	if b == nil {
		return nil
	}
	c := &config.BotCheck{Provider: b.Provider, SecretFile: SecretPath(b.SecretRef.Name, b.SecretRef.Key),
		VerifyURL: b.VerifyURL, Action: b.Action}
	if score, err := strconv.ParseFloat(b.MinScore, 64); err == nil { // the CRD's pattern: 0 to 1
		c.MinScore = &score
	}
	return c
}

// formsSitesAndOptIn applies spec.forms.sites and spec.forms.doubleOptIn (and the links' base for a
// declared form's). A bot check's secret is a
// mounted Secret (UserSecretRefs); the confirmation links point to the forms' own host.
func formsSitesAndOptIn(c *config.Forms, fs *v1alpha1.FormsService) {
	f := fs.Spec.Forms
	for _, st := range f.Sites {
		site := config.Site{Origin: string(st.Origin), Name: st.Name, ThanksURL: st.ThanksURL, ErrorURL: st.ErrorURL,
			ConsentVersion: st.ConsentVersion}
		site.BotCheck = botCheck(st.BotCheck)
		c.Sites = append(c.Sites, site)
	}
	if d := f.DoubleOptIn; d != nil {
		c.DoubleOptIn = &config.DoubleOptIn{ConfirmWithin: duration(d.ConfirmWithin), ResendAfter: duration(d.ResendAfter)}
	}
	if f.DoubleOptIn != nil || declaredOptIn(fs) { // the waitlist's or a declared form's links
		if h := formsHost(fs); h != "" {
			c.PublicURL = "https://" + h
		}
	}
}

// formsPublicURL is the forms' own host as forms.publicURL, or "" when they are served on publicURL.
func formsPublicURL(fs *v1alpha1.FormsService) string {
	if h := formsHost(fs); h != "" {
		return "https://" + h
	}
	return ""
}

// formsHost is the host of its own that the forms are served on (ingress or gateway formsHost), or "".
func formsHost(fs *v1alpha1.FormsService) string {
	if i := fs.Spec.Ingress; i != nil && i.FormsHost != "" && i.FormsHost != i.Host {
		return i.FormsHost
	}
	if g := fs.Spec.Gateway; g != nil && g.FormsHost != "" && g.FormsHost != g.Host {
		return g.FormsHost
	}
	return ""
}

func authConfig(fs *v1alpha1.FormsService, in Inputs) config.Auth {
	a := fs.Spec.Auth
	n := NamesOf(fs)
	c := config.Auth{
		SigningKeyFile:       SecretPath(n.SigningKey, SigningKeyKey),
		SelfSignup:           a.SelfSignup,
		AccessTokenLifetime:  duration(a.AccessTokenLifetime),
		RefreshTokenLifetime: duration(a.RefreshTokenLifetime),
		CodeLifetime:         duration(a.CodeLifetime),
		IDTokenLifetime:      duration(a.IDTokenLifetime),
		SessionLifetime:      duration(a.SessionLifetime),
		SessionIdleTimeout:   duration(a.SessionIdleTimeout),
		Admin:                config.AuthAdmin{Group: a.AdminGroup},
	}
	if con := fs.Spec.Console; con != nil && con.Enabled {
		c.Console.Enabled = ptr.To(true)
	}
	if t := a.Throttle; t != nil {
		c.Throttle = config.Throttle{
			AccountFailures: int(ptr.Deref(t.AccountFailures, 0)),
			IPFailures:      int(ptr.Deref(t.IPFailures, 0)),
			Window:          duration(t.Window),
		}
	}
	if m := a.MFA; m != nil {
		c.MFA = config.MFA{
			Failures: int(ptr.Deref(m.Failures, 0)), Window: duration(m.Window),
			ChallengeLifetime: duration(m.ChallengeLifetime), EnrolmentLifetime: duration(m.EnrolmentLifetime),
		}
		if r := m.SecretKeyRef; r != nil {
			c.MFA.SecretKeyFile = SecretPath(r.Name, r.Key)
		}
	}
	if c.MFA.SecretKeyFile == "" && in.MFAKey {
		c.MFA.SecretKeyFile = SecretPath(n.SigningKey, MFAKeyKey)
	}
	if p := a.Passkeys; p != nil {
		c.Passkeys = config.AuthPasskeys{Enabled: p.Enabled, RPName: p.RPName, Timeout: duration(p.Timeout)}
	}
	if au := a.Audit; au != nil && au.Webhook != nil {
		w := au.Webhook
		c.Audit.Webhook = &config.AuditWebhook{URL: w.URL, SecretFile: SecretPath(w.SigningSecretRef.Name, w.SigningSecretRef.Key),
			BatchSize: int(w.BatchSize), Timeout: duration(w.Timeout)}
		if r := w.PreviousSigningSecretRef; r != nil {
			c.Audit.Webhook.PreviousSecretFile = SecretPath(r.Name, r.Key)
		}
	}
	c.Branding = branding(a.Branding)
	if in.PreviousSigningKey {
		c.PreviousSigningKeyFile = SecretPath(n.SigningKey, PreviousSigningKeyKey)
	}
	if in.NextSigningKey {
		c.NextSigningKeyFile = SecretPath(n.SigningKey, NextSigningKeyKey)
	}
	for _, cl := range fs.Spec.OAuthClients {
		oc := config.OAuthClient{ClientID: cl.ClientID, Name: cl.Name, RequireMFA: cl.RequireMFA, RequireVerifiedEmail: cl.RequireVerifiedEmail,
			BackchannelLogoutURI: string(cl.BackchannelLogoutURI), BackchannelLogoutSessionRequired: cl.BackchannelLogoutSessionRequired,
			AccessTokenGroups: cl.AccessTokenGroups}
		for _, u := range cl.RedirectURIs {
			oc.RedirectURIs = append(oc.RedirectURIs, string(u))
		}
		for _, u := range cl.PostLogoutRedirectURIs {
			oc.PostLogoutRedirectURIs = append(oc.PostLogoutRedirectURIs, string(u))
		}
		for _, s := range cl.Scopes {
			oc.Scopes = append(oc.Scopes, string(s))
		}
		for _, a := range cl.Audiences {
			oc.Audiences = append(oc.Audiences, string(a))
		}
		for _, a := range cl.Resources {
			oc.Resources = append(oc.Resources, string(a))
		}
		if r := cl.SecretRef; r != nil {
			oc.SecretFile = SecretPath(r.Name, r.Key)
		}
		for _, g := range cl.GrantTypes {
			oc.GrantTypes = append(oc.GrantTypes, string(g))
		}
		oc.TokenEndpointAuthMethod, oc.TokenEndpointAuthSigningAlg = cl.TokenEndpointAuthMethod, cl.TokenEndpointAuthSigningAlg
		if cl.JWKS != "" {
			// As JSON text in a string: whatever the resource holds, the file stays well formed, and the
			// configuration's validation names what is wrong with the keys.
			oc.JWKS, _ = json.Marshal(cl.JWKS)
		}
		if cl.Branding != nil {
			b := branding(cl.Branding)
			oc.Branding = &b
		}
		oc.Connectors = cl.Connectors
		c.Clients = append(c.Clients, oc)
	}
	c.Connectors = connectors(a.Connectors)
	return c
}

// connectors are the auth configuration's connectors of a spec's: the same fields, the client secret
// as the file its Secret is mounted at (UserSecretRefs).
func connectors(specs []v1alpha1.ConnectorSpec) []config.Connector {
	var out []config.Connector
	for _, s := range specs {
		c := config.Connector{ID: s.ID, Type: s.Type, Preset: s.Preset, Name: s.Name, Issuer: s.Issuer, Tenant: s.Tenant,
			ClientID: s.ClientID, Scopes: s.Scopes, SigningAlgs: s.SigningAlgs, GroupsPrefix: s.GroupsPrefix, TrustEmailVerified: s.TrustEmailVerified,
			BaseURL: s.BaseURL, Orgs: s.Orgs, LDAP: ldapConnector(s.LDAP)}
		if r := s.ClientSecretRef; r != (v1alpha1.SecretKeySelector{}) {
			c.ClientSecretFile = SecretPath(r.Name, r.Key)
		}
		if m := s.Claims; m != nil {
			c.Claims = config.ConnectorClaims{Subject: m.Subject, Email: m.Email, EmailVerified: m.EmailVerified, Name: m.Name, Groups: m.Groups}
		}
		c.SAML = samlConnector(s.SAML) // connectors_saml.go
		// Staying correct after sign-in (D78).
		c.OfflineAccess, c.OnUpstreamDown = s.OfflineAccess, s.OnUpstreamDown
		if s.RecheckEvery != nil {
			c.RecheckEvery = config.Duration(s.RecheckEvery.Duration)
		}
		out = append(out, c)
	}
	return out
}

// branding is the auth configuration's branding of a spec's (the same four fields; nil is none).
func branding(b *v1alpha1.BrandingSpec) config.Branding {
	if b == nil {
		return config.Branding{}
	}
	return config.Branding{ProductName: b.ProductName, LogoURL: b.LogoURL, AccentColor: b.AccentColor, StylesheetURL: b.StylesheetURL}
}

// authMail gives auth the relay the forms deliver through, for its own mail (sign-up, verification,
// reset, "your password was changed"): one relay per platform, as config.Config.MailSettings reads
// forms.delivery.smtp in a single configuration file. Auth gets no relay (and logs each mail it could
// not send) without forms.delivery.smtp, or when that relay would carry auth's mail in clear text to
// another machine: its links are credentials, and the mail block refuses that (a relay off loopback is
// STARTTLS by default, whatever startTLS says, so only a loopback relay is ever clear text).
func authMail(f v1alpha1.FormsSpec) config.Mail {
	m, ok := (&config.Config{Forms: formsConfig(f)}).MailSettings()
	if !ok || !m.Valid() {
		return config.Mail{}
	}
	return m
}

// authMails reports whether auth sends its mail through the forms' relay (authMail).
func authMails(fs *v1alpha1.FormsService) bool { return authMail(fs.Spec.Forms).SMTP != nil }

func duration(d *metav1.Duration) config.Duration {
	if d == nil {
		return 0
	}
	return config.Duration(d.Duration)
}

// ConfigKey is the ConfigMap key holding a component's configuration file.
func ConfigKey(component string) string { return component + ".yaml" }

const configHeader = "# Rendered by the formsservice operator from FormsService %s/%s. Edit the FormsService, not this file.\n"

// RenderConfig marshals a component's configuration. It fails when the result would not load in the
// service (config.Load's validation), so that a bad value never reaches a running pod.
func RenderConfig(fs *v1alpha1.FormsService, component string, in Inputs) (string, error) {
	c := ServiceConfig(fs, component, in)
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", err
	}
	check, err := config.Parse(b)
	if err != nil {
		return "", fmt.Errorf("%s configuration: %w", component, err)
	}
	check.ApplyDefaults()
	if err := check.Validate(); err != nil {
		return "", fmt.Errorf("%s configuration: %w", component, err)
	}
	return fmt.Sprintf(configHeader, fs.Namespace, fs.Name) + string(b), nil
}

// ConfigMap holds the configuration file of every service, one key each (forms.yaml, auth.yaml,
// health.yaml). Each pod mounts only its own key as /etc/formsservice/config.yaml.
func ConfigMap(fs *v1alpha1.FormsService, in Inputs) (*corev1ac.ConfigMapApplyConfiguration, error) {
	data := map[string]string{}
	for _, comp := range Components {
		s, err := RenderConfig(fs, comp, in)
		if err != nil {
			return nil, err
		}
		data[ConfigKey(comp)] = s
	}
	cm := corev1ac.ConfigMap(NamesOf(fs).ConfigMap, fs.Namespace).WithData(data)
	cm.ObjectMetaApplyConfiguration = objectMeta(fs, NamesOf(fs).ConfigMap, "config")
	return cm, nil
}

// RestartHash digests what a component reads only at start-up: its configuration without the parts the
// services reload live (allowed origins, OAuth clients), and the Secrets it mounts. The Deployment's pod
// template carries it, so a change rolls the pods and anything else reaches them without a restart.
func RestartHash(fs *v1alpha1.FormsService, component string, in Inputs) string {
	c := ServiceConfig(fs, component, in)
	c.AllowedOrigins = nil
	c.Auth.Clients = nil
	b, _ := yaml.Marshal(c) // a struct of strings, numbers and slices always marshals
	h := sha256.New()
	h.Write(b)
	var secrets []string
	for _, m := range secretMounts(fs, component) {
		secrets = append(secrets, m.Secret)
	}
	sort.Strings(secrets)
	for _, s := range secrets {
		fmt.Fprintf(h, "\x00%s=%s", s, in.SecretDigests[s])
	}
	if k := FilesCredentialsDigestKey(fs); k != "" && component == Forms {
		fmt.Fprintf(h, "\x00%s=%s", k, in.SecretDigests[k]) // their environment (formFilesEnv)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
