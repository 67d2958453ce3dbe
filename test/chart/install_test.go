package chart_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/formsservice/formsservice/test/internal/cluster"
	"github.com/formsservice/formsservice/test/internal/repo"
)

const formsServiceCRD = "formsservices.platform.formsservice.io"

var (
	formsServiceGVK   = schema.GroupVersionKind{Group: "platform.formsservice.io", Version: "v1alpha1", Kind: "FormsService"}
	serviceMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}
	prometheusRuleGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}
)

// prometheusOperatorCRDs is the folder of the ServiceMonitor and PrometheusRule CRDs that
// hack/install-chart-tools.sh copies from the prometheus-operator module.
func prometheusOperatorCRDs(t testing.TB) string {
	if testing.Short() {
		t.Skip("needs the Prometheus Operator CRDs and envtest: not run under -short (make test-fast); make test runs it")
	}
	dir := repo.Path(t, "bin", "crds", "prometheus-operator")
	if _, err := os.Stat(filepath.Join(dir, "monitoring.coreos.com_servicemonitors.yaml")); err != nil {
		t.Fatalf("no Prometheus Operator CRDs in %s: `make test` copies them (%s)", dir, installedBy)
	}
	return dir
}

// helmAt runs helm against the cluster.
func helmAt(t *testing.T, c *cluster.Cluster, args ...string) string {
	t.Helper()
	out, err := helm(t, []string{"KUBECONFIG=" + c.KubeConfig}, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func exists(t *testing.T, c *cluster.Cluster, obj client.Object, namespace, name string) bool {
	t.Helper()
	err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("get %s/%s: %v", namespace, name, err)
	}
	return true
}

func object(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// TestChartInstall_LifecycleOnARealAPIServer walks the path a platform team takes with the chart's full
// values: install on a cluster without the Prometheus Operator, add its CRDs and upgrade, change the
// FormsService through values, uninstall (the CRD stays), and install again over the kept CRD. Each step
// is helm itself against kube-apiserver, which accepts or refuses every object.
func TestChartInstall_LifecycleOnARealAPIServer(t *testing.T) {
	t.Parallel()
	c := cluster.Start(t)
	c.CreateNamespace(t, "monitoring") // grafanaDashboard.namespace in full.values.yaml
	full := testdataPath(t, "full.values.yaml")
	fullname := releaseName + "-formsservice-operator"

	out := helmAt(t, c, "install", releaseName, chartDir, "--namespace", releaseNS, "--create-namespace", "--values", full)
	c.WaitEstablished(t, formsServiceCRD)
	for _, want := range []string{"rollout status deployment/" + fullname, "no ServiceMonitor CRD", "no PrometheusRule CRD",
		`The FormsService "shop" was NOT created yet`} {
		if !strings.Contains(out, want) {
			t.Errorf("NOTES after install lack %q:\n%s", want, out)
		}
	}
	for _, o := range []struct {
		obj       client.Object
		namespace string
		name      string
	}{
		{&appsv1.Deployment{}, releaseNS, fullname},
		{&corev1.ServiceAccount{}, releaseNS, "formsservice-operator"},
		{&corev1.Service{}, releaseNS, fullname + "-metrics"},
		{&rbacv1.ClusterRole{}, "", fullname + "-manager"},
		{&rbacv1.ClusterRoleBinding{}, "", fullname + "-manager"},
		{&rbacv1.Role{}, releaseNS, fullname + "-leader-election"},
		{&rbacv1.RoleBinding{}, releaseNS, fullname + "-leader-election"},
		{&rbacv1.ClusterRole{}, "", fullname + "-edit"},
		{&rbacv1.ClusterRole{}, "", fullname + "-view"},
		{&policyv1.PodDisruptionBudget{}, releaseNS, fullname},
		{&corev1.ConfigMap{}, "monitoring", fullname + "-dashboard"},
	} {
		if !exists(t, c, o.obj, o.namespace, o.name) {
			t.Errorf("after install: %T %s/%s missing", o.obj, o.namespace, o.name)
		}
	}
	var dep appsv1.Deployment
	exists(t, c, &dep, releaseNS, fullname)
	if got := dep.Spec.Template.Spec.ServiceAccountName; got != "formsservice-operator" {
		t.Errorf("manager runs as %q, want the chart's ServiceAccount", got)
	}

	if exists(t, c, object(formsServiceGVK), releaseNS, "shop") {
		t.Error("after install: the FormsService exists although NOTES say it is created by the next upgrade")
	}

	// The Prometheus Operator arrives; the next upgrade adds the ServiceMonitor, the PrometheusRule and
	// the FormsService, and the one after changes the FormsService from values.
	installCRDs(t, c, prometheusOperatorCRDs(t))
	out = helmAt(t, c, "upgrade", releaseName, chartDir, "--namespace", releaseNS, "--values", full)
	if !strings.Contains(out, `The FormsService "shop" is part of this release`) {
		t.Errorf("NOTES after upgrade do not announce the FormsService:\n%s", out)
	}
	if !exists(t, c, object(formsServiceGVK), releaseNS, "shop") {
		t.Fatal("after upgrade: no FormsService")
	}
	helmAt(t, c, "upgrade", releaseName, chartDir, "--namespace", releaseNS, "--values", full,
		"--set-json", `formsService.spec.allowedOrigins=["https://shop.example.com","https://checkout.example.com"]`)
	if !exists(t, c, object(serviceMonitorGVK), releaseNS, fullname) {
		t.Error("after upgrade: no ServiceMonitor although its CRD now exists")
	}
	if !exists(t, c, object(prometheusRuleGVK), releaseNS, fullname) {
		t.Error("after upgrade: no PrometheusRule although its CRD now exists")
	}
	fs := object(formsServiceGVK)
	exists(t, c, fs, releaseNS, "shop")
	origins, _, _ := unstructured.NestedStringSlice(fs.Object, "spec", "allowedOrigins")
	if want := []string{"https://shop.example.com", "https://checkout.example.com"}; !reflect.DeepEqual(origins, want) {
		t.Errorf("after upgrade: FormsService allowedOrigins = %v, want %v", origins, want)
	}

	helmAt(t, c, "uninstall", releaseName, "--namespace", releaseNS, "--wait", "--timeout", "60s")
	if exists(t, c, &appsv1.Deployment{}, releaseNS, fullname) {
		t.Error("after uninstall: the manager Deployment is still there")
	}
	if exists(t, c, &rbacv1.ClusterRole{}, "", fullname+"-manager") {
		t.Error("after uninstall: the manager ClusterRole is still there")
	}
	if !exists(t, c, object(formsServiceGVK), releaseNS, "shop") {
		t.Error("after uninstall: the FormsService is gone although formsService.keep is true")
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if !exists(t, c, &crd, "", formsServiceCRD) || crd.DeletionTimestamp != nil {
		t.Fatal("after uninstall: the CRD is gone although crds.keep is true")
	}

	// Installing again takes the kept CRD and FormsService back into the release.
	helmAt(t, c, "install", releaseName, chartDir, "--namespace", releaseNS, "--values", full)
	if !exists(t, c, &appsv1.Deployment{}, releaseNS, fullname) {
		t.Error("after reinstall: no manager Deployment")
	}
	if manifest := helmAt(t, c, "get", "manifest", releaseName, "--namespace", releaseNS); !strings.Contains(manifest, "kind: FormsService") {
		t.Error("after reinstall: the kept FormsService is not part of the release")
	}
}

// installCRDs creates the CRDs of the YAML files in dir and waits for them.
func installCRDs(t *testing.T, c *cluster.Cluster, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		for _, obj := range readObjects(t, f) {
			u := &unstructured.Unstructured{Object: obj}
			if err := c.Client.Create(context.Background(), u); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("%s: %v", f, err)
			}
			c.WaitEstablished(t, u.GetName())
		}
	}
}
