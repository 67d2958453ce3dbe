package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/testcluster"
	"github.com/formsservice/formsservice/internal/testproc"
)

// managerLogs holds what the manager logs. controller-runtime takes the first logger it is given, and
// gives itself a silent one when a log line comes 30 s after the process started with none set: envtest
// logs while it starts kube-apiserver, which takes longer than that on a loaded machine, and run's own
// SetLogger would then be ignored and the manager's lines lost. So the test sets the logger first (the
// same JSON lines at info level as run's default flags give).
var managerLogs = &testproc.Buffer{}

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(managerLogs)))
	os.Exit(m.Run())
}

// eventually waits for what the manager does on its own, each within the same bound.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	testwait.Until(t, 60*time.Second, what, f)
}

// The operator as it is deployed: config/default applied to a real API server, the manager run with the
// Deployment's flags under its own service account (so the generated RBAC must be enough), leader
// election, probes and authenticated metrics, reconciling the sample from config/samples.
func TestManager_DeployedWithConfigDefault_ReconcilesTheSampleUnderItsOwnRBAC(t *testing.T) {
	testproc.SkipShort(t, "envtest (kube-apiserver and etcd)")
	cluster, err := testcluster.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cluster.Stop() }()
	ctx := context.Background()
	admin, err := client.New(cluster.Config, client.Options{Scheme: cluster.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	objs, err := cluster.Kustomize("config/default")
	if err != nil {
		t.Fatal(err)
	}
	// Namespaces first, as kubectl orders them.
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].GetKind() == "Namespace" && objs[j].GetKind() != "Namespace" })
	var manager *unstructured.Unstructured
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() == "Deployment" {
			manager = o
		}
		if o.GetKind() == "CustomResourceDefinition" {
			continue // envtest installed it from the same file
		}
		if err := admin.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatalf("config/default: %s %s does not apply to a real API server: %v", o.GetKind(), o.GetName(), err)
		}
	}
	if kinds["CustomResourceDefinition"] != 1 || kinds["Deployment"] != 1 || kinds["ServiceAccount"] != 1 || kinds["ClusterRole"] < 3 {
		t.Errorf("config/default holds %v", kinds)
	}
	var dep appsv1.Deployment
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "formsservice-system", Name: "formsservice-controller-manager"}, &dep); err != nil {
		t.Fatalf("the manager Deployment: %v (built %s)", err, manager.GetName())
	}
	ct := dep.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range ct.Env {
		env[e.Name] = e.Value
	}
	if ct.Image != "ghcr.io/formsservice/formsservice:0.1.0" || env["FORMSSERVICE_IMAGE"] != ct.Image {
		t.Errorf("manager image %q, service image %q: want the same image", ct.Image, env["FORMSSERVICE_IMAGE"])
	}
	if !ptr.Deref(ct.SecurityContext.ReadOnlyRootFilesystem, false) || !ptr.Deref(dep.Spec.Template.Spec.SecurityContext.RunAsNonRoot, false) {
		t.Error("the manager is not locked down")
	}

	// Run the manager with the Deployment's own arguments, as its service account.
	sa := "system:serviceaccount:formsservice-system:" + dep.Spec.Template.Spec.ServiceAccountName
	asOperator := rest.CopyConfig(cluster.Config)
	asOperator.Impersonate = rest.ImpersonationConfig{UserName: sa, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	// Both servers bind port 0: the kernel picks free ports, and the test learns them afterwards.
	args := []string{"--leader-election-namespace=formsservice-system"}
	for _, a := range ct.Args {
		switch {
		case strings.HasPrefix(a, "--health-probe-bind-address"):
			a = "--health-probe-bind-address=127.0.0.1:0"
		case strings.HasPrefix(a, "--metrics-bind-address"):
			a = "--metrics-bind-address=127.0.0.1:0"
		}
		args = append(args, a)
	}
	// The operator-wide operand settings of an air-gapped install: a mirrored Redis and its credential.
	const mirrored = "mirror.example/valkey/valkey@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	args = append(args, "--redis-image="+mirrored, "--image-pull-secrets=mirror-cred")
	listenersBefore := ownListeners(t)
	logs := managerLogs
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(mctx, args, func(k string) string { return env[k] }, logs, asOperator) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		if t.Failed() {
			t.Logf("manager logs:\n%s", logs.String())
		}
	}()

	probes, metrics := managerAddrs(t, logs, listenersBefore)
	for _, p := range []string{"/healthz", "/readyz"} {
		eventually(t, p, func() error {
			resp, err := http.Get("http://" + probes + p)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		})
	}
	// Metrics are served over HTTPS to authorized callers only.
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 5 * time.Second}
	eventually(t, "metrics refuse an anonymous caller", func() error {
		resp, err := insecure.Get("https://" + metrics + "/metrics")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	eventually(t, "leader election", func() error {
		var lease coordinationv1.Lease
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "formsservice-system", Name: LeaderElectionID}, &lease); err != nil {
			return err
		}
		if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
			return fmt.Errorf("no holder")
		}
		return nil
	})

	// The sample, with the Secret it names, becomes a platform.
	samples, err := cluster.Kustomize("config/samples")
	if err != nil {
		t.Fatal(err)
	}
	ns := "acme-platform"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "acme-smtp", Namespace: ns}, StringData: map[string]string{"password": "x"}}); err != nil {
		t.Fatal(err)
	}
	for _, o := range samples {
		o.SetNamespace(ns)
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("the sample is refused: %v", err)
		}
	}
	for _, c := range []string{"forms", "auth", "health"} {
		eventually(t, "Deployment "+c, func() error {
			return admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "acme-" + c}, &appsv1.Deployment{})
		})
	}
	eventually(t, "status", func() error {
		var fs v1alpha1.FormsService
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "acme"}, &fs); err != nil {
			return err
		}
		if fs.Status.ObservedGeneration != fs.Generation || len(fs.Status.Conditions) != 5 { // Ready, Progressing, Degraded, Reconciling, Stalled
			return fmt.Errorf("status %+v", fs.Status)
		}
		for _, c := range fs.Status.Conditions {
			if c.Type == v1alpha1.ConditionDegraded && c.Status != metav1.ConditionFalse {
				return fmt.Errorf("degraded: %s", c.Message)
			}
		}
		return nil
	})
	var redis appsv1.StatefulSet
	eventually(t, "StatefulSet acme-redis", func() error {
		return admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "acme-redis"}, &redis)
	})
	pod := redis.Spec.Template.Spec
	if pod.Containers[0].Image != mirrored || len(pod.ImagePullSecrets) == 0 || pod.ImagePullSecrets[0].Name != "mirror-cred" {
		t.Errorf("--redis-image and --image-pull-secrets did not reach the managed Redis: image %q, pull secrets %v", pod.Containers[0].Image, pod.ImagePullSecrets)
	}
	for _, c := range []string{"forms", "auth", "health", "redis"} {
		var sa corev1.ServiceAccount
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "acme-" + c}, &sa); err != nil {
			t.Errorf("ServiceAccount acme-%s: %v", c, err)
		}
	}
	if strings.Contains(logs.String(), "forbidden") {
		t.Errorf("the operator hit RBAC walls:\n%s", logs.String())
	}

	// RBAC is really enforced: the operator's account cannot, for example, list Secrets (it reads them
	// by name only; it may list Pods, for the highly available Redis's roll).
	asOp, err := client.New(asOperator, client.Options{Scheme: cluster.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := asOp.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets as the operator: %v, want Forbidden", err)
	}
}

