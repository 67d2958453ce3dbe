package controllers

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/controllers/testcluster"
	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testwait"
)

// The suite runs one real kube-apiserver and etcd and one operator manager for every test. The operator
// talks through a rest.Config that counts its write requests; the tests use a client of their own, so
// their writes are not counted.
var (
	cluster    *testcluster.Cluster
	k8s        client.Client // the test's client
	opWrites   *testcluster.WriteCounter
	opRequests *testcluster.RequestLog // every request of the operator, reads and watches too
	recorded   *eventCounter           // every Event the reconciler records
	reconciler *FormsServiceReconciler
	// clock is the reconciler's clock: it stands still unless a test moves it (rotation_envtest_test.go).
	clock     = &testClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	nsCounter atomic.Int64
	// namespaceOf maps each namespace newNamespace created to the test that created it.
	namespaceOf sync.Map
)

const testImage = "registry.example/formsservice:test"

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if testcluster.SkipSuite() { // -short (make test-fast): no envtest
		return 0
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	var err error
	start := time.Now()
	cluster, err = testcluster.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer func() { _ = cluster.Stop() }()
	fmt.Fprintf(os.Stderr, "envtest control plane started in %s\n", time.Since(start).Round(time.Millisecond))

	k8s, err = client.New(cluster.Config, client.Options{Scheme: cluster.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	var opConfig = cluster.Config
	opConfig, opWrites = testcluster.Counting(opConfig)
	opConfig, opRequests = testcluster.Recording(opConfig)
	kinds, err := DiscoverKinds(opConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	mgr, err := ctrl.NewManager(opConfig, ctrl.Options{
		Scheme:                 cluster.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  CacheOptions(kinds),
		Client:                 ClientOptions(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	probe = &reconcileProbe{Client: mgr.GetClient()} // records each reconcile's start: reconcileprobe_test.go
	recorded = &eventCounter{EventRecorder: mgr.GetEventRecorder("formsservice-operator")}
	reconciler = &FormsServiceReconciler{
		Client:       probe,
		APIReader:    mgr.GetAPIReader(),
		Scheme:       mgr.GetScheme(),
		Recorder:     recorded,
		ServiceImage: testImage,
		// The operator does not watch Secrets: a short recheck lets tests see a new Secret picked up.
		SecretRecheck: 2 * time.Second,
		// A queued upgrade asks again for a slot this often (upgrades_envtest_test.go).
		UpgradeRecheck: time.Second,
		Kinds:          kinds,
		Now:            clock.Now,
		Skew:           testSkew,
		// No Redis pod runs in envtest: the highly available Redis's roll finds its nodes unreachable
		// at once, rather than after a DNS lookup of names no server knows (redisroll_envtest_test.go).
		RedisHADial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if strings.HasPrefix(addr, "127.0.0.1:") { // a test's processes (redisroll_envtest_test.go)
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}
			return nil, fmt.Errorf("no Redis pod runs in envtest (%s)", addr)
		},
		RedisHAAddrs: func(fs *v1alpha1.FormsService) ([]string, []string) {
			if a, ok := loopbackSets.Load(fs.Namespace); ok {
				set := a.(*loopbackSet)
				return set.nodes, set.sentinels
			}
			return nil, nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := reconciler.SetupWithManager(ctx, mgr); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		fmt.Fprintln(os.Stderr, "FAIL: cache did not sync")
		return 1
	}
	code := m.Run()
	testproc.RemoveBuilds()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	return code
}

// zapLevel keeps the test output to errors; OPERATOR_TEST_LOG=1 shows the reconciler's logs.
func zapLevel() zapcore.Level {
	if os.Getenv("OPERATOR_TEST_LOG") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// newNamespace creates a namespace of the test's own (envtest has no namespace controller, so it is
// never really deleted; names are unique per run).
func newNamespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%d", nsCounter.Add(1), time.Now().UnixNano()%100000)
	namespaceOf.Store(name, t.Name())
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// testSkew is the suite operator's supported-skew rule (D86): release 0.2, with forms.declared a key
// of 0.2. It applies only to images whose tag names a release, which only skew_envtest_test.go uses.
var testSkew = render.Skew{Operator: "0.2.0", Keys: []render.KeySince{{Path: "forms.declared", Since: render.Release{Major: 0, Minor: 2}}}}

// sampleFS is a FormsService a platform team would write: two origins, a public and a confidential client,
// the managed Redis and an ingress with a separate forms host.
func sampleFS(ns string) *v1alpha1.FormsService {
	return &v1alpha1.FormsService{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", Namespace: ns},
		Spec: v1alpha1.FormsServiceSpec{
			AllowedOrigins: []v1alpha1.Origin{"https://www.acme.example", "https://*.acme.example"},
			OAuthClients: []v1alpha1.OAuthClient{
				{
					ClientID:               "web",
					RedirectURIs:           []v1alpha1.RedirectURI{"https://app.acme.example/callback", "http://localhost:3000/callback"},
					PostLogoutRedirectURIs: []v1alpha1.RedirectURI{"https://app.acme.example/"},
					Scopes:                 []v1alpha1.Scope{"openid", "email"},
				},
			},
			TrustedProxies: []string{"10.0.0.0/8"},
			Forms: v1alpha1.FormsSpec{
				RateLimitPerMinute: ptr.To[int32](30),
			},
			Auth: v1alpha1.AuthSpec{
				Workload:            v1alpha1.Workload{Replicas: ptr.To[int32](3)},
				AccessTokenLifetime: &metav1.Duration{Duration: 10 * time.Minute},
			},
			Ingress: &v1alpha1.IngressSpec{
				ClassName:     ptr.To("nginx"),
				Host:          "id.acme.example",
				FormsHost:     "forms.acme.example",
				TLSSecretName: "acme-tls",
			},
		},
	}
}

// eventually waits until f succeeds, and fails with f's last error when it has not within quietBound.
func eventually(t *testing.T, f func() error) {
	t.Helper()
	testwait.Until(t, quietBound, "condition", f)
}

// eventuallyWhat is eventually saying what it waits for.
func eventuallyWhat(t *testing.T, what string, f func() error) {
	t.Helper()
	testwait.Until(t, quietBound, what, f)
}

func key(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// updateFS reads the FormsService, applies mutate and writes it, retrying when the operator's status
// write got in between (a conflict).
func updateFS(t *testing.T, fs *v1alpha1.FormsService, mutate func(fs *v1alpha1.FormsService)) {
	t.Helper()
	updateObject(t, fs, mutate)
}

// updateObject reads obj, applies mutate and writes it back with Update, again from the read on a
// Conflict: every object a test edits is one the operator (or the test playing a Kubernetes controller)
// may write at the same moment, so a single read-then-Update would lose that race now and then.
func updateObject[T client.Object](t *testing.T, obj T, mutate func(T)) {
	t.Helper()
	writeRetrying(t, obj, mutate, func(ctx context.Context) error { return k8s.Update(ctx, obj) })
}

// updateStatusOf is updateObject for the status subresource (the test playing the Deployment or
// StatefulSet controller, which envtest does not run).
func updateStatusOf[T client.Object](t *testing.T, obj T, mutate func(T)) {
	t.Helper()
	writeRetrying(t, obj, mutate, func(ctx context.Context) error { return k8s.Status().Update(ctx, obj) })
}

func writeRetrying[T client.Object](t *testing.T, obj T, mutate func(T), write func(context.Context) error) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return write(ctx)
	})
	if err != nil {
		t.Fatalf("writing %T %s: %v", obj, obj.GetName(), err)
	}
}

// testClock is a clock that moves only when told.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// eventCounter counts the Events the reconciler records. The recorder sends them to the API server
// from a goroutine of its own, so an Event of an earlier reconcile (or the PATCH that folds a repeated
// one into a series) can reach the server at any later time: a test that asks "did these reconciles
// emit an Event" asks the recorder, not the write counter.
type eventCounter struct {
	events.EventRecorder
	mu      sync.Mutex
	reasons []string // "namespace/reason", in order
}

func (c *eventCounter) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	ns := ""
	if o, ok := regarding.(metav1.Object); ok {
		ns = o.GetNamespace()
	}
	c.mu.Lock()
	c.reasons = append(c.reasons, ns+"/"+reason)
	c.mu.Unlock()
	c.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// mark returns a position for since.
func (c *eventCounter) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reasons)
}

// since returns the Events recorded after mark n in namespace ns.
func (c *eventCounter) since(n int, ns string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.reasons[n:] {
		if strings.HasPrefix(r, ns+"/") {
			out = append(out, r)
		}
	}
	return out
}

// withoutEvents drops the writes to Events: the recorder sends them asynchronously (see eventCounter).
func withoutEvents(ws []string) []string {
	var out []string
	for _, w := range ws {
		if !strings.Contains(w, "/events/") && !strings.HasSuffix(w, "/events") {
			out = append(out, w)
		}
	}
	return out
}
