// Package config is the one configuration format every formsservice service reads: a YAML file (the
// operator renders it into a ConfigMap), environment overrides, and the dev-server fixtures. It has no
// dependencies beyond YAML so that the operator can import it to render what the services will read.
package config

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"sigs.k8s.io/yaml"
)

// Config is the whole service configuration. Each service reads its own section plus the shared ones.
type Config struct {
	// PublicURL is the base URL the platform is reached at (the OAuth issuer), e.g. https://id.example.com.
	PublicURL string `json:"publicURL,omitempty"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"logLevel,omitempty"`
	// AllowedOrigins may post to the forms endpoints: exact scheme://host[:port] or https://*.example.com.
	AllowedOrigins []string `json:"allowedOrigins,omitempty"`
	// TrustedProxies are the CIDRs or addresses whose forwarding headers are believed (the ingress).
	TrustedProxies []string `json:"trustedProxies,omitempty"`
	Redis          Redis    `json:"redis,omitempty"`
	Forms          Forms    `json:"forms,omitempty"`
	Auth           Auth     `json:"auth,omitempty"`
	Health         Health   `json:"health,omitempty"`
	// Mail is the relay and sender of the mail the services send themselves (mail.go).
	Mail Mail `json:"mail,omitempty"`

	// ForwardingHeaders are the headers those proxies write the client's address in: X-Forwarded-For,
	// Forwarded (RFC 7239), or both (empty: both, every line in order). Name only the one the proxy
	// manages when it does not remove the other (nginx's proxy_set_header X-Forwarded-For does not).
	ForwardingHeaders []string `json:"forwardingHeaders,omitempty"`
}

// Redis says how to reach the store. Exactly one of URL or Addrs is used; empty means "embedded" in dev.
type Redis struct {
	// URL is a redis:// or rediss:// URL for a single server.
	URL string `json:"url,omitempty"`
	// Addrs lists Sentinel or Cluster seed addresses (host:port).
	Addrs []string `json:"addrs,omitempty"`
	// MasterName selects Sentinel mode.
	MasterName string `json:"masterName,omitempty"`
	// Cluster selects Cluster mode for Addrs.
	Cluster  bool   `json:"cluster,omitempty"`
	Username string `json:"username,omitempty"`
	// PasswordFile is read at start-up (a mounted Secret); REDIS_PASSWORD overrides it. It wins over a
	// password in URL.
	PasswordFile string `json:"passwordFile,omitempty"`
	// SentinelUsername and SentinelPasswordFile authenticate to the sentinels themselves (Sentinel's
	// requirepass), which may differ from the data nodes'; REDIS_SENTINEL_PASSWORD overrides the file.
	SentinelUsername     string `json:"sentinelUsername,omitempty"`
	SentinelPasswordFile string `json:"sentinelPasswordFile,omitempty"`
	// DB is the database number, unless URL names one.
	DB int `json:"db,omitempty"`
	// TLS turns TLS on, for addrs and for a redis:// URL alike (a rediss:// URL is TLS anyway).
	TLS bool `json:"tls,omitempty"`
	// CAFile is a PEM bundle (a mounted Secret) of the certificate authorities the server's certificate
	// must chain to, instead of the system's; setting it turns TLS on.
	CAFile string `json:"caFile,omitempty"`
	// Timeout bounds every command so that a slow store answers 502 instead of hanging. Default 1s.
	Timeout Duration `json:"timeout,omitempty"`
}

// Empty reports whether no store was configured.
func (r Redis) Empty() bool { return r.URL == "" && len(r.Addrs) == 0 }

// Parse reads a YAML (or JSON) document strictly: an unknown key is an error, matched in its exact case,
// so that a typo in a ConfigMap fails loudly instead of being ignored. Every unknown key is reported at
// once, each with its path and the closest known key.
func Parse(data []byte) (*Config, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config: %w", decodeError(err))
	}
	if errs := checkKeys(doc, reflect.TypeFor[Config](), ""); len(errs) > 0 {
		return nil, fmt.Errorf("config: %w", errors.Join(errs...))
	}
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("config: %w", decodeError(err))
	}
	// A double-quoted YAML string can spell any code point ("\x7f"). No setting needs a control
	// character, and YAML cannot write some of them back, so the operator could not render what a
	// service had read: refuse them here, by name, instead.
	if err := checkText(doc, ""); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &c, nil
}

