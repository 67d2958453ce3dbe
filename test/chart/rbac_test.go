package chart_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers"
	fsrender "github.com/formsservice/formsservice/controllers/render"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/test/internal/cluster"
	"github.com/formsservice/formsservice/test/internal/samples"
)

// TestMain removes the manager binary the RBAC tests build.
func TestMain(m *testing.M) {
	code := m.Run()
	testproc.RemoveBuilds()
	os.Exit(code)
}

// managerLeaseName is cmd/manager's LeaderElectionID.
const managerLeaseName = "formsservice-operator.platform.formsservice.io"

// TestRBAC_ManagerRunsAsTheChartsServiceAccount proves the chart's RBAC sufficient: the chart is installed
// with helm into a real API server, the real manager binary runs with the chart's own arguments as the
// chart's ServiceAccount (every request impersonates it, so only the chart's ClusterRole, leader-election
// Role and metrics roles apply), and reconciles the sample from config/samples. Any request the API server
// forbids fails the test, as does a platform that is not built.
//
// One cluster and one manager serve this test and the ServiceMonitor one (monitoring_test.go): they
// reconcile different FormsServices, and any forbidden request fails both.
func TestRBAC_ManagerRunsAsTheChartsServiceAccount(t *testing.T) {
	t.Parallel()
	c := cluster.Start(t, prometheusOperatorCRDs(t))
	im, metricsAddr := startChartOperator(t, c)
	t.Run("reconciles the sample", func(t *testing.T) {
		t.Parallel()
		reconcilesTheSample(t, c, im, metricsAddr)
	})
	t.Run("ServiceMonitors follow the FormsService", func(t *testing.T) {
		t.Parallel()
		serviceMonitorsFollowTheFormsService(t, c, im)
	})
}

func reconcilesTheSample(t *testing.T, c *cluster.Cluster, im *cluster.Impersonator, metricsAddr string) {
	ctx := context.Background()
	fullname := releaseName + "-formsservice-operator"

	applySampleAndWait(t, c, im, "shop")
	assertSecretRequestsOnlyByName(t, c, im)

	// The manager's Secret access is get, create and update by name: as its ServiceAccount, listing or
	// watching Secrets (which would read every Secret of a namespace) is forbidden everywhere.
	sa := asServiceAccount(t, c, releaseNS, fullname)
	c.CreateNamespace(t, "elsewhere")
	createSecret(t, c, "elsewhere", "payroll")
	for _, ns := range []string{"shop", "elsewhere", ""} {
		if err := sa.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
			t.Errorf("the manager's ServiceAccount may list Secrets in namespace %q: %v", ns, err)
		}
	}

	// Secure metrics: the manager asks the API server (TokenReview, SubjectAccessReview, through the
	// chart's metrics-auth role) whether a scraper may read /metrics, which the metrics-reader role allows.
	reader := serviceAccountToken(t, c, releaseNS, "prometheus", fullname+"-metrics-reader")
	stranger := serviceAccountToken(t, c, releaseNS, "stranger", "")
	cluster.Eventually(t, 30*time.Second, "a metrics-reader scrapes the manager's /metrics", func() (bool, string) {
		code, body := scrape(metricsAddr, reader)
		return code == http.StatusOK && strings.Contains(body, "controller_runtime_reconcile_total"),
			fmt.Sprintf("HTTP %d: %.200s", code, body)
	})
	if code, _ := scrape(metricsAddr, stranger); code != http.StatusForbidden {
		t.Errorf("a ServiceAccount without the metrics-reader role scraped /metrics: HTTP %d, want 403", code)
	}

	if f := im.Forbidden(); len(f) > 0 {
		t.Fatalf("the API server forbade the manager's requests:\n%s", strings.Join(f, "\n"))
	}
	if im.Requests() == 0 {
		t.Fatal("no request went through the impersonating proxy")
	}
	t.Logf("%d requests as system:serviceaccount:%s:%s, none forbidden", im.Requests(), releaseNS, fullname)
}