// managerAddrs waits until the manager has opened its servers and returns their addresses. The probe
// server logs the address it listens on ("starting server", name "health probe"); the metrics server logs
// only the address it was given (port 0) once it listens, so its port is the one other new listening
// socket of this process.
func managerAddrs(t *testing.T, logs *testproc.Buffer, before map[string]bool) (probes, metrics string) {
	t.Helper()
	eventually(t, "the manager's probe and metrics servers listening", func() error {
		probes = ""
		for _, line := range strings.Split(logs.String(), "\n") {
			var l struct{ Msg, Name, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "starting server" && l.Name == "health probe" {
				probes = l.Addr
			}
		}
		if probes == "" || !strings.Contains(logs.String(), "Serving metrics server") {
			return fmt.Errorf("not yet")
		}
		var added []string
		for a := range ownListeners(t) {
			if !before[a] && a != probes {
				added = append(added, a)
			}
		}
		if len(added) != 1 {
			return fmt.Errorf("new listening sockets besides the probes' %s: %v, want the metrics server's alone", probes, added)
		}
		metrics = added[0]
		return nil
	})
	return probes, metrics
}

// ownListeners lists the IPv4 loopback addresses this process listens on: the kernel's TCP table
// (/proc/self/net/tcp) joined with this process's descriptors by socket inode.
func ownListeners(t *testing.T) map[string]bool {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	table, err := os.ReadFile("/proc/self/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
			continue
		}
		ip, port, ok := strings.Cut(f[1], ":")
		if !ok || ip != "0100007F" { // 127.0.0.1, in the kernel's byte order
			continue
		}
		p, err := strconv.ParseUint(port, 16, 16)
		if err != nil {
			continue
		}
		out["127.0.0.1:"+strconv.FormatUint(p, 10)] = true
	}
	return out
}

func TestRun_NegativeMaxConcurrentUpgrades_Refused(t *testing.T) {
	err := run(context.Background(), []string{"--max-concurrent-upgrades=-1"}, func(string) string { return "" }, &strings.Builder{}, &rest.Config{})
	if err == nil || !strings.Contains(err.Error(), "--max-concurrent-upgrades") {
		t.Fatalf("run = %v, want the flag refused", err)
	}
}