// checkText walks a decoded document and refuses any key or string holding a control character other
// than tab, newline and carriage return, or a Unicode noncharacter.
func checkText(v any, path string) error {
	switch v := v.(type) {
	case string:
		if r, bad := firstBadRune(v); bad {
			return fmt.Errorf("%s: a value holds the control character %U", pathOrRoot(path), r)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) { // sorted: the same document, the same message
			e := v[k]
			if r, bad := firstBadRune(k); bad {
				return fmt.Errorf("%s: a key holds the control character %U", pathOrRoot(path), r)
			}
			if err := checkText(e, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkText(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func firstBadRune(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
		case unicode.IsControl(r), r == 0xFFFE, r == 0xFFFF:
			return r, true
		}
	}
	return 0, false
}

func pathOrRoot(path string) string {
	if path == "" {
		return "the document"
	}
	return strings.TrimPrefix(path, ".")
}

// Load reads path (empty path: an empty config), then applies the environment (getenv) and defaults,
// and validates the result. Every error names the file.
func Load(path string, getenv func(string) string) (*Config, error) {
	c := &Config{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if c, err = Parse(data); err != nil {
			return nil, InFile(path, err)
		}
	}
	c.ApplyEnv(getenv)
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		if path == "" {
			return nil, fmt.Errorf("config (from the environment): %w", err)
		}
		return nil, InFile(path, err)
	}
	return c, nil
}

// InFile names the configuration file in front of every line of err ("config file app.yaml:
// auth.clients[0].clientId: unknown key ..."), keeping err for errors.Is and errors.As.
func InFile(path string, err error) error {
	if err == nil {
		return nil
	}
	return &fileError{path: path, err: err}
}

type fileError struct {
	path string
	err  error
}

func (e *fileError) Unwrap() error { return e.err }

func (e *fileError) Error() string {
	lines := strings.Split(strings.TrimPrefix(e.err.Error(), "config: "), "\n")
	for i, l := range lines {
		lines[i] = "config file " + e.path + ": " + l
	}
	return strings.Join(lines, "\n")
}

// ApplyEnv applies environment overrides. They exist for the few values that differ per machine.
func (c *Config) ApplyEnv(getenv func(string) string) {
	if getenv == nil {
		return
	}
	if v := getenv("REDIS_URL"); v != "" {
		// The URL replaces the file's addressing (url or addrs, Sentinel, Cluster) and nothing else:
		// tls, caFile, passwordFile, username, db and timeout still apply (redisclient.New combines them).
		r := &c.Redis
		r.URL, r.Addrs, r.MasterName, r.Cluster = v, nil, "", false
		r.SentinelUsername, r.SentinelPasswordFile = "", ""
	}
	if v := getenv("FORMSSERVICE_PUBLIC_URL"); v != "" {
		c.PublicURL = v
	}
	if v := getenv("FORMSSERVICE_LOG_LEVEL"); v != "" {
		c.LogLevel = v
	}
	if v := getenv("FORMSSERVICE_ALLOWED_ORIGINS"); v != "" {
		c.AllowedOrigins = splitList(v)
	}
}

// ApplyDefaults fills what was left empty.
func (c *Config) ApplyDefaults() {
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.Redis.Timeout == 0 {
		c.Redis.Timeout = Duration(defaultRedisTimeout)
	}
	c.Forms.applyDefaults()
	c.Auth.applyDefaults(c)
	c.Health.applyDefaults()
	c.Mail.applyDefaults()
}

// Validate reports every problem at once, so that a platform engineer fixes a ConfigMap in one pass.
func (c *Config) Validate() error {
	var errs []error
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("logLevel %q: want debug, info, warn or error", c.LogLevel))
	}
	for _, o := range c.AllowedOrigins {
		if err := ValidateOriginPattern(o); err != nil {
			errs = append(errs, fmt.Errorf("allowedOrigins: %w", err))
		}
	}
	for _, p := range c.TrustedProxies {
		if !validProxy(p) {
			errs = append(errs, fmt.Errorf("trustedProxies: %q is not an IP address or CIDR", p))
		}
	}
	for _, h := range c.ForwardingHeaders {
		if !strings.EqualFold(h, "X-Forwarded-For") && !strings.EqualFold(h, "Forwarded") {
			errs = append(errs, fmt.Errorf("forwardingHeaders: %q: want X-Forwarded-For or Forwarded", h))
		}
	}
	if c.Redis.URL != "" && len(c.Redis.Addrs) > 0 {
		errs = append(errs, errors.New("redis: set url or addrs, not both"))
	}
	if (c.Redis.SentinelUsername != "" || c.Redis.SentinelPasswordFile != "") && c.Redis.MasterName == "" {
		errs = append(errs, errors.New("redis: sentinelUsername and sentinelPasswordFile are for Sentinel: set masterName and addrs (the sentinels), or remove them"))
	}
	errs = append(errs, c.Forms.validate()...)
	errs = append(errs, validateSites(c.Forms.Sites, c.AllowedOrigins)...)
	errs = append(errs, c.Forms.validateOptIn(c.PublicURL)...)
	errs = append(errs, validateDeclared(c.Forms.Declared, c.AllowedOrigins)...)
	errs = append(errs, c.Forms.validateFiles()...)
	errs = append(errs, c.Auth.validate()...)
	errs = append(errs, c.Health.validate()...)
	errs = append(errs, c.Mail.validate()...)
	return errors.Join(errs...)
}

// validProxy accepts what platform.ParseProxyTrust reads: an address or a CIDR. An entry it would skip
// must fail here, or the ingress would silently go untrusted and every client share its rate limit.
func validProxy(s string) bool {
	s = strings.TrimSpace(s)
	if _, err := netip.ParsePrefix(s); err == nil {
		return true
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
