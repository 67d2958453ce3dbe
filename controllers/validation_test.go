package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/maintenance"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A FormsService the API server must refuse, and the words of the message the user reads.
func TestCRD_RefusesInvalidResourcesWithReadableMessages(t *testing.T) {
	ns := newNamespace(t)
	client := func(id string, uris ...v1alpha1.RedirectURI) v1alpha1.OAuthClient {
		return v1alpha1.OAuthClient{ClientID: id, RedirectURIs: uris}
	}
	cases := []struct {
		name   string
		mutate func(fs *v1alpha1.FormsService)
		want   string
	}{
		{"origin with a path", func(fs *v1alpha1.FormsService) {
			fs.Spec.AllowedOrigins = []v1alpha1.Origin{"https://app.example.com/"}
		},
			"an origin is scheme://host[:port]"},
		{"origin without scheme", func(fs *v1alpha1.FormsService) { fs.Spec.AllowedOrigins = []v1alpha1.Origin{"app.example.com"} },
			"an origin is scheme://host[:port]"},
		{"origin in upper case", func(fs *v1alpha1.FormsService) { fs.Spec.AllowedOrigins = []v1alpha1.Origin{"https://App.example.com"} },
			"an origin is scheme://host[:port]"},
		{"origin with a bad port", func(fs *v1alpha1.FormsService) {
			fs.Spec.AllowedOrigins = []v1alpha1.Origin{"https://app.example.com:70000"}
		},
			"an origin is scheme://host[:port]"},
		{"wildcard over http", func(fs *v1alpha1.FormsService) { fs.Spec.AllowedOrigins = []v1alpha1.Origin{"http://*.example.com"} },
			"an origin is scheme://host[:port]"},
		{"wildcard over a top-level domain", func(fs *v1alpha1.FormsService) { fs.Spec.AllowedOrigins = []v1alpha1.Origin{"https://*.com"} },
			"an origin is scheme://host[:port]"},
		{"a bare star (too short to be an origin)", func(fs *v1alpha1.FormsService) { fs.Spec.AllowedOrigins = []v1alpha1.Origin{"*"} },
			"spec.allowedOrigins[0]"},
		{"a star for the whole host", func(fs *v1alpha1.FormsService) { fs.Spec.AllowedOrigins = []v1alpha1.Origin{"https://*"} },
			"an origin is scheme://host[:port]"},
		{"redirect URI over http", func(fs *v1alpha1.FormsService) {
			fs.Spec.OAuthClients = []v1alpha1.OAuthClient{client("web", "http://app.example.com/cb")}
		}, "a redirect URI must use https (http is allowed only for localhost, 127.0.0.1 and [::1])"},
		{"redirect URI with a fragment", func(fs *v1alpha1.FormsService) {
			fs.Spec.OAuthClients = []v1alpha1.OAuthClient{client("web", "https://app.example.com/cb#x")}
		}, "must not contain a fragment"},
		{"redirect URI on a host that only looks like localhost", func(fs *v1alpha1.FormsService) {
			fs.Spec.OAuthClients = []v1alpha1.OAuthClient{client("web", "http://localhost.evil.example/cb")}
		}, "a redirect URI must use https"},
		{"post-logout URI over http", func(fs *v1alpha1.FormsService) {
			c := client("web", "https://app.example.com/cb")
			c.PostLogoutRedirectURIs = []v1alpha1.RedirectURI{"http://app.example.com/"}
			fs.Spec.OAuthClients = []v1alpha1.OAuthClient{c}
		}, "a redirect URI must use https"},
		{"audience that is not an absolute URI", func(fs *v1alpha1.FormsService) {
			c := client("web", "https://app.example.com/cb")
			c.Audiences = []v1alpha1.Audience{"api.example.com/orders"}
			fs.Spec.OAuthClients = []v1alpha1.OAuthClient{c}
		}, "an audience is an absolute URI"},
		{"audience with a fragment", func(fs *v1alpha1.FormsService) {
			c := client("web", "https://app.example.com/cb")
			c.Audiences = []v1alpha1.Audience{"https://api.example.com/#orders"}
			fs.Spec.OAuthClients = []v1alpha1.OAuthClient{c}
		}, "an audience is an absolute URI"},
		{"duplicate client IDs", func(fs *v1alpha1.FormsService) {
			fs.Spec.OAuthClients = []v1alpha1.OAuthClient{client("web", "https://a.example.com/cb"), client("web", "https://b.example.com/cb")}
		}, "clientID values must be unique"},
		{"client without redirect URI", func(fs *v1alpha1.FormsService) {
			fs.Spec.OAuthClients = []v1alpha1.OAuthClient{client("web")}
		}, "spec.oauthClients[0].redirectURIs"},
		{"too many forms replicas", func(fs *v1alpha1.FormsService) { fs.Spec.Forms.Replicas = ptr.To[int32](51) },
			"replicas must be between 0 and 50"},
		{"autoscaling minimum above its maximum", func(fs *v1alpha1.FormsService) {
			fs.Spec.Auth.Autoscaling = &v1alpha1.AutoscalingSpec{MinReplicas: ptr.To[int32](5), MaxReplicas: 3}
		}, "autoscaling.minReplicas must not exceed autoscaling.maxReplicas"},
		{"autoscaling without a maximum", func(fs *v1alpha1.FormsService) {
			fs.Spec.Auth.Autoscaling = &v1alpha1.AutoscalingSpec{MinReplicas: ptr.To[int32](1)}
		}, "spec.auth.autoscaling.maxReplicas"},
		{"network policies that would let no ingress in", func(fs *v1alpha1.FormsService) {
			fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{}
		}, "networkPolicy.ingressFrom must select the ingress controller's (or Gateway's) pods"},
		{"an unknown spread policy", func(fs *v1alpha1.FormsService) {
			fs.Spec.TopologySpread = &v1alpha1.TopologySpreadSpec{Zones: "Sometimes"}
		}, "spec.topologySpread.zones"},
		{"negative auth replicas", func(fs *v1alpha1.FormsService) { fs.Spec.Auth.Replicas = ptr.To[int32](-1) },
			"replicas must be between 0 and 50"},
		{"no public URL and no ingress", func(fs *v1alpha1.FormsService) { fs.Spec.Ingress = nil },
			"set publicURL, ingress.host or gateway.host"},
		{"public URL with a path", func(fs *v1alpha1.FormsService) { fs.Spec.PublicURL = "https://id.example.com/auth" },
			"publicURL is scheme://host[:port] with no path"},
		{"sentinel without master name", func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis = v1alpha1.RedisSpec{Mode: v1alpha1.RedisSentinel, Addresses: []v1alpha1.HostPort{"s1:26379"}}
		}, "Sentinel mode needs addresses (the sentinels) and masterName"},
		{"standalone with two addresses", func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"r1:6379", "r2:6379"}}
		}, "Standalone mode takes one address"},
		{"a database number in Cluster mode", func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis = v1alpha1.RedisSpec{Mode: v1alpha1.RedisCluster, Addresses: []v1alpha1.HostPort{"r1:6379"}, DB: 2}
		}, "a Redis Cluster has only db 0"},
		{"redis address without port", func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"redis.example.internal"}}
		}, "must be host:port"},
		{"password for the managed redis", func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis = v1alpha1.RedisSpec{PasswordSecretRef: &v1alpha1.SecretKeySelector{Name: "r", Key: "p"}}
		}, "passwordSecretRef, username and tls apply to an external Redis"},
		{"a CA bundle for the managed redis", func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis = v1alpha1.RedisSpec{CASecretRef: &v1alpha1.SecretKeySelector{Name: "ca", Key: "ca.crt"}}
		}, "and so does caSecretRef"},
		{"access token lifetime too long", func(fs *v1alpha1.FormsService) {
			fs.Spec.Auth.AccessTokenLifetime = &metav1.Duration{Duration: 48 * 60 * 60 * 1e9}
		}, "accessTokenLifetime must be between 1m and 24h"},
		{"second-factor challenge lifetime too long", func(fs *v1alpha1.FormsService) {
			fs.Spec.Auth.MFA = &v1alpha1.MFASpec{ChallengeLifetime: &metav1.Duration{Duration: 60 * 60 * 1e9}}
		}, "mfa.challengeLifetime must be between 30s and 30m"},
		{"no wrong code allowed at all", func(fs *v1alpha1.FormsService) { fs.Spec.Auth.MFA = &v1alpha1.MFASpec{Failures: ptr.To[int32](0)} },
			"spec.auth.mfa.failures"},
		{"passkey ceremony timeout too short", func(fs *v1alpha1.FormsService) {
			fs.Spec.Auth.Passkeys = &v1alpha1.PasskeysSpec{Timeout: &metav1.Duration{Duration: 10 * 1e9}}
		}, "passkeys.timeout must be between 1m and 10m"},
		{"passkey relying party name too long", func(fs *v1alpha1.FormsService) {
			fs.Spec.Auth.Passkeys = &v1alpha1.PasskeysSpec{RPName: strings.Repeat("n", 65)}
		}, "spec.auth.passkeys.rpName"},
		{"negative rate limit", func(fs *v1alpha1.FormsService) { fs.Spec.Forms.RateLimitPerMinute = ptr.To[int32](-1) },
			"spec.forms.rateLimitPerMinute"},
		{"webhook without an address", func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{Webhook: &v1alpha1.WebhookDelivery{}}
		}, "set webhook urlSecretRef (a Secret key holding the webhook URL) or url"},
		{"webhook url that is not http(s)", func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{Webhook: &v1alpha1.WebhookDelivery{URL: "hooks.slack.com/services/x"}}
		}, "webhook url must be an http or https URL"},
		{"a previous webhook signing secret without the new one", func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.DataPolicy = &v1alpha1.FormsDataPolicy{WebhookPreviousSigningSecretRef: &v1alpha1.SecretKeySelector{Name: "h", Key: "old"}}
		}, "webhookPreviousSigningSecretRef is set only during a rotation"},
		{"double opt-in confirmation window too short", func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.DoubleOptIn = &v1alpha1.DoubleOptInSpec{ConfirmWithin: &metav1.Duration{Duration: 60 * 1e9}}
		}, "confirmWithin must be between 1h and 720h"},
		{"bot check by an unknown provider", func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Sites = []v1alpha1.FormsSite{{Origin: "https://app.example.com",
				BotCheck: &v1alpha1.BotCheckSpec{Provider: "friendlycaptcha", SecretRef: v1alpha1.SecretKeySelector{Name: "c", Key: "k"}}}}
		}, `supported values: "turnstile", "hcaptcha", "recaptcha"`},
		{"bot check score above 1", func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Sites = []v1alpha1.FormsSite{{Origin: "https://app.example.com",
				BotCheck: &v1alpha1.BotCheckSpec{Provider: "recaptcha", SecretRef: v1alpha1.SecretKeySelector{Name: "c", Key: "k"}, MinScore: "1.5"}}}
		}, "spec.forms.sites[0].botCheck.minScore"},
		{"two sites for one origin", func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Sites = []v1alpha1.FormsSite{{Origin: "https://app.example.com"}, {Origin: "https://app.example.com"}}
		}, "Duplicate value"},
		{"name that is not a DNS label", func(fs *v1alpha1.FormsService) { fs.Name = "9lives" },
			"name must start with a letter"},
		{"name too long for the objects it prefixes", func(fs *v1alpha1.FormsService) { fs.Name = strings.Repeat("a", 41) },
			"at most 40 characters"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := sampleFS(ns)
			fs.Name = fmt.Sprintf("bad%d", i)
			tc.mutate(fs)
			err := k8s.Create(context.Background(), fs)
			if err == nil {
				t.Fatalf("the API server accepted it")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("message %q does not say %q", err.Error(), tc.want)
			}
		})
	}
}

