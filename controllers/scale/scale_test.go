// Package scale_test measures what the operator costs the API server at a thousand FormsServices: a real
// kube-apiserver and etcd (envtest) of its own, the manager set up as cmd/manager sets it up, and every
// request it sends recorded. TestScale_ThousandFormsServices fails when a reconcile costs more than the
// budget docs/operator.md ("Cost at scale") states; BenchmarkReconcile_UnchangedAmongAThousand reports
// the same counts per reconcile.
//
// SCALE_N sets the number of FormsServices: `make test-scale` runs the thousand. Under a plain `go test`
// (CI's `go test ./...`) it is a hundred: building a thousand takes more than half an hour on two shared
// cores, and the counts per reconcile, which the budget bounds, do not depend on the number (everything
// but Secrets is read from the cache).
package scale_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/controllers/testcluster"
	"github.com/formsservice/formsservice/internal/testwait"
)

// The budget: what one reconcile may cost the API server. Reads are GETs and LISTs (the cache answers
// everything but Secrets, which the operator reads by name: the signing key, the managed Redis'
// password, the Secrets the spec names); writes are POST, PUT, PATCH and DELETE (objects, the status,
// Events).
const (
	// An unchanged FormsService (the periodic recheck): one GET per Secret it mounts, nothing written.
	budgetWritesUnchanged = 0
	// One more allowed origin: the ConfigMap, the status (its originCount), the Event of the ConfigMap.
	budgetWritesChanged = 3
	// Building one FormsService from nothing, every reconcile until it is quiet: each object applied (22
	// for a full one, 11 for one with its own Redis and single replicas, with each service's
	// ServiceAccount), its Event, the Secrets created, the status.
	budgetWritesBuildFull = 53
	budgetWritesBuildLean = 28
)

// budgetReadsUnchanged is one GET per Secret the FormsService's pods mount.
func budgetReadsUnchanged(fs *v1alpha1.FormsService) int {
	return len(render.ReferencedSecretNames(fs))
}

var (
	cl         *testcluster.Cluster
	k8s        client.Client
	requests   *testcluster.RequestLog
	reconciler *controllers.FormsServiceReconciler
	probe      *countingClient
	names      []client.ObjectKey
)

// countingClient counts each reconcile's start: its read of a FormsService.
type countingClient struct {
	client.Client
	starts atomic.Int64
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*v1alpha1.FormsService); ok {
		c.starts.Add(1)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testcluster.SkipSuite() { // -short (make test-fast): no envtest
		return 0
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	if cl, err = testcluster.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer func() { _ = cl.Stop() }()
	// The test's own client is fast; the operator's has the manager's default rate limit.
	if k8s, err = client.New(withRate(cl.Config, 2000, 4000), client.Options{Scheme: cl.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, err := startManager(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	return code
}

func withRate(cfg *rest.Config, qps float32, burst int) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.QPS, out.Burst = qps, burst
	return out
}

// startManager runs the manager as cmd/manager does (its cache and client), except that FormsServices are
// not rechecked on a timer (an hour: the test asks for each reconcile it measures) and the rate limit.
func startManager(ctx context.Context) (chan error, error) {
	// Building a thousand FormsServices at cmd/manager's DefaultQPS (50) would take a quarter of an hour
	// of waiting on the client's rate limit; what is measured here is requests, not their pace.
	cfg := withRate(cl.Config, 1000, 2000)
	cfg, requests = testcluster.Recording(cfg)
	kinds, err := controllers.DiscoverKinds(cfg)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 cl.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions(kinds),
		Client:                 controllers.ClientOptions(),
	})
	if err != nil {
		return nil, err
	}
	probe = &countingClient{Client: mgr.GetClient()}
	reconciler = &controllers.FormsServiceReconciler{
		Client:        probe,
		APIReader:     mgr.GetAPIReader(),
		Scheme:        mgr.GetScheme(),
		Recorder:      mgr.GetEventRecorder("formsservice-operator"),
		ServiceImage:  "registry.example/formsservice:scale",
		SecretRecheck: time.Hour,
		Kinds:         kinds,
		Workers:       8, // building a thousand at once; the steady state is measured one reconcile at a time
	}
	if err := reconciler.SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("cache did not sync")
	}
	return done, nil
}

func count() int {
	if s := os.Getenv("SCALE_N"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 100
}

// formsService is a FormsService as teams write them. Every tenth is a full one: the managed Redis, an
// ingress, forms autoscaled (an HPA), two replicas elsewhere (PodDisruptionBudgets), ServiceMonitors
// asked for (this cluster does not serve them). The others share a Redis of their own and run one
// replica of each service: fewer objects to build, the same reconcile.
func formsService(ns string, i int) *v1alpha1.FormsService {
	fs := &v1alpha1.FormsService{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fs%04d", i), Namespace: ns},
		Spec: v1alpha1.FormsServiceSpec{
			AllowedOrigins: []v1alpha1.Origin{v1alpha1.Origin(fmt.Sprintf("https://www.team%d.example", i))},
		},
	}
	if i%10 == 0 {
		fs.Spec.Ingress = &v1alpha1.IngressSpec{Host: fmt.Sprintf("id.team%d.example", i), ClassName: ptr.To("nginx")}
		fs.Spec.Forms.Autoscaling = &v1alpha1.AutoscalingSpec{MaxReplicas: 4}
		fs.Spec.Monitoring = &v1alpha1.MonitoringSpec{ServiceMonitor: &v1alpha1.ServiceMonitorSpec{Enabled: true}}
		return fs
	}
	fs.Spec.PublicURL = fmt.Sprintf("https://id.team%d.example", i)
	fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"redis.shared.svc:6379"}}
	one := v1alpha1.Workload{Replicas: ptr.To[int32](1)}
	fs.Spec.Forms.Workload, fs.Spec.Auth.Workload, fs.Spec.Health.Workload = one, one, one
	return fs
}