// TestRBAC_WatchNamespacesGrantsRolesInThoseNamespacesOnly installs the chart with watchNamespaces: the
// manager, as the chart's ServiceAccount, reconciles the sample in the watched namespace with no request
// forbidden, while a Secret (or anything else) in another namespace is out of its reach, and no
// ClusterRole grants it anything but the metrics checks.
func TestRBAC_WatchNamespacesGrantsRolesInThoseNamespacesOnly(t *testing.T) {
	c := cluster.Start(t, prometheusOperatorCRDs(t))
	ctx := context.Background()
	fullname := releaseName + "-formsservice-operator"
	for _, ns := range []string{"shop", "elsewhere"} {
		c.CreateNamespace(t, ns) // a Role needs its namespace
	}
	createSecret(t, c, "elsewhere", "payroll")
	im, _ := startChartOperator(t, c, "--set", "watchNamespaces={shop}")
	applySampleAndWait(t, c, im, "shop")
	assertSecretRequestsOnlyByName(t, c, im)

	sa := asServiceAccount(t, c, releaseNS, fullname)
	if err := sa.Get(ctx, client.ObjectKey{Namespace: "elsewhere", Name: "payroll"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("the manager's ServiceAccount may read a Secret in a namespace it does not watch: %v", err)
	}
	if err := sa.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Errorf("the manager's ServiceAccount may list Secrets cluster-wide: %v", err)
	}
	if err := sa.List(ctx, &corev1.SecretList{}, client.InNamespace("shop")); !apierrors.IsForbidden(err) {
		t.Errorf("the manager's ServiceAccount may list the Secrets of the watched namespace: %v", err)
	}
	if err := sa.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("elsewhere")); !apierrors.IsForbidden(err) {
		t.Errorf("the manager's ServiceAccount may list ConfigMaps in a namespace it does not watch: %v", err)
	}
	// The only cluster-wide grants to the ServiceAccount are the secure-metrics checks.
	var bindings rbacv1.ClusterRoleBindingList
	if err := c.Client.List(ctx, &bindings); err != nil {
		t.Fatal(err)
	}
	for _, b := range bindings.Items {
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == fullname && b.RoleRef.Name != fullname+"-metrics-auth" {
				t.Errorf("ClusterRoleBinding %s gives the manager ClusterRole %s", b.Name, b.RoleRef.Name)
			}
		}
	}
	if f := im.Forbidden(); len(f) > 0 {
		t.Fatalf("the API server forbade the manager's requests:\n%s", strings.Join(f, "\n"))
	}
}

// applySampleAndWait applies config/samples in namespace as a platform team would (its Secrets first)
// and waits until the manager behind im has reconciled every FormsService into Deployments and Services,
// failing at once on a forbidden request.
func applySampleAndWait(t *testing.T, c *cluster.Cluster, im *cluster.Impersonator, namespace string) {
	t.Helper()
	ctx := context.Background()
	var fsObjs []*unstructured.Unstructured
	for _, u := range samples.Load(t, namespace) {
		c.CreateNamespace(t, u.GetNamespace())
		if u.GetKind() == "FormsService" {
			fsObjs = append(fsObjs, u)
			for _, s := range samples.ReferencedSecrets(u) {
				if err := c.Client.Create(ctx, s); err != nil {
					t.Fatalf("Secret %s named by the sample: %v", s.Name, err)
				}
			}
		}
		if err := c.Client.Create(ctx, u); err != nil {
			t.Fatalf("creating %s %s from config/samples: %v", u.GetKind(), u.GetName(), err)
		}
	}
	for _, fs := range fsObjs {
		ns, name := fs.GetNamespace(), fs.GetName()
		cluster.Eventually(t, 90*time.Second, "FormsService "+name+" reconciled", func() (bool, string) {
			if f := im.Forbidden(); len(f) > 0 {
				t.Fatalf("the API server forbade the manager's requests:\n%s", strings.Join(f, "\n"))
			}
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(formsServiceGVK)
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, live); err != nil {
				return false, err.Error()
			}
			observed, _, _ := unstructured.NestedInt64(live.Object, "status", "observedGeneration")
			if observed != live.GetGeneration() {
				return false, fmt.Sprintf("status.observedGeneration %d, generation %d", observed, live.GetGeneration())
			}
			for _, component := range []string{"forms", "auth", "health"} {
				var d appsv1.Deployment
				if !exists(t, c, &d, ns, name+"-"+component) {
					return false, "no Deployment " + name + "-" + component
				}
				if !exists(t, c, &corev1.Service{}, ns, name+"-"+component) {
					return false, "no Service " + name + "-" + component
				}
				// An autoscaled service: its HorizontalPodAutoscaler, and its replicas handed over to it.
				if _, autoscaled, _ := unstructured.NestedMap(fs.Object, "spec", component, "autoscaling"); autoscaled {
					if !exists(t, c, &autoscalingv2.HorizontalPodAutoscaler{}, ns, name+"-"+component) {
						return false, "no HorizontalPodAutoscaler " + name + "-" + component
					}
					if !slices.ContainsFunc(d.ManagedFields, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == controllers.ReplicasHandoffOwner }) {
						return false, "the replicas of Deployment " + d.Name + " are not handed over yet"
					}
				}
			}
			return true, ""
		})
	}
}