// storageSize grows, never shrinks; setting it later or removing it is judged against the 1Gi the
// volume then has (before, adding or removing it slipped past the rule and the StatefulSet refused it).
// A name whose objects would take another FormsService's object names in the namespace is refused
// when it is created (D72): acme-redis's configuration ConfigMap would be acme's Redis ConfigMap
// (acme-redis-config), acme-forms's HTTPRoute acme's forms HTTPRoute. The names the rule lets through
// are proved free of collisions by render's TestNames_NoTwoFormsServicesShareAnObjectName.
func TestCRD_RefusesNamesWhoseObjectsWouldCollide(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for _, name := range []string{"acme-redis", "acme-forms", "redis-redis"} {
		fs := sampleFS(ns)
		fs.Name = name
		err := k8s.Create(ctx, fs)
		if err == nil || !strings.Contains(err.Error(), "name must not end in -redis or -forms: FormsService x names its Redis ConfigMap x-redis-config") {
			t.Errorf("%s: %v, want the collision refused", name, err)
		}
	}
	for _, name := range []string{"redis", "forms", "acme-redis1", "acme-redisx", "acme-forms-eu", "acmeredis", "acme-config"} {
		fs := sampleFS(ns)
		fs.Name = name
		if err := k8s.Create(ctx, fs); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		// Updates pass the rule (it runs on create only), the operator's status writes included.
		updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.LogLevel = "debug" })
	}
}

