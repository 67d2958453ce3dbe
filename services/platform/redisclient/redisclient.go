// Package redisclient builds the one go-redis UniversalClient every service uses, with the timeouts and
// retries that turn a slow or dead store into a prompt error.
package redisclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
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
func New(c config.Redis, getenv func(string) string) (redis.UniversalClient, error) {
	timeout := c.Timeout.D()
	if timeout <= 0 {
		timeout = time.Second
	}
	password := ""
	if c.PasswordFile != "" {
		p, err := secretfile.Read(c.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("redis password: %w", err)
		}
		password = p
	}
	if getenv != nil && getenv("REDIS_PASSWORD") != "" {
		password = getenv("REDIS_PASSWORD")
	}
	opts := &redis.UniversalOptions{
		Addrs:                 c.Addrs,
		MasterName:            c.MasterName,
		IsClusterMode:         c.Cluster,
		Username:              c.Username,
		Password:              password,
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
	if c.TLS {
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.URL != "" {
		u, err := redis.ParseURL(c.URL)
		if err != nil {
			return nil, fmt.Errorf("redis url: %w", err)
		}
		opts.Addrs = []string{u.Addr}
		opts.DB = u.DB
		opts.TLSConfig = u.TLSConfig
		if u.Username != "" {
			opts.Username = u.Username
		}
		if u.Password != "" && password == "" {
			opts.Password = u.Password
		}
	}
	if c.CAFile != "" {
		pool, err := readCAFile(c.CAFile)
		if err != nil {
			return nil, err
		}
		if opts.TLSConfig == nil {
			opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		opts.TLSConfig.RootCAs = pool
	}
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