// assertSecretRequestsOnlyByName checks every Secret request the manager sent: each names one Secret
// that a FormsService of its namespace owns or references (fsrender.ReferencedSecretNames), or creates
// one, and none lists or watches Secrets.
func assertSecretRequestsOnlyByName(t *testing.T, c *cluster.Cluster, im *cluster.Impersonator) {
	t.Helper()
	ctx := context.Background()
	allowed := map[string]bool{} // namespace/name
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(formsServiceGVK.GroupVersion().WithKind("FormsServiceList"))
	if err := c.Client.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	for _, u := range list.Items {
		var fs v1alpha1.FormsService
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &fs); err != nil {
			t.Fatal(err)
		}
		for _, name := range fsrender.ReferencedSecretNames(&fs) {
			allowed[fs.Namespace+"/"+name] = true
		}
	}
	n := 0
	for _, r := range im.Log() {
		parts := strings.Split(strings.Trim(r.Path, "/"), "/")
		i := slices.Index(parts, "secrets")
		if i < 0 || parts[0] != "api" {
			continue
		}
		n++
		if r.Method == http.MethodPost && i == 4 && len(parts) == 5 {
			continue // a create names its Secret in the body; it can only make a new one (the signing key, the Redis password)
		}
		if i != 4 || len(parts) != 6 || parts[2] != "namespaces" {
			t.Errorf("the manager sent %s %s?%s: not a request for one Secret by name", r.Method, r.Path, r.Query)
			continue
		}
		if !allowed[parts[3]+"/"+parts[5]] {
			t.Errorf("the manager sent %s %s: a Secret no FormsService owns or references", r.Method, r.Path)
		}
	}
	if n == 0 {
		t.Error("the manager sent no Secret request at all; the check proves nothing")
	}
	t.Logf("%d Secret requests, each for an owned or referenced Secret by name", n)
}

// asServiceAccount returns a client that acts as system:serviceaccount:<namespace>:<name>.
func asServiceAccount(t *testing.T, c *cluster.Cluster, namespace, name string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	cl, err := client.New(cfg, client.Options{Scheme: c.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func createSecret(t *testing.T, c *cluster.Cluster, namespace, name string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{"k": []byte("v")}}
	if err := c.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// startChartOperator installs the chart with helm and runs the manager binary with the chart's arguments
// as the chart's ServiceAccount, until it holds the leader Lease (leader election through the chart's
// Role). It returns the impersonating proxy and the manager's metrics address.
func startChartOperator(t *testing.T, c *cluster.Cluster, helmArgs ...string) (*cluster.Impersonator, string) {
	t.Helper()
	manager := testproc.Build(t, "./cmd/manager")
	helmAt(t, c, append([]string{"install", releaseName, chartDir, "--namespace", releaseNS, "--create-namespace"}, helmArgs...)...)
	c.WaitEstablished(t, formsServiceCRD)

	fullname := releaseName + "-formsservice-operator"
	im := c.ImpersonateServiceAccount(t, releaseNS, fullname)
	mgr := testproc.Start(t, []string{"KUBECONFIG=" + im.KubeConfig}, manager, managerArgs(t, c, fullname)...)
	metricsAddr := mgr.WaitListeningSockets(t, 1, 60*time.Second)[0] // its only listener: the probes are off
	cluster.Eventually(t, 60*time.Second, "the manager holds the leader Lease", func() (bool, string) {
		if exited, err := mgr.Exited(); exited {
			t.Fatalf("the manager exited: %v\n%s", err, mgr.Output())
		}
		var lease coordinationv1.Lease
		if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: releaseNS, Name: managerLeaseName}, &lease); err != nil {
			return false, err.Error()
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", "no holder yet"
	})
	return im, metricsAddr
}

// managerArgs returns the manager's arguments from the chart's Deployment as installed, with the metrics
// server on a loopback port of the kernel's choice (the test finds it among the process's sockets) and
// the probe server off (the test does not probe; off, it cannot be mistaken for the metrics listener).
func managerArgs(t *testing.T, c *cluster.Cluster, fullname string) []string {
	t.Helper()
	var dep appsv1.Deployment
	if !exists(t, c, &dep, releaseNS, fullname) {
		t.Fatal("the chart installed no manager Deployment")
	}
	var args []string
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=127.0.0.1:0"
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=0"
		}
		args = append(args, a)
	}
	return args
}

// serviceAccountToken creates a ServiceAccount (bound to clusterRole unless empty) and returns a token.
func serviceAccountToken(t *testing.T, c *cluster.Cluster, namespace, name, clusterRole string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if clusterRole != "" {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + clusterRole},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
		}
		if err := c.Client.Create(ctx, binding); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", name, err)
	}
	return tr.Status.Token
}

// scrape GETs https://addr/metrics with a bearer token; the manager's certificate is self-signed.
func scrape(addr, token string) (int, string) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the manager's self-signed serving certificate
	}}
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