// The API server refuses exactly the windows the operator cannot read (controllers/maintenance), so a
// window never reaches the reconciler only to hold an upgrade forever.
func TestCRD_RefusesMaintenanceWindowsTheOperatorCannotRead(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for i, w := range []string{"Sat:01:00-05:00", "01:00-05:00", "Sun:22:00-02:00", "00:00-23:59", "Mon:23:59-00:00",
		"", "Sat", "sat:01:00-05:00", "Sat:1:00-05:00", "24:00-01:00", "01:60-02:00", "01:00-01:00", "Sat:07:30-07:30",
		"Sat 01:00-05:00", "Saturday:01:00-02:00", "01:00-05:00 "} {
		_, parseErr := maintenance.Parse(w)
		fs := sampleFS(ns)
		fs.Name = fmt.Sprintf("window%d", i)
		fs.Spec.UpdatePolicy = &v1alpha1.UpdatePolicy{MaintenanceWindows: []v1alpha1.MaintenanceWindow{v1alpha1.MaintenanceWindow(w)}}
		err := k8s.Create(ctx, fs)
		if (err == nil) != (parseErr == nil) {
			t.Errorf("window %q: the API server says %v, the operator says %v", w, err, parseErr)
		}
		if w == "01:00-01:00" && (err == nil || !strings.Contains(err.Error(), "must not open and close at the same minute")) {
			t.Errorf("window %q: %v, want the same-minute message", w, err)
		}
	}
}

