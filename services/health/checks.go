package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/server"
)

// Check measures one component. Name is the body's key, component:measurement.
type Check struct {
	Name          string
	ComponentType string
	// Run measures. A nil value reports the elapsed time in milliseconds as observedValue.
	Run func(ctx context.Context) (value any, unit string, err error)
}

// RedisMode says which kind of deployment the client talks to; each has its own checks.
type RedisMode int

// The modes of config.Redis.
const (
	RedisSingle RedisMode = iota
	RedisSentinel
	RedisCluster
)

// redisChecks: the round trip of a PING (every shard's, for a cluster), and what the client sees of
// the deployment: the cluster's state, or the role of the node Sentinel handed out.
func redisChecks(rdb redis.UniversalClient, mode RedisMode) []Check {
	ping := Check{Name: "redis:responseTime", ComponentType: "datastore", Run: func(ctx context.Context) (any, string, error) {
		return nil, "", rdb.Ping(ctx).Err()
	}}
	cluster, isCluster := rdb.(*redis.ClusterClient)
	if mode == RedisCluster && isCluster {
		ping.Run = func(ctx context.Context) (any, string, error) {
			return nil, "", cluster.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
				return c.Ping(ctx).Err()
			})
		}
		state := Check{Name: "redis:clusterState", ComponentType: "datastore", Run: func(ctx context.Context) (any, string, error) {
			info, err := cluster.ClusterInfo(ctx).Result()
			if err != nil {
				return nil, "", err
			}
			st := infoField(info, "cluster_state")
			if st != "ok" {
				return st, "", safeError("cluster_state is " + orUnknown(st))
			}
			return st, "", nil
		}}
		return []Check{ping, state}
	}
	if mode == RedisSentinel {
		role := Check{Name: "redis:role", ComponentType: "datastore", Run: func(ctx context.Context) (any, string, error) {
			vals, err := rdb.Do(ctx, "ROLE").Slice()
			if err != nil {
				return nil, "", err
			}
			r := ""
			if len(vals) > 0 {
				r, _ = vals[0].(string)
			}
			if r != "master" {
				return r, "", safeError("the node Sentinel gave is a " + orUnknown(r) + ", not the master")
			}
			return r, "", nil
		}}
		return []Check{ping, role}
	}
	return []Check{ping}
}

// infoField reads "key:value" from an INFO-style reply.
func infoField(info, key string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+":"); ok {
			return v
		}
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// httpReadiness asks a service's /readyz over HTTP: 200 is ready, anything else is not. Then, when set,
// also (the forms' store: FormsStore) is asked.
func httpReadiness(component, baseURL string, client *http.Client, also func(context.Context) error) Check {
	url := strings.TrimRight(baseURL, "/") + "/readyz"
	return Check{Name: component + ":readiness", ComponentType: "component", Run: func(ctx context.Context) (any, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, "", safeError("bad address in configuration")
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, "", err
		}
		// Drain a little so the connection can be reused; never read an unbounded body.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, "", safeError(fmt.Sprintf("not ready: /readyz answered %d", resp.StatusCode))
		}
		if also != nil {
			return nil, "", also(ctx)
		}
		return nil, "", nil
	}}
}

// newHTTPClient talks to the services directly: no proxy from the environment, no redirects, and no
// timeout of its own (each check's context bounds it).
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{}).DialContext,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// peerReadiness checks a service in the same process (the dev server) through its Ready method.
func peerReadiness(s server.Service) Check {
	return Check{Name: s.Name() + ":readiness", ComponentType: "component", Run: func(ctx context.Context) (any, string, error) {
		if err := s.Ready(ctx); err != nil {
			if isTimeout(err) {
				return nil, "", err
			}
			return nil, "", safeError("not ready")
		}
		return nil, "", nil
	}}
}

// safeError is an error whose text may be shown in the body: short, fixed, no addresses or secrets.
type safeError string

func (e safeError) Error() string { return string(e) }

// output turns an error into the body's short output line. Internal error text (addresses, library
// messages) never reaches the body; it goes to the log.
func output(err error) string {
	var se safeError
	switch {
	case errors.As(err, &se):
		return string(se)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the other side"
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return "store answered an error: " + redisErrorCode(rerr.Error())
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "name does not resolve"
	}
	return "unreachable"
}

// redisErrorCode keeps the leading upper-case code of a Redis error reply (NOAUTH, LOADING,
// CLUSTERDOWN...) and drops the rest of the message.
func redisErrorCode(msg string) string {
	code, _, _ := strings.Cut(msg, " ")
	for _, r := range code {
		if r < 'A' || r > 'Z' {
			return "ERR"
		}
	}
	if code == "" {
		return "ERR"
	}
	return code
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
