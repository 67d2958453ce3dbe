// Package redisclient builds the one go-redis UniversalClient every service uses, with the timeouts and
// retries that turn a slow or dead store into a prompt error.
package redisclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/secretfile"
)

// New builds the one go-redis UniversalClient every service uses: a single server (URL), Sentinel
// (Addrs + MasterName) or Cluster (Addrs + Cluster). Timeouts are short and retries few, so that a slow or
// dead store turns into a prompt error (502) instead of a hung request.
//
// The settings combine; none silently undoes another. A URL gives the address, the database (unless it
// names none, then db does) and, when the other settings leave them empty, the username and password;
// tls: true or a caFile turns TLS on for a redis:// URL as for addrs (a rediss:// URL is TLS whatever tls
// says); caFile is the trust for either; passwordFile (or REDIS_PASSWORD) wins over a password in the URL.
// Sentinel's own password (sentinelPasswordFile, or REDIS_SENTINEL_PASSWORD) is for the sentinels, the
// password for the data nodes.
func New(c config.Redis, getenv func(string) string) (redis.UniversalClient, error) {
	timeout := c.Timeout.D()
	if timeout <= 0 {
		timeout = time.Second
	}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	password, err := secret(c.PasswordFile, getenv("REDIS_PASSWORD"), "redis password")
	if err != nil {
		return nil, err
	}
	sentinelPassword, err := secret(c.SentinelPasswordFile, getenv("REDIS_SENTINEL_PASSWORD"), "redis sentinel password")
	if err != nil {
		return nil, err
	}
	opts := &redis.UniversalOptions{
		Addrs:                 c.Addrs,
		MasterName:            c.MasterName,
		IsClusterMode:         c.Cluster,
		Username:              c.Username,
		Password:              password,
		SentinelUsername:      c.SentinelUsername,
		SentinelPassword:      sentinelPassword,
		DB:                    c.DB,
		DialTimeout:           timeout / 2,
		DialerRetries:         1,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		PoolTimeout:           timeout,
		ContextTimeoutEnabled: true,
		MaxRetries:            1,
		MinRetryBackoff:       10 * time.Millisecond,
		MaxRetryBackoff:       50 * time.Millisecond,
	}
	var tlsConfig *tls.Config
	if c.TLS || c.CAFile != "" {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.URL != "" {
		u, err := redis.ParseURL(c.URL)
		if err != nil {
			return nil, fmt.Errorf("redis url: %w", err)
		}
		opts.Addrs = []string{u.Addr}
		if u.DB != 0 {
			opts.DB = u.DB
		}
		if opts.Username == "" {
			opts.Username = u.Username
		}
		if opts.Password == "" {
			opts.Password = u.Password
		}
		switch {
		case u.TLSConfig != nil: // rediss://, with its host as the name to verify and its skip_verify
			tlsConfig = u.TLSConfig
		case tlsConfig != nil && u.Network == "unix":
			return nil, errors.New("redis: tls or caFile set with a unix:// URL; a Unix socket is not reached over TLS")
		case tlsConfig != nil:
			tlsConfig.ServerName, _, _ = net.SplitHostPort(u.Addr)
		}
	}
	if c.CAFile != "" {
		pool, err := readCAFile(c.CAFile)
		if err != nil {
			return nil, err
		}
		tlsConfig.RootCAs = pool
	}
	opts.TLSConfig = tlsConfig
	if len(opts.Addrs) == 0 {
		return nil, fmt.Errorf("redis: no address configured")
	}
	if opts.MasterName == "" && (opts.IsClusterMode || len(opts.Addrs) > 1) {
		// go-redis learns a new slot map from MOVED answers, or else every ClusterStateReloadInterval
		// (default 60 s). A master that died answers nothing, so after its replica is promoted the client
		// would keep dialling the dead address, and answering 502, for up to a minute. CLUSTER SLOTS is
		// cheap: reload it every ClusterReloadInterval (test/reliability's failover test proves the bound).
		co := opts.Cluster()
		co.ClusterStateReloadInterval = ClusterReloadInterval
		return redis.NewClusterClient(co), nil
	}
	return redis.NewUniversalClient(opts), nil
}

// secret is the environment's value when set, else the file's content, else "".
func secret(file, env, what string) (string, error) {
	if env != "" {
		return env, nil
	}
	if file == "" {
		return "", nil
	}
	p, err := secretfile.Read(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return p, nil
}

// readCAFile reads a PEM bundle of certificate authorities: the only ones the store's certificate may
// chain to (a private CA, as a Redis operator or cloud service issues, is not in the system's roots).
func readCAFile(path string) (*x509.CertPool, error) {
	pemData, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("redis caFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, fmt.Errorf("redis caFile %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// ClusterReloadInterval bounds how long a Cluster client keeps an outdated slot map after a failover.
const ClusterReloadInterval = time.Second

// Ping answers whether the store answers within ctx; the readiness probes use it.
func Ping(ctx context.Context, rdb redis.UniversalClient) error {
	return rdb.Ping(ctx).Err()
}

// Logger routes go-redis's own messages (pool dial failures during an outage) into the JSON log
// at warn level instead of plain text on stderr. Install it once per process with redis.SetLogger.
type Logger struct{ Log *slog.Logger }

// Printf implements go-redis's logging interface.
func (l Logger) Printf(ctx context.Context, format string, v ...any) {
	l.Log.WarnContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}

// Describe names the store c points at for a message, without its password: the URL (redacted), or the
// Sentinel master and its sentinels, or the Cluster's seed addresses.
func Describe(c config.Redis) string {
	switch {
	case c.URL != "":
		if u, err := url.Parse(c.URL); err == nil {
			return u.Redacted()
		}
		return "an unreadable redis URL"
	case c.MasterName != "":
		return fmt.Sprintf("Sentinel master %q via %s", c.MasterName, strings.Join(c.Addrs, ", "))
	case c.Cluster || len(c.Addrs) > 1:
		return "Cluster " + strings.Join(c.Addrs, ", ")
	}
	return strings.Join(c.Addrs, ", ")
}