func TestCRD_StorageSizeGrowsNeverShrinks(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	for i, tc := range []struct {
		name        string
		create, set *v1alpha1.ManagedRedisSpec
		want        string // "" accepted
		addresses   []v1alpha1.HostPort
	}{
		{"grow", &v1alpha1.ManagedRedisSpec{StorageSize: q("2Gi")}, &v1alpha1.ManagedRedisSpec{StorageSize: q("5Gi")}, "", nil},
		{"grow, written as bytes", &v1alpha1.ManagedRedisSpec{StorageSize: q("2Gi")}, &v1alpha1.ManagedRedisSpec{StorageSize: q("3000000000")}, "", nil},
		{"shrink", &v1alpha1.ManagedRedisSpec{StorageSize: q("2Gi")}, &v1alpha1.ManagedRedisSpec{StorageSize: q("1Gi")}, "storageSize may grow, never shrink", nil},
		{"set later, above the default", nil, &v1alpha1.ManagedRedisSpec{StorageSize: q("2Gi")}, "", nil},
		{"set later, below the default", nil, &v1alpha1.ManagedRedisSpec{StorageSize: q("512Mi")}, "the volume has the default 1Gi", nil},
		{"set later in managed, below the default", &v1alpha1.ManagedRedisSpec{}, &v1alpha1.ManagedRedisSpec{StorageSize: q("512Mi")}, "the volume has the default 1Gi", nil},
		{"removed, above the default", &v1alpha1.ManagedRedisSpec{StorageSize: q("2Gi")}, nil, "storageSize cannot be removed", nil},
		{"removed from managed, above the default", &v1alpha1.ManagedRedisSpec{StorageSize: q("2Gi")}, &v1alpha1.ManagedRedisSpec{}, "storageSize cannot be removed", nil},
		{"removed, at the default", &v1alpha1.ManagedRedisSpec{StorageSize: q("1Gi")}, nil, "", nil},
		{"switched to an external Redis", &v1alpha1.ManagedRedisSpec{StorageSize: q("2Gi")}, nil, "", []v1alpha1.HostPort{"redis.example:6379"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := sampleFS(ns)
			fs.Name = fmt.Sprintf("size%d", i)
			fs.Spec.Redis.Managed = tc.create
			if err := k8s.Create(ctx, fs); err != nil {
				t.Fatal(err)
			}
			// Read-change-write again when the operator's status write came in between: the answer
			// wanted is the CEL rule's, not a Conflict.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), fs); err != nil {
					return err
				}
				fs.Spec.Redis.Managed = tc.set
				fs.Spec.Redis.Addresses = tc.addresses
				return k8s.Update(ctx, fs, client.DryRunAll)
			})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}

