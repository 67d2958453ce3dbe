//go:build e2e

// Package e2e_test is the kind end-to-end test that `make e2e-kind` (hack/e2e-kind.sh) runs against the
// cluster it creates: it installs the chart with the image loaded into kind, applies config/samples,
// waits for the FormsService to be Ready, and then runs the same checks as the local end-to-end test
// (test/contract, test/signin) through port-forwards to the services' pods. `make e2e`
// (hack/node-cluster/e2e.sh) runs it on a one-node cluster of this machine with an ingress controller
// (Traefik) as well: then the checks also go through the FormsService's Ingress over TLS, and the
// sign-in only goes that way (ingress_test.go).
//
// It needs the build tag e2e and FORMSSERVICE_E2E_KUBECONFIG; `make test` only compiles it
// (go vet -tags e2e ./test/...).
package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/test/contract"
	"github.com/formsservice/formsservice/test/internal/cluster"
	"github.com/formsservice/formsservice/test/internal/repo"
	"github.com/formsservice/formsservice/test/internal/samples"
	"github.com/formsservice/formsservice/test/signin"
)

const (
	operatorNS = "formsservice-system"
	appNS      = "acme"
	e2eClient  = "e2e-kind"
	e2eOrigin  = "http://e2e.acme.example"
	email      = "ada@acme.example"
	password   = "correct horse battery staple"
)

var formsServiceGVK = schema.GroupVersionKind{Group: "platform.formsservice.io", Version: "v1alpha1", Kind: "FormsService"}

type kind struct {
	cfg        *rest.Config
	kubeconfig string
	client     client.Client
	clientset  *kubernetes.Clientset
}

