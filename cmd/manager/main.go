// Command manager runs the formsservice operator: it reconciles FormsService resources into running
// forms, auth and health services (see docs/operator.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers"
	"github.com/formsservice/formsservice/controllers/render"
)

func main() {
	ctx := ctrl.SetupSignalHandler()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
		os.Exit(1)
	}
}

// LeaderElectionID names the Lease that the replicas of the operator compete for.
const LeaderElectionID = "formsservice-operator.platform.formsservice.io"

// The manager's client-side rate limit. A reconcile of an unchanged FormsService sends one GET per Secret
// it mounts (two for the managed Redis) and nothing else, so a thousand FormsServices rechecked every
// minute need about 35 requests a second (docs/operator.md, "Cost at scale"); client-go's default of 5
// would queue them.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// run parses the flags and runs the manager until ctx ends. restConfig nil means: the in-cluster
// configuration or $KUBECONFIG, as kubectl finds it.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, restConfig *rest.Config) error {
	fl := flag.NewFlagSet("manager", flag.ContinueOnError)
	fl.SetOutput(stderr)
	metricsAddr := fl.String("metrics-bind-address", ":8443", "address of the metrics endpoint (/metrics); \"0\" turns it off")
	secureMetrics := fl.Bool("metrics-secure", true, "serve metrics over HTTPS, only to callers the API server authenticates and authorizes (TokenReview, SubjectAccessReview)")
	probeAddr := fl.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	leaderElect := fl.Bool("leader-elect", false, "elect one active replica with a Lease; use it when running more than one replica")
	leaderNamespace := fl.String("leader-election-namespace", "", "namespace of the Lease (default: the operator's own namespace)")
	serviceImage := fl.String("service-image", getenv("FORMSSERVICE_IMAGE"), "image of the services for a FormsService without spec.image (default $FORMSSERVICE_IMAGE)")
	redisImage := fl.String("redis-image", envOr(getenv, "FORMSSERVICE_REDIS_IMAGE", render.DefaultRedisImage), "image of the managed Redis for a FormsService without spec.redis.managed.image (default $FORMSSERVICE_REDIS_IMAGE, else the digest-pinned Valkey the operator was tested with)")
	redisUID := fl.Int64("redis-run-as-user", render.DefaultRedisUID, "user (and group and fsGroup) of the managed Redis where spec.redis.managed.runAsUser is unset; 0 names none (the image's user, or the platform's: OpenShift)")
	pullSecrets := fl.String("image-pull-secrets", getenv("FORMSSERVICE_IMAGE_PULL_SECRETS"), "comma-separated Secrets (in each FormsService's namespace) added to the imagePullSecrets of every pod the operator runs")
	operatorNamespace := fl.String("operator-namespace", getenv("POD_NAMESPACE"), "the namespace the operator's pods run in (default $POD_NAMESPACE): with --operator-pod-labels, the highly available Redis's NetworkPolicy admits them, since the operator asks its nodes and sentinels when it rolls the pods")
	operatorLabels := fl.String("operator-pod-labels", "", "comma-separated key=value labels of the operator's pods (see --operator-namespace)")
	secretRecheck := fl.Duration("secret-recheck-interval", controllers.DefaultSecretRecheck, "how often each FormsService is reconciled again to notice a changed Secret (the operator does not watch Secrets; a missing one is looked for every 10s)")
	watchNamespaces := fl.String("watch-namespaces", getenv("WATCH_NAMESPACES"), "comma-separated namespaces to watch (default: all)")
	workers := fl.Int("max-concurrent-reconciles", controllers.DefaultWorkers, "how many FormsServices are reconciled at once")
	maxUpgrades := fl.Int("max-concurrent-upgrades", controllers.DefaultMaxConcurrentUpgrades, "how many FormsServices without spec.image move to a new --service-image at once (an operator upgrade); the others keep their running image until a slot frees; 0: no bound")
	qps := fl.Float64("kube-api-qps", DefaultQPS, "requests per second the manager may send to the API server (sustained)")
	burst := fl.Int("kube-api-burst", DefaultBurst, "requests the manager may send to the API server in a burst above --kube-api-qps")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fl)
	if err := fl.Parse(args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts), zap.WriteTo(stderr)))
	log := ctrl.Log.WithName("setup")

	if restConfig == nil {
		var err error
		if restConfig, err = ctrl.GetConfig(); err != nil {
			return err
		}
	}
	if *redisUID < 0 {
		return fmt.Errorf("--redis-run-as-user must not be negative")
	}
	podLabels, err := parseLabels(*operatorLabels)
	if err != nil {
		return fmt.Errorf("--operator-pod-labels: %w", err)
	}
	if *maxUpgrades < 0 {
		return fmt.Errorf("--max-concurrent-upgrades must not be negative (0: no bound)")
	}
	if *workers < 1 || *qps <= 0 || *burst < 1 {
		return fmt.Errorf("--max-concurrent-reconciles, --kube-api-qps and --kube-api-burst must be positive")
	}
	restConfig = rest.CopyConfig(restConfig)
	restConfig.QPS, restConfig.Burst = float32(*qps), *burst
	// Which optional kinds (HTTPRoute, ServiceMonitor) the cluster serves, asked once: the cache and the
	// watches are set up for those only, and reconciles do not ask again.
	kinds, err := controllers.DiscoverKinds(restConfig)
	if err != nil {
		return fmt.Errorf("discovering the optional kinds: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}

	metrics := metricsserver.Options{BindAddress: *metricsAddr, SecureServing: *secureMetrics}
	if *secureMetrics {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	namespaces := splitList(*watchNamespaces)
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metrics,
		HealthProbeBindAddress:        *probeAddr,
		LeaderElection:                *leaderElect,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       *leaderNamespace,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(kinds, namespaces...),
		Client:                        controllers.ClientOptions(),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	r := &controllers.FormsServiceReconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		Scheme:           mgr.GetScheme(),
		Recorder:         mgr.GetEventRecorder("formsservice-operator"),
		ServiceImage:     *serviceImage,
		RedisImage:       *redisImage,
		RedisRunAsUser:   redisUID,
		ImagePullSecrets: splitList(*pullSecrets),
		Operator:         render.OperatorPeer{Namespace: *operatorNamespace, PodLabels: podLabels},
		SecretRecheck:    *secretRecheck,
		Kinds:            kinds,
		Workers:          *workers,

		MaxConcurrentUpgrades: *maxUpgrades,
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the controller: %w", err)
	}
	// Every FormsService's status as metrics, from the cache at each scrape (docs/operator.md).
	if err := ctrlmetrics.Registry.Register(controllers.StatusCollector{Reader: mgr.GetClient()}); err != nil {
		return fmt.Errorf("registering the status metrics: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	// Ready once the caches have synced: a replica that cannot see the cluster should not take traffic.
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("caches not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	if *serviceImage == "" {
		log.Info("no --service-image: every FormsService must set spec.image")
	}
	log.Info("starting the manager", "leaderElection", *leaderElect, "namespaces", namespaces, "serviceImage", *serviceImage,
		"redisImage", *redisImage, "redisRunAsUser", *redisUID,
		"workers", *workers, "maxConcurrentUpgrades", *maxUpgrades, "qps", *qps, "burst", *burst,
		"servesHTTPRoutes", kinds.Served(controllers.HTTPRouteGVK), "servesServiceMonitors", kinds.Served(controllers.ServiceMonitorGVK))
	return mgr.Start(ctx)
}

// parseLabels reads key=value,key=value (nil for "").
func parseLabels(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range splitList(v) {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", kv)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// splitList reads a comma-separated flag value, without empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// envOr is the environment variable key, or def when it is unset or empty.
func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}