// The branding's rules: a value the CRD accepts must load in auth (config.BrandingURL, the colour's
// pattern), and the bad ones are refused at admission with a message that names the field.
func TestCRD_BrandingRulesAgreeWithTheServices(t *testing.T) {
	ns := newNamespace(t)
	good := []string{
		"https://cdn.example.com/logo.svg", "https://cdn.example.com", "https://cdn.example.com:8443/a/b-c_d.png",
		"http://localhost:8080/logo.png", "http://127.0.0.1:3000/brand.css", "http://[::1]:8080/x.css", "https://cdn.example.com/a%20b.png",
	}
	bad := []string{
		"http://cdn.example.com/logo.svg", "https://cdn.example.com/logo.svg?v=2", "https://cdn.example.com/logo.svg#x",
		"https://user@cdn.example.com/l.png", "https://cdn.example.com/a;b.css", "https://cdn.example.com/a,b.css",
		"https://cdn.example.com/a b.css", "https://cdn.example.com/a'b.css", "javascript:alert(1)", "/logo.png",
		"https://cdn.example.com/%zz.png", "https://", "http://localhost.evil.example/l.png", "ftp://cdn.example.com/l.png",
	}
	for i, u := range append(good, bad...) {
		for _, field := range []string{"logoURL", "stylesheetURL"} {
			fs := sampleFS(ns)
			fs.Name = fmt.Sprintf("brand%d%s", i, strings.ToLower(field[:4]))
			b := &v1alpha1.BrandingSpec{LogoURL: u}
			if field == "stylesheetURL" {
				b = &v1alpha1.BrandingSpec{StylesheetURL: u}
			}
			fs.Spec.Auth.Branding = b
			apiErr := k8s.Create(context.Background(), fs, client.DryRunAll)
			svcErr := config.BrandingURL(u)
			if apiErr == nil && svcErr != nil {
				t.Errorf("%s %q: the CRD accepts it but auth refuses it: %v", field, u, svcErr)
			}
			if i < len(good) && apiErr != nil {
				t.Errorf("%s %q: the CRD refuses a good URL: %v", field, u, apiErr)
			}
			if i >= len(good) {
				if apiErr == nil {
					t.Errorf("%s %q: the CRD accepts a bad URL", field, u)
				} else if !strings.Contains(apiErr.Error(), field+" must be an https URL") {
					t.Errorf("%s %q: message %q does not name the rule", field, u, apiErr)
				}
			}
		}
	}
	for i, tc := range []struct {
		b    v1alpha1.BrandingSpec
		want string // "" accepted
	}{
		{v1alpha1.BrandingSpec{ProductName: "Acme ID", AccentColor: "#1F5FD6", LogoURL: "https://cdn.example.com/l.svg", StylesheetURL: "https://cdn.example.com/b.css"}, ""},
		{v1alpha1.BrandingSpec{AccentColor: "#ffff00"}, ""}, // any colour: the pages derive readable ones from it
		{v1alpha1.BrandingSpec{AccentColor: "#12345"}, "accentColor must be a #rrggbb colour"},
		{v1alpha1.BrandingSpec{AccentColor: "blue"}, "accentColor must be a #rrggbb colour"},
		{v1alpha1.BrandingSpec{AccentColor: "#1234567"}, "spec.auth.branding.accentColor"},
		{v1alpha1.BrandingSpec{ProductName: "   "}, "productName must be text without control characters"},
		{v1alpha1.BrandingSpec{ProductName: "a\x07b"}, "productName must be text without control characters"},
		{v1alpha1.BrandingSpec{ProductName: strings.Repeat("n", 81)}, "spec.auth.branding.productName"},
	} {
		fs := sampleFS(ns)
		fs.Name = fmt.Sprintf("brandfield%d", i)
		b := tc.b
		fs.Spec.Auth.Branding = &b
		err := k8s.Create(context.Background(), fs, client.DryRunAll)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: refused: %v", tc.b, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want a refusal saying %q", tc.b, err, tc.want)
		case tc.want == "":
			// What the CRD accepts loads in auth.
			c := config.Config{Auth: config.Auth{Branding: config.Branding{ProductName: b.ProductName, LogoURL: b.LogoURL, AccentColor: b.AccentColor, StylesheetURL: b.StylesheetURL}}}
			c.ApplyDefaults()
			if err := c.Validate(); err != nil && strings.Contains(err.Error(), "branding") {
				t.Errorf("%+v: the CRD accepts it but auth refuses it: %v", tc.b, err)
			}
		}
	}
	// A client's override has the same rules.
	fs := sampleFS(ns)
	fs.Name = "brandclient"
	fs.Spec.OAuthClients = []v1alpha1.OAuthClient{{ClientID: "web", RedirectURIs: []v1alpha1.RedirectURI{"https://app.example.com/cb"}, Branding: &v1alpha1.BrandingSpec{AccentColor: "red"}}}
	if err := k8s.Create(context.Background(), fs, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "spec.oauthClients[0].branding.accentColor") {
		t.Errorf("client branding: %v", err)
	}
}