// full reports whether the i-th FormsService is a full one.
func full(i int) bool { return i%10 == 0 }

var built sync.Once

// build creates the FormsServices (ten namespaces) and waits until the operator has built them all and
// is idle. It returns the requests the operator sent for it.
func build(t testing.TB) []testcluster.Request {
	var reqs []testcluster.Request
	built.Do(func() {
		ctx := context.Background()
		n := count()
		from := requests.Len()
		start := time.Now()
		for ns := 0; ns < 10; ns++ {
			if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team%d", ns)}}); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < n; i++ {
			fs := formsService(fmt.Sprintf("team%d", i%10), i)
			if err := k8s.Create(ctx, fs); err != nil {
				t.Fatal(err)
			}
			names = append(names, client.ObjectKeyFromObject(fs))
			if fs.Spec.Redis.Addresses == nil {
				// The managed store's claim, as the StatefulSet controller (which envtest does not run)
				// makes it: the operator records the data format on it once, then reads it no more.
				pvc := &corev1.PersistentVolumeClaim{
					ObjectMeta: metav1.ObjectMeta{Namespace: fs.Namespace, Name: controllers.RedisClaimTemplate + "-" + fs.Name + "-redis-0"},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
				}
				if err := k8s.Create(ctx, pvc); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Three seconds a FormsService: a thousand were nearly built after half an hour on two cores shared
		// with other builds (30,040 requests sent of about 30,500).
		testwait.Until(t, max(10*time.Minute, time.Duration(n)*3*time.Second), fmt.Sprintf("%d FormsServices built and reported", n), func() error {
			var list v1alpha1.FormsServiceList
			if err := k8s.List(ctx, &list); err != nil {
				return err
			}
			waiting := 0
			for _, fs := range list.Items {
				if want := map[bool]int{true: 4, false: 3}[fs.Spec.Redis.Addresses == nil]; fs.Status.ObservedGeneration != fs.Generation || len(fs.Status.Components) != want {
					waiting++
				}
			}
			if waiting > 0 {
				return fmt.Errorf("%d of %d not built yet", waiting, len(list.Items))
			}
			return idle()
		})
		reqs = requests.Since(from)
		t.Logf("built %d FormsServices in %s: %d requests", n, time.Since(start).Round(time.Second), len(reqs))
	})
	return reqs
}

// idle says whether the operator has sent nothing since the last call: the workers are done and nothing
// they did brings another reconcile.
var lastSeen atomic.Int64

func idle() error {
	now := int64(requests.Len())
	if prev := lastSeen.Swap(now); prev != now {
		return fmt.Errorf("the operator is still sending requests (%d)", now)
	}
	return nil
}

type tally struct {
	reads, writes, watches, discovery int
	paths, writePaths                 []string
}

func tallyOf(reqs []testcluster.Request) tally {
	var t tally
	for _, r := range reqs {
		switch {
		case strings.HasPrefix(r.Path, "/apis/monitoring.coreos.com") || r.Path == "/api" || r.Path == "/apis":
			t.discovery++
		case r.Watch:
			t.watches++
		case r.Read():
			t.reads++
			t.paths = append(t.paths, r.String())
		case r.Write():
			t.writes++
			t.writePaths = append(t.writePaths, r.String())
		}
	}
	return t
}

// reconcileAll reconciles every FormsService once, one at a time, and returns the requests each sent.
func reconcileAll(t testing.TB) (perReconcile []tally) {
	ctx := context.Background()
	for _, key := range names {
		from := requests.Len()
		if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		perReconcile = append(perReconcile, tallyOf(requests.Since(from)))
	}
	return perReconcile
}

func TestScale_ThousandFormsServices(t *testing.T) {
	ctx := context.Background()
	n := count()
	buildReqs := build(t)
	b := tallyOf(buildReqs)
	fulls := (n + 9) / 10
	budget := fulls*budgetWritesBuildFull + (n-fulls)*budgetWritesBuildLean
	t.Logf("building: %.1f writes and %.1f reads per FormsService (%d watches, %d discovery requests in all), budget %.1f writes",
		float64(b.writes)/float64(n), float64(b.reads)/float64(n), b.watches, b.discovery, float64(budget)/float64(n))
	if b.writes > budget {
		t.Errorf("building cost %d writes, budget %d (%d full FormsServices, %d lean)", b.writes, budget, fulls, n-fulls)
	}

	// The steady state: each FormsService reconciled once more, unchanged.
	var reads, writes, worst int
	for i, c := range reconcileAll(t) {
		reads += c.reads
		writes += c.writes
		fs := formsService(names[i].Namespace, i)
		if c.reads > budgetReadsUnchanged(fs) || c.writes > budgetWritesUnchanged || c.discovery > 0 {
			worst++
			if worst <= 5 {
				t.Errorf("%s: an unchanged reconcile sent %d reads, %d writes, %d discovery requests; budget %d, %d, 0: %v",
					names[i], c.reads, c.writes, c.discovery, budgetReadsUnchanged(fs), budgetWritesUnchanged, c.paths)
			}
		}
	}
	t.Logf("unchanged: %.2f reads and %.2f writes per reconcile over %d reconciles", float64(reads)/float64(n), float64(writes)/float64(n), n)

	// The status churn of every HorizontalPodAutoscaler and PodDisruptionBudget (what their controllers
	// write all day) reconciles nothing.
	startsBefore := probe.starts.Load()
	churned := 0
	for i, key := range names {
		if !full(i) {
			continue
		}
		churned++
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name + "-forms"}, hpa); err != nil {
			t.Fatal(err)
		}
		hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas = 3, 3
		if err := k8s.Status().Update(ctx, hpa); err != nil {
			t.Fatal(err)
		}
		pdb := &policyv1.PodDisruptionBudget{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name + "-auth"}, pdb); err != nil {
			t.Fatal(err)
		}
		pdb.Status.ObservedGeneration, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.ExpectedPods = pdb.Generation, 2, 1, 2
		pdb.Status.DisruptionsAllowed = 1
		if err := k8s.Status().Update(ctx, pdb); err != nil {
			t.Fatal(err)
		}
	}
	// A change that does reconcile, made after the churn, is the barrier: once it has been reconciled,
	// the churn's events (sent earlier on the same watches' kinds) have been seen.
	last := names[0] // a full one
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: last.Namespace, Name: last.Name + "-forms"}, hpa); err != nil {
		t.Fatal(err)
	}
	hpa.Labels[render.LabelPartOf] = "edited-by-hand"
	if err := k8s.Update(ctx, hpa); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Minute, "the edited autoscaler's label put back", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(hpa), hpa); err != nil {
			return err
		}
		if hpa.Labels[render.LabelPartOf] != "formsservice" {
			return fmt.Errorf("label %s=%s", render.LabelPartOf, hpa.Labels[render.LabelPartOf])
		}
		return idle()
	})
	got := probe.starts.Load() - startsBefore
	t.Logf("status churn of %d autoscalers and %d disruption budgets, then one edited label: %d reconciles", churned, churned, got)
	if got > 2 {
		t.Errorf("%d reconciles after the status churn of %d autoscalers and %d disruption budgets, want those of the edited one alone (1, or 2 with its own write)", got, churned, churned)
	}

	// A real change costs what it must: the ConfigMap, the status, the ConfigMap's Event. The manager
	// reconciles the changed resources by itself (nothing else happens meanwhile: no recheck within the
	// hour), so every write it sends until it is idle again is theirs.
	changed := names[:min(n, 50)]
	from := requests.Len()
	for _, key := range changed {
		fs := &v1alpha1.FormsService{}
		if err := k8s.Get(ctx, key, fs); err != nil {
			t.Fatal(err)
		}
		fs.Spec.AllowedOrigins = append(fs.Spec.AllowedOrigins, "https://new.example")
		if err := k8s.Update(ctx, fs); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Until(t, 5*time.Minute, "the changed FormsServices reconciled", func() error {
		for _, key := range changed {
			fs := &v1alpha1.FormsService{}
			if err := k8s.Get(ctx, key, fs); err != nil {
				return err
			}
			if fs.Status.OriginCount != 2 {
				return fmt.Errorf("%s: originCount %d", key, fs.Status.OriginCount)
			}
		}
		return idle()
	})
	c := tallyOf(requests.Since(from))
	t.Logf("one more origin: %.2f writes and %.2f reads per FormsService over %d", float64(c.writes)/float64(len(changed)),
		float64(c.reads)/float64(len(changed)), len(changed))
	if c.writes > budgetWritesChanged*len(changed) {
		t.Errorf("a changed origin cost %.2f writes per FormsService, budget %d: %v", float64(c.writes)/float64(len(changed)), budgetWritesChanged, c.writePaths)
	}
}

// BenchmarkReconcile_UnchangedAmongAThousand reconciles unchanged FormsServices among a thousand, and
// reports the API requests each reconcile sent.
func BenchmarkReconcile_UnchangedAmongAThousand(b *testing.B) {
	build(b)
	ctx := context.Background()
	from := requests.Len()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := names[i%len(names)]
		if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	t := tallyOf(requests.Since(from))
	b.ReportMetric(float64(t.reads)/float64(b.N), "reads/op")
	b.ReportMetric(float64(t.writes)/float64(b.N), "writes/op")
}