func connect(t *testing.T) *kind {
	kubeconfig := os.Getenv("FORMSSERVICE_E2E_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("FORMSSERVICE_E2E_KUBECONFIG is not set: run `make e2e-kind`, which creates a kind cluster (Docker needed) and sets it")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &kind{cfg: cfg, kubeconfig: kubeconfig, client: c, clientset: cs}
}

func TestKind_ChartSampleFormsSignInHealth(t *testing.T) {
	k := connect(t)
	ctx := context.Background()
	image := os.Getenv("FORMSSERVICE_E2E_IMAGE")
	i := strings.LastIndex(image, ":")
	if i < 0 {
		t.Fatalf("FORMSSERVICE_E2E_IMAGE = %q, want repository:tag of the image loaded into kind", image)
	}
	phase := timeline(t)

	// The chart, with the image kind already holds (never pulled).
	helm := repo.Tool(t, "helm", "hack/install-chart-tools.sh")
	args := []string{"install", "formsservice-operator", "charts/formsservice-operator",
		"--namespace", operatorNS, "--create-namespace", "--wait", "--timeout", "5m",
		"--set", "image.repository=" + image[:i], "--set", "image.tag=" + image[i+1:], "--set", "image.pullPolicy=Never",
		// The write fence (docs/helm.md, RBAC): every write of every phase below passes through it.
		"--set", "writeFence.enabled=true"}
	// The node cluster's own Redis image (hack/node-cluster): it cannot pull the digest-pinned default.
	if ri := os.Getenv("FORMSSERVICE_E2E_REDIS_IMAGE"); ri != "" {
		args = append(args, "--set", "operands.redis.image="+ri)
	}
	repo.Run(t, []string{"KUBECONFIG=" + k.kubeconfig}, helm, args...)
	phase("chart installed, operator running")

	// The sample, as a platform team applies it: its Secrets first.
	k.createNamespace(t, appNS)
	var fs *unstructured.Unstructured
	for _, u := range samples.Load(t, appNS) {
		if u.GetKind() == "FormsService" {
			fs = u
			for _, s := range samples.ReferencedSecrets(u) {
				if err := k.client.Create(ctx, s); err != nil {
					t.Fatalf("Secret %s named by the sample: %v", s.Name, err)
				}
			}
		}
		if err := k.client.Create(ctx, u); err != nil {
			t.Fatalf("applying %s %s from config/samples: %v", u.GetKind(), u.GetName(), err)
		}
	}
	name := fs.GetName()
	k.waitReady(t, name, 6*time.Minute)
	phase("sample FormsService Ready")

	// Reach the services through port-forwards on ports the kernel picks, and through the cluster's
	// ingress controller when the script started one (hack/node-cluster/e2e.sh; not make e2e-kind).
	// Through the ingress, the issuer is https://<the Ingress host>:<the entry point's port>, with the
	// test's certificate in the Ingress' TLS Secret. Without it, the issuer is a loopback relay the test
	// listens on at once (it must be known before the patch that sets it, which rolls the auth pods) and
	// that leads to the auth pod's port-forward once that exists. A client and an origin for this test
	// are added, as a team adds its own app.
	in := ingressFromEnv(t)
	var authRelay *relay
	var issuer string
	if in != nil {
		issuer = in.issuer()
		in.createSecret(t, k)
	} else {
		authRelay = newRelay(t)
		issuer = "http://" + authRelay.addr
	}
	callback := signin.NewCallback(t)
	// The sample autoscales auth: scale it as its HPA would, then let the patch below make the operator
	// reconcile (and roll auth): the replica count must survive, since the HPA owns it.
	const hpaReplicas = 3
	k.scaleDeployment(t, name+"-"+render.Auth, hpaReplicas)
	k.patchForTest(t, name, issuer, callback.RedirectURL, in)
	k.waitReady(t, name, 6*time.Minute)
	phase("patched for the test, Ready again")
	t.Run("autoscaled auth: the HPA is accepted and its replicas are not overridden", func(t *testing.T) {
		k.checkAutoscaled(t, name+"-"+render.Auth, hpaReplicas)
	})
	t.Run("least privilege: the operator's ServiceAccount cannot list Secrets", k.checkOperatorSecretAccess)
	forms := k.portForward(t, name, render.Forms)
	auth := k.portForward(t, name, render.Auth)
	health := k.portForward(t, name, render.Health)
	// The mounted ConfigMap reaches the pods within kubelet's sync period.
	if in == nil {
		authRelay.to(auth)
		waitIssuer(t, issuer, 3*time.Minute)
		phase("port-forwards up, issuer served")
	} else {
		waitIssuerVia(t, &http.Client{Timeout: 5 * time.Second}, "http://"+auth, issuer, 3*time.Minute)
		phase("port-forwards up, issuer served")
		k.waitRolledOut(t, name, []string{render.Forms, render.Auth, render.Health}, 3*time.Minute)
		in.waitServed(t, 2*time.Minute)
		phase("ingress controller routes the Ingress over TLS")
	}
	k.execUsersCreate(t, name)
	if in != nil {
		k.makeAdmin(t, name) // for the console through the ingress (console_test.go)
	}
	phase("account created")

	t.Run("forms contract", contract.Forms{BaseURL: "http://" + forms, Origin: e2eOrigin}.Check)
	t.Run("health", func(t *testing.T) {
		contract.Health(t, "http://"+health, "redis:responseTime", "forms:readiness", "auth:readiness")
	})
	// The chart's helm test hook, pointed at this FormsService: a restricted pod in the operator's
	// namespace that asks /health through the health Service (formsservice check-health).
	t.Run("helm test: the chart's hook asks /health through the Service", func(t *testing.T) {
		env := []string{"KUBECONFIG=" + k.kubeconfig}
		url := fmt.Sprintf("http://%s-health.%s.svc/health", name, appNS)
		repo.Run(t, env, helm, "upgrade", "formsservice-operator", "charts/formsservice-operator", "--namespace", operatorNS,
			"--reuse-values", "--wait", "--timeout", "2m", "--set", "tests.healthURL="+url)
		out := repo.Run(t, env, helm, "test", "formsservice-operator", "--namespace", operatorNS, "--timeout", "2m")
		if !strings.Contains(out, "Succeeded") {
			t.Errorf("helm test did not report success:\n%s", out)
		}
	})
	if in == nil {
		t.Run("sign-in with a real browser", func(t *testing.T) {
			signin.Flow{Issuer: issuer, ClientID: e2eClient, Callback: callback, Email: email, Password: password}.Run(t)
		})
	}
	noIngress := func(t *testing.T) bool {
		if in == nil {
			t.Skip("no ingress controller in this cluster (FORMSSERVICE_E2E_INGRESS unset, as with make e2e-kind): " +
				"hack/node-cluster/e2e.sh runs Traefik for these checks; the port-forwards above covered the services")
		}
		return in == nil
	}
	// The same checks through the Ingress the operator rendered, over TLS, from loopback addresses of
	// their own (127.0.0.2 and up), so that each is a separate client to the per-IP rate limits.
	t.Run("ingress: forms contract", func(t *testing.T) {
		if noIngress(t) {
			return
		}
		contract.Forms{BaseURL: in.formsURL(), Origin: e2eOrigin, Client: in.client(netip.MustParseAddr("127.0.0.2"))}.Check(t)
	})
	t.Run("ingress: health", func(t *testing.T) {
		if noIngress(t) {
			return
		}
		contract.HealthWith(t, in.client(netip.MustParseAddr("127.0.0.3")), in.issuer(),
			"redis:responseTime", "forms:readiness", "auth:readiness")
	})
	t.Run("ingress: sign-in with a real browser over TLS", func(t *testing.T) {
		if noIngress(t) {
			return
		}
		res := signin.Flow{Issuer: issuer, ClientID: e2eClient, Callback: callback, Email: email, Password: password,
			HTTPClient: in.client(netip.MustParseAddr("127.0.0.1")), BrowserFlags: in.browserFlags(t)}.Run(t)
		// The same browser, signed in to the provider, goes on to the console (console_test.go).
		t.Run("console: an admin finds a message posted through the ingress", func(t *testing.T) {
			in.checkConsole(t, res.Browser)
		})
	})
	t.Run("ingress: rate limits count the client's address from X-Forwarded-For, not the controller's", func(t *testing.T) {
		if noIngress(t) {
			return
		}
		in.checkClientAddress(t, formsRateLimit(k.get(t, name)))
	})
	phase("forms, sign-in and health checked")

	// Prometheus scrapes the platform and evaluates its alerts (prometheus_test.go; skipped on kind).
	t.Run("prometheus: targets up, rules loaded, the Redis alert fires and clears", func(t *testing.T) { k.checkPrometheus(t, name, phase) })

	// Day two: what a platform team does with the running platform (test/e2e/daytwo_test.go), reached
	// the way the checks above reached it: through the ingress when there is one.
	d := &dayTwo{main: t, k: k, name: name, forms: forms, issuer: issuer, authRelay: authRelay, redirect: callback.RedirectURL,
		client: freshClient}
	if in != nil {
		d.client = func() *http.Client { return in.client(netip.MustParseAddr("127.0.0.4")) }
	}
	t.Run("day two: origins and clients edited live, no pod restarted", d.liveEdit)
	phase("day two: live edit")
	t.Run("day two: signing key rotated, signed-in users stay signed in", d.rotateSigningKey)
	phase("day two: signing key rotated")
	t.Run("day two: operator upgraded under traffic, one platform at a time, the pinned one untouched, nothing lost", d.upgradeUnderTraffic)
	phase("day two: upgrade under traffic")
	t.Run("day two: backup under forms traffic, FormsService and volume deleted, restored into a new one", d.backupRestore)
	phase("day two: backup, delete, restore")
	t.Run("day two: moved from the managed Redis to the team's own, nothing lost", d.moveToOwnRedis) // move_test.go
	phase("day two: moved to the team's own Redis")
	t.Run("day two: deleting the FormsService collects everything it owned", d.deleteAndCollect)
	phase("day two: FormsService deleted, its objects collected")
	t.Run("high availability: the primary Redis pod killed under forms traffic, then the primary and a lower pod lost at once; no acknowledged submission lost", k.haFailover) // ha_test.go
	phase("high availability: failover under traffic")
}

// relay is a loopback listener on a port the kernel picked, whose connections are copied to a target
// set later; a connection before then is closed.
type relay struct {
	addr   string
	target atomic.Pointer[string]
}

func newRelay(t *testing.T) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &relay{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c)
		}
	}()
	return r
}