// The API server and the services must agree: an origin the CRD accepts must load in the services, and
// one the services would refuse must be refused at admission, never discovered by a crash-looping pod.
func TestCRD_OriginRulesAgreeWithTheServices(t *testing.T) {
	ns := newNamespace(t)
	// Every one of these is a real origin users write; the CRD must accept each.
	good := []string{
		"https://app.example.com", "http://localhost:8080", "http://127.0.0.1:3000", "http://[::1]:8080",
		"https://*.example.com", "https://*.example.com:8443", "https://a-b.example.co.uk", "https://xn--bcher-kva.example",
		"https://app.example.com:65535",
	}
	bad := []string{
		"https://app.example.com:65536", "https://app.example.com:0", "https://app.example.com/", "https://app.example.com/path",
		"https://user@app.example.com", "https://app.example.com?x=1", "https://APP.example.com", "ftp://app.example.com",
		"http://*.example.com", "https://*.com", "https://a.*.example.com", "https://app_1.example.com",
		"https://app.example.com#top", "https://", "https:// app.example.com", "https://*.example.com/x",
	}
	for i, o := range append(good, bad...) {
		fs := sampleFS(ns)
		fs.Name = fmt.Sprintf("origin%d", i)
		fs.Spec.AllowedOrigins = []v1alpha1.Origin{v1alpha1.Origin(o)}
		apiErr := k8s.Create(context.Background(), fs, client.DryRunAll)
		svcErr := config.ValidateOriginPattern(o)
		if apiErr == nil && svcErr != nil {
			t.Errorf("%q: the CRD accepts it but the services refuse it: %v", o, svcErr)
		}
		if i < len(good) && apiErr != nil {
			t.Errorf("%q: the CRD refuses a good origin: %v", o, apiErr)
		}
		if i >= len(good) && apiErr == nil {
			t.Errorf("%q: the CRD accepts a bad origin", o)
		}
	}
}

