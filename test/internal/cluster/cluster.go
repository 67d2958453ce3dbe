// Package cluster starts a real kube-apiserver and etcd (controller-runtime's envtest) for the tests in
// test/, and gives them a client, a kubeconfig file for helm, and small waits. The binaries are found as
// the operator's tests find them (testcluster.Assets: KUBEBUILDER_ASSETS or bin/k8s/).
package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/formsservice/formsservice/controllers/testcluster"
	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/test/internal/repo"
)

// quietOnce silences controller-runtime's logger, which envtest uses and which otherwise complains with a
// stack trace that it was never set.
var quietOnce sync.Once

// Cluster is a running API server.
type Cluster struct {
	Config *rest.Config
	Client client.Client
	// KubeConfig is a kubeconfig file for the cluster's admin, for helm and kubectl.
	KubeConfig string
	Scheme     *runtime.Scheme
}

// Start runs kube-apiserver and etcd until the test ends, with the CRDs of crdPaths (files or folders)
// installed and established.
func Start(t testing.TB, crdPaths ...string) *Cluster {
	t.Helper()
	testproc.SkipShort(t, "envtest (kube-apiserver and etcd)")
	quietOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	assets, err := testcluster.Assets(repo.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdPaths,
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		// Ready in 5–10 s on two idle cores, much later when other builds share them: envtest's default
		// of 20 s fails a loaded run for nothing.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping envtest: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return &Cluster{Config: cfg, Client: c, KubeConfig: kubeconfig, Scheme: scheme}
}

// CreateNamespace creates a namespace (a fresh envtest has only the system ones).
func (c *Cluster) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// Eventually is testwait.Until for conditions on cluster objects, which say why they do not hold yet
// ("2 of 3 ready"): it fails the test with what cond last said after timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	testwait.Until(t, timeout, what, func() error {
		if ok, why := cond(); !ok {
			return errors.New(why)
		}
		return nil
	})
}

// WaitEstablished waits until the named CRD is Established, so its kind can be used.
func (c *Cluster) WaitEstablished(t testing.TB, name string) {
	t.Helper()
	Eventually(t, 30*time.Second, "CRD "+name+" established", func() (bool, string) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, &crd); err != nil {
			return false, err.Error()
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, "not established yet"
	})
}