func (r *relay) to(target string) { r.target.Store(&target) }

func (r *relay) serve(c net.Conn) {
	defer c.Close()
	target := r.target.Load()
	if target == nil {
		return
	}
	up, err := net.Dial("tcp", *target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done // either side closing ends both
}

// timeline logs each phase with the time since the test began, so that a red run says where it broke;
// the scripts that run this test (hack/node-cluster/e2e.sh) collect the lines.
func timeline(t *testing.T) func(phase string) {
	start := time.Now()
	return func(phase string) {
		t.Helper()
		t.Logf("e2e phase at %5.1fs: %s", time.Since(start).Seconds(), phase)
	}
}

// createNamespace makes the namespace the FormsService runs in, enforcing the restricted Pod Security
// Standard as a careful platform team's would: every pod the operator makes must be admitted under it.
// A pod that breaks the standard is refused there (a server-side dry run), so the enforcement is real.
func (k *kind) createNamespace(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}}}
	if err := k.client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	root := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "pod-security-probe"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.local/none:0"}}},
	}
	err := k.client.Create(ctx, root, client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "restricted") {
		t.Fatalf("namespace %s does not enforce the restricted Pod Security Standard: a pod without a security context got %v", name, err)
	}
}

func (k *kind) get(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(formsServiceGVK)
	if err := k.client.Get(context.Background(), client.ObjectKey{Namespace: appNS, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// waitReady waits for Ready=True on the current generation.
func (k *kind) waitReady(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	cluster.Eventually(t, timeout, "FormsService "+name+" Ready", func() (bool, string) {
		u := k.get(t, name)
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		var conds []metav1.Condition
		for _, r := range raw {
			m, _ := r.(map[string]any)
			conds = append(conds, metav1.Condition{Type: fmt.Sprint(m["type"]), Status: metav1.ConditionStatus(fmt.Sprint(m["status"])),
				Reason: fmt.Sprint(m["reason"]), Message: fmt.Sprint(m["message"])})
		}
		if observed == u.GetGeneration() && meta.IsStatusConditionTrue(conds, "Ready") &&
			!meta.IsStatusConditionTrue(conds, "Progressing") {
			return true, ""
		}
		return false, fmt.Sprintf("generation %d, observed %d, conditions %+v", u.GetGeneration(), observed, conds)
	})
}

// scaleDeployment sets a Deployment's replicas through its scale subresource, as an HPA does. The scale
// read carries the Deployment's resourceVersion, which the operator and the Deployment controller move
// all the time: a conflict reads it again.
func (k *kind) scaleDeployment(t *testing.T, deployment string, replicas int32) {
	t.Helper()
	k.scale(t, appNS, "deployments", deployment, replicas)
}

// checkAutoscaled: the operator's HPA exists with the sample's bounds, the cluster's HPA controller has
// taken it up (it writes conditions), and the Deployment kept the replicas set through the scale
// subresource across a reconcile that rolled it.
func (k *kind) checkAutoscaled(t *testing.T, deployment string, want int32) {
	ctx := context.Background()
	hpa, err := k.clientset.AutoscalingV2().HorizontalPodAutoscalers(appNS).Get(ctx, deployment, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the HPA of %s: %v", deployment, err)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 6 || hpa.Spec.ScaleTargetRef.Name != deployment {
		t.Errorf("HPA spec = min %v max %d target %s, want the sample's 2..6 on %s", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas, hpa.Spec.ScaleTargetRef.Name, deployment)
	}
	cluster.Eventually(t, 2*time.Minute, "the HPA controller to write a condition on "+deployment, func() (bool, string) {
		if hpa, err = k.clientset.AutoscalingV2().HorizontalPodAutoscalers(appNS).Get(ctx, deployment, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		return len(hpa.Status.Conditions) > 0, "no condition yet"
	})
	d, err := k.clientset.AppsV1().Deployments(appNS).Get(ctx, deployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
		t.Errorf("%s has %v replicas after the operator reconciled, want %d (set through the scale subresource)", deployment, d.Spec.Replicas, want)
	}
}

// checkOperatorSecretAccess asks the API server as the operator's ServiceAccount: it may list
// FormsServices (so the identity is right) but not Secrets.
func (k *kind) checkOperatorSecretAccess(t *testing.T) {
	cfg := rest.CopyConfig(k.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + operatorNS + ":formsservice-operator"}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fsList := &unstructured.UnstructuredList{}
	fsList.SetGroupVersionKind(schema.GroupVersionKind{Group: "platform.formsservice.io", Version: "v1alpha1", Kind: "FormsServiceList"})
	if err := c.List(ctx, fsList, client.InNamespace(appNS)); err != nil {
		t.Fatalf("the operator's ServiceAccount cannot list FormsServices (is it the right identity?): %v", err)
	}
	err = c.List(ctx, &corev1.SecretList{}, client.InNamespace(appNS))
	if !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets as the operator: %v, want Forbidden", err)
	}
}

// patchForTest sets the issuer (the ingress, or the relay to the port-forwarded auth service), routes
// the FormsService through the test's ingress when there is one, turns the admin console on (it is
// checked through the ingress: console_test.go), and registers the test's client and origin, next to
// the sample's own.
func (k *kind) patchForTest(t *testing.T, name, issuer, redirectURI string, in *ingress) {
	t.Helper()
	k.update(t, name, "updating the FormsService for the test", func(u *unstructured.Unstructured) {
		if in != nil {
			in.patch(t, u)
		}
		origins, _, _ := unstructured.NestedSlice(u.Object, "spec", "allowedOrigins")
		clients, _, _ := unstructured.NestedSlice(u.Object, "spec", "oauthClients")
		clients = append(clients, map[string]any{"clientID": e2eClient, "redirectURIs": []any{redirectURI}})
		for field, v := range map[string]any{
			"console":        map[string]any{"enabled": true},
			"publicURL":      issuer,
			"allowedOrigins": append(origins, e2eOrigin),
			"oauthClients":   clients,
		} {
			if err := unstructured.SetNestedField(u.Object, v, "spec", field); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// update reads the FormsService, lets mutate change it and writes it back; when the operator wrote the
// resource in between (its status, after every reconcile), the API server answers Conflict and the whole
// read-change-write runs again on the new version. Never a blind Update: the operator is always writing.
func (k *kind) update(t *testing.T, name, what string, mutate func(u *unstructured.Unstructured)) {
	t.Helper()
	conflicts := 0
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := k.get(t, name)
		mutate(u)
		err := k.client.Update(context.Background(), u)
		if apierrors.IsConflict(err) {
			conflicts++
		}
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if conflicts > 0 {
		t.Logf("%s: the operator wrote the FormsService in between %d time(s); read and written again", what, conflicts)
	}
}

// portForward forwards a loopback port the kernel picks to the http port of a ready pod of the
// component, and returns its address.
func (k *kind) portForward(t *testing.T, name, component string) string {
	t.Helper()
	return k.portForwardPod(t, appNS, k.readyPod(t, name, component), render.HTTPPort)
}

// readyPod names a ready pod of the component that is not being deleted (after a roll, the list still
// holds the old ones).
func (k *kind) readyPod(t *testing.T, name, component string) string {
	t.Helper()
	pods, err := k.clientset.CoreV1().Pods(appNS).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(selector(name, component)).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				return p.Name
			}
		}
	}
	t.Fatalf("no ready %s pod among %d", component, len(pods.Items))
	return ""
}

// selector is the component's pod selector, as the operator sets it.
func selector(name, component string) map[string]string {
	return map[string]string{render.LabelName: "formsservice", render.LabelInstance: name, render.LabelComponent: component}
}

// execUsersCreate creates the test's account with `formsservice users create` inside an auth pod, as
// the operator's documentation tells a platform team to.
func (k *kind) execUsersCreate(t *testing.T, name string) {
	t.Helper()
	k.execInComponent(t, name, render.Auth,
		[]string{"/formsservice", "users", "create", "-config", render.ConfigPath, "-email", email, "-name", "Ada Lovelace"}, password+"\n")
}

// waitIssuer waits until discovery at the issuer (the relay to the port-forward) announces it.
func waitIssuer(t *testing.T, issuer string, timeout time.Duration) {
	t.Helper()
	waitIssuerVia(t, &http.Client{Timeout: 5 * time.Second}, issuer, issuer, timeout)
}

// waitIssuerVia waits until discovery at base, through hc, announces the expected issuer.
func waitIssuerVia(t *testing.T, hc *http.Client, base, issuer string, timeout time.Duration) {
	t.Helper()
	u, _ := url.Parse(base)
	cluster.Eventually(t, timeout, fmt.Sprintf("discovery at %s to announce issuer %s", u.Host, issuer), func() (bool, string) {
		return announces(hc, base, issuer)
	})
}

// announces asks discovery at base once: whether it announces issuer, and what it answered.
func announces(hc *http.Client, base, issuer string) (bool, string) {
	resp, err := hc.Get(base + "/.well-known/openid-configuration")
	if err != nil {
		return false, err.Error()
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if strings.Contains(string(b), `"issuer":"`+issuer+`"`) || strings.Contains(string(b), `"issuer": "`+issuer+`"`) {
		return true, ""
	}
	return false, fmt.Sprintf("HTTP %d %s", resp.StatusCode, b)
}

// waitRolledOut waits until each component's Deployment has rolled out completely: every pod is of
// the current revision and Ready, and no pod of an earlier one is still terminating (an ingress
// controller may route to such a pod until its endpoint goes).
func (k *kind) waitRolledOut(t *testing.T, name string, components []string, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	rolledOut := func(component string) (bool, string) {
		d, err := k.clientset.AppsV1().Deployments(appNS).Get(ctx, name+"-"+component, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods, err := k.clientset.CoreV1().Pods(appNS).List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(selector(name, component)).String(),
		})
		if err != nil {
			t.Fatal(err)
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.ReadyReplicas == want &&
				s.Replicas == want && int32(len(pods.Items)) == want,
			fmt.Sprintf("%s: want %d, updated %d, ready %d, total %d, pods %d (terminating ones included)",
				d.Name, want, s.UpdatedReplicas, s.ReadyReplicas, s.Replicas, len(pods.Items))
	}
	cluster.Eventually(t, timeout, fmt.Sprintf("%v rolled out", components), func() (bool, string) {
		for _, component := range components {
			if ok, why := rolledOut(component); !ok {
				return false, why
			}
		}
		return true, ""
	})
}