func TestCRD_DefaultsFillReplicasAndRedisMode(t *testing.T) {
	ctx := context.Background()
	fs := &v1alpha1.FormsService{
		ObjectMeta: metav1.ObjectMeta{Name: "minimal", Namespace: newNamespace(t)},
		Spec:       v1alpha1.FormsServiceSpec{PublicURL: "https://id.example.com"},
	}
	if err := k8s.Create(ctx, fs, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(fs.Spec.Forms.Replicas, 0) != 2 || ptr.Deref(fs.Spec.Auth.Replicas, 0) != 2 || ptr.Deref(fs.Spec.Health.Replicas, 0) != 2 {
		t.Errorf("replicas not defaulted: %v %v %v", fs.Spec.Forms.Replicas, fs.Spec.Auth.Replicas, fs.Spec.Health.Replicas)
	}
	if fs.Spec.Redis.Mode != v1alpha1.RedisStandalone || fs.Spec.LogLevel != "info" {
		t.Errorf("defaults: redis mode %q, log level %q", fs.Spec.Redis.Mode, fs.Spec.LogLevel)
	}
}

// A machine client (client_credentials) needs no redirect URIs but a credential of its own; keys go
// with private_key_jwt, and the API server says so before the operator renders anything.
func TestCRD_MachineClients(t *testing.T) {
	ns := newNamespace(t)
	jwks := `{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","use":"sig"}]}`
	machine := func(mod func(*v1alpha1.OAuthClient)) func(*v1alpha1.FormsService) {
		return func(fs *v1alpha1.FormsService) {
			c := v1alpha1.OAuthClient{ClientID: "robot", GrantTypes: []v1alpha1.GrantType{"client_credentials"}, TokenEndpointAuthMethod: "private_key_jwt", JWKS: jwks}
			mod(&c)
			fs.Spec.OAuthClients = []v1alpha1.OAuthClient{c}
		}
	}
	for i, tc := range []struct {
		name   string
		mutate func(*v1alpha1.FormsService)
		want   string // "" when accepted
	}{
		{"private_key_jwt, no redirect URIs", machine(func(*v1alpha1.OAuthClient) {}), ""},
		{"a secret", machine(func(c *v1alpha1.OAuthClient) {
			c.TokenEndpointAuthMethod, c.JWKS, c.SecretRef = "", "", &v1alpha1.SecretKeySelector{Name: "robot", Key: "secret"}
		}), ""},
		{"no credential", machine(func(c *v1alpha1.OAuthClient) { c.TokenEndpointAuthMethod, c.JWKS = "", "" }), "client_credentials needs a confidential client"},
		{"private_key_jwt without keys", machine(func(c *v1alpha1.OAuthClient) { c.JWKS = "" }), "private_key_jwt needs jwks"},
		{"keys without private_key_jwt", machine(func(c *v1alpha1.OAuthClient) {
			c.TokenEndpointAuthMethod, c.SecretRef = "", &v1alpha1.SecretKeySelector{Name: "robot", Key: "secret"}
		}), "jwks and tokenEndpointAuthSigningAlg need tokenEndpointAuthMethod private_key_jwt"},
		{"a symmetric algorithm", machine(func(c *v1alpha1.OAuthClient) { c.TokenEndpointAuthSigningAlg = "HS256" }), "tokenEndpointAuthSigningAlg"},
		{"refresh without code", machine(func(c *v1alpha1.OAuthClient) { c.GrantTypes = append(c.GrantTypes, "refresh_token") }), "refresh_token comes with authorization_code"},
		{"code without redirect URIs", machine(func(c *v1alpha1.OAuthClient) { c.GrantTypes = append(c.GrantTypes, "authorization_code") }), "spec.oauthClients[0].redirectURIs"},
		// Back-channel logout and groups in the access token, as the service's configuration checks them.
		{"a back-channel logout URI that requires sid", machine(func(c *v1alpha1.OAuthClient) {
			c.BackchannelLogoutURI, c.BackchannelLogoutSessionRequired = "https://robot.example/bcl", true
		}), ""},
		{"a back-channel logout URI over http", machine(func(c *v1alpha1.OAuthClient) { c.BackchannelLogoutURI = "http://robot.example/bcl" }), "must use https"},
		{"a back-channel logout URI with a fragment", machine(func(c *v1alpha1.OAuthClient) { c.BackchannelLogoutURI = "https://robot.example/bcl#x" }), "must not contain a fragment"},
		{"sid required without a URI", machine(func(c *v1alpha1.OAuthClient) { c.BackchannelLogoutSessionRequired = true }), "backchannelLogoutSessionRequired needs a backchannelLogoutURI"},
		{"groups in the access token with the scope", machine(func(c *v1alpha1.OAuthClient) { c.AccessTokenGroups, c.Scopes = true, []v1alpha1.Scope{"groups"} }), ""},
		{"groups in the access token without the scope", machine(func(c *v1alpha1.OAuthClient) { c.AccessTokenGroups = true }), "accessTokenGroups needs groups in the client's scopes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := sampleFS(ns)
			fs.Name = fmt.Sprintf("machine%d", i)
			tc.mutate(fs)
			err := k8s.Create(context.Background(), fs)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("the API server accepted it")
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("message %q does not say %q", err.Error(), tc.want)
			}
		})
	}
}
