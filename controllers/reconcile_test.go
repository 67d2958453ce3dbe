package controllers

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/logging"
)

// createAndWait creates fs and waits until the operator has created its Deployments.
func createAndWait(t *testing.T, fs *v1alpha1.FormsService) *v1alpha1.FormsService {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	for _, c := range render.Components {
		eventually(t, func() error {
			return k8s.Get(ctx, key(fs.Namespace, render.WorkloadName(fs, c)), &appsv1.Deployment{})
		})
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), fs); err != nil {
		t.Fatal(err)
	}
	return fs
}

func configOf(t *testing.T, ns, fsName, component string) *config.Config {
	t.Helper()
	var cm corev1.ConfigMap
	if err := k8s.Get(context.Background(), key(ns, fsName+"-config"), &cm); err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(cm.Data[render.ConfigKey(component)]))
	if err != nil {
		t.Fatalf("%s.yaml does not parse as the services' configuration: %v", component, err)
	}
	return c
}

func TestFormsService_CreatesEveryOwnedObjectWithTheRightContent(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))

	// The configuration, one file per service, in the format the services read and accept.
	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, key(ns, "acme-config"), &cm); err != nil {
		t.Fatal(err)
	}
	for _, c := range render.Components {
		dir := t.TempDir()
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, []byte(cm.Data[c+".yaml"]), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Load(path, func(string) string { return "" }); err != nil {
			t.Errorf("%s: the rendered configuration does not load: %v", c, err)
		}
	}
	forms := configOf(t, ns, "acme", render.Forms)
	if want := []string{"https://www.acme.example", "https://*.acme.example"}; !slices.Equal(forms.AllowedOrigins, want) {
		t.Errorf("forms allowedOrigins = %v, want %v", forms.AllowedOrigins, want)
	}
	if forms.Forms.RateLimit() != 30 || forms.PublicURL != "https://id.acme.example" || !slices.Equal(forms.TrustedProxies, []string{"10.0.0.0/8"}) {
		t.Errorf("forms config = %+v", forms)
	}
	wantRedis := fmt.Sprintf("acme-redis.%s.svc:6379", ns)
	if !slices.Equal(forms.Redis.Addrs, []string{wantRedis}) || forms.Redis.PasswordFile != render.SecretsDir+"/acme-redis-password/password" {
		t.Errorf("forms redis = %+v", forms.Redis)
	}
	auth := configOf(t, ns, "acme", render.Auth)
	if len(auth.Auth.Clients) != 1 || auth.Auth.Clients[0].ClientID != "web" ||
		!slices.Equal(auth.Auth.Clients[0].RedirectURIs, []string{"https://app.acme.example/callback", "http://localhost:3000/callback"}) ||
		!slices.Equal(auth.Auth.Clients[0].Scopes, []string{"openid", "email"}) {
		t.Errorf("auth clients = %+v", auth.Auth.Clients)
	}
	if auth.Auth.SigningKeyFile != render.SecretsDir+"/acme-signing-key/signing-key.pem" || auth.Auth.PreviousSigningKeyFile != "" {
		t.Errorf("auth keys = %q, %q", auth.Auth.SigningKeyFile, auth.Auth.PreviousSigningKeyFile)
	}
	if auth.Auth.AccessTokenLifetime.D() != 10*time.Minute {
		t.Errorf("access token lifetime = %v", auth.Auth.AccessTokenLifetime.D())
	}
	health := configOf(t, ns, "acme", render.Health)
	if health.Health.FormsURL != "http://acme-forms."+ns+".svc" || health.Health.AuthURL != "http://acme-auth."+ns+".svc" {
		t.Errorf("health URLs = %q, %q", health.Health.FormsURL, health.Health.AuthURL)
	}
	if len(health.Auth.Clients) != 0 || forms.Auth.SigningKeyFile != "" {
		t.Error("a service got another service's section")
	}

	// The signing key: an EC P-256 private key in PKCS#8 PEM.
	var sk corev1.Secret
	if err := k8s.Get(ctx, key(ns, "acme-signing-key"), &sk); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(sk.Data[render.SigningKeyKey])
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("signing key is not a PKCS#8 PEM block: %q", sk.Data[render.SigningKeyKey])
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if ek, ok := k.(*ecdsa.PrivateKey); err != nil || !ok || ek.Curve != elliptic.P256() {
		t.Fatalf("signing key: %T, %v; want an ECDSA P-256 key", k, err)
	}

	// Deployments: probes, resources, non-root, read-only root filesystem, scrape annotations.
	for _, c := range render.Components {
		var d appsv1.Deployment
		if err := k8s.Get(ctx, key(ns, "acme-"+c), &d); err != nil {
			t.Fatal(err)
		}
		pod := d.Spec.Template.Spec
		ct := pod.Containers[0]
		if ct.Image != testImage || !slices.Equal(ct.Args, []string{c, "-config", "/etc/formsservice/config.yaml", "-drain-delay", "5s"}) {
			t.Errorf("%s: image %q args %v", c, ct.Image, ct.Args)
		}
		if ct.ReadinessProbe == nil || ct.ReadinessProbe.HTTPGet.Path != "/readyz" || ct.LivenessProbe == nil || ct.LivenessProbe.HTTPGet.Path != "/livez" {
			t.Errorf("%s: probes %+v %+v", c, ct.ReadinessProbe, ct.LivenessProbe)
		}
		if ct.Resources.Requests.Cpu().IsZero() || ct.Resources.Requests.Memory().IsZero() || ct.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: resources %+v", c, ct.Resources)
		}
		sc := ct.SecurityContext
		if !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) || !ptr.Deref(pod.SecurityContext.RunAsNonRoot, false) ||
			pod.SecurityContext.RunAsUser != nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%s: security context %+v / %+v (the image's user, none named)", c, sc, pod.SecurityContext)
		}
		var sa corev1.ServiceAccount
		if err := k8s.Get(ctx, key(ns, "acme-"+c), &sa); err != nil || pod.ServiceAccountName != sa.Name ||
			ptr.Deref(sa.AutomountServiceAccountToken, true) || ptr.Deref(pod.AutomountServiceAccountToken, true) {
			t.Errorf("%s: ServiceAccount %q (%v), automount %v / pod %v", c, pod.ServiceAccountName, err, sa.AutomountServiceAccountToken, pod.AutomountServiceAccountToken)
		}
		ann := d.Spec.Template.Annotations
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != "8080" || ann[render.RestartHashAnnotation] == "" {
			t.Errorf("%s: pod annotations %v", c, ann)
		}
		wantReplicas := int32(2)
		if c == render.Auth {
			wantReplicas = 3
		}
		if ptr.Deref(d.Spec.Replicas, 0) != wantReplicas {
			t.Errorf("%s: replicas %d, want %d", c, ptr.Deref(d.Spec.Replicas, 0), wantReplicas)
		}
		var svc corev1.Service
		if err := k8s.Get(ctx, key(ns, "acme-"+c), &svc); err != nil {
			t.Fatal(err)
		}
		if svc.Spec.Ports[0].Name != "http" || svc.Spec.Ports[1].Name != "metrics" || svc.Spec.Selector[render.LabelComponent] != c {
			t.Errorf("%s: service %+v", c, svc.Spec)
		}
	}
	var authDep appsv1.Deployment
	_ = k8s.Get(ctx, key(ns, "acme-auth"), &authDep)
	if !mountsSecret(authDep.Spec.Template.Spec, "acme-signing-key") || !mountsSecret(authDep.Spec.Template.Spec, "acme-redis-password") {
		t.Error("auth does not mount the signing key and the Redis password")
	}

	// Ingress: forms paths on the forms host, the rest on the main host, TLS for both.
	var ing networkingv1.Ingress
	if err := k8s.Get(ctx, key(ns, "acme"), &ing); err != nil {
		t.Fatal(err)
	}
	routes := map[string]string{}
	for _, r := range ing.Spec.Rules {
		for _, p := range r.HTTP.Paths {
			routes[r.Host+p.Path] = p.Backend.Service.Name
		}
	}
	wantRoutes := map[string]string{
		"forms.acme.example/contact": "acme-forms", "forms.acme.example/waitlist": "acme-forms",
		"id.acme.example/oauth2": "acme-auth", "id.acme.example/.well-known": "acme-auth", "id.acme.example/account": "acme-auth", "id.acme.example/admin": "acme-auth",
		"id.acme.example/console": "acme-auth",
		"id.acme.example/health":  "acme-health",
	}
	if fmt.Sprint(routes) != fmt.Sprint(wantRoutes) {
		t.Errorf("ingress routes = %v, want %v", routes, wantRoutes)
	}
	if ptr.Deref(ing.Spec.IngressClassName, "") != "nginx" || len(ing.Spec.TLS) != 1 || len(ing.Spec.TLS[0].Hosts) != 2 {
		t.Errorf("ingress class/TLS = %v %+v", ing.Spec.IngressClassName, ing.Spec.TLS)
	}

	// The managed Redis: one replica, a volume claim, append-only persistence.
	var sts appsv1.StatefulSet
	if err := k8s.Get(ctx, key(ns, "acme-redis"), &sts); err != nil {
		t.Fatal(err)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String() != "1Gi" ||
		ptr.Deref(sts.Spec.Replicas, 0) != 1 {
		t.Errorf("redis statefulset = %+v", sts.Spec)
	}
	var rcm corev1.ConfigMap
	if err := k8s.Get(ctx, key(ns, "acme-redis-config"), &rcm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rcm.Data["redis.conf"], "appendonly yes") {
		t.Errorf("redis.conf = %q", rcm.Data["redis.conf"])
	}
	var rpw corev1.Secret
	if err := k8s.Get(ctx, key(ns, "acme-redis-password"), &rpw); err != nil {
		t.Fatal(err)
	}
	if len(rpw.Data["password"]) < 32 || string(rpw.Data["requirepass.conf"]) != "requirepass "+string(rpw.Data["password"])+"\n" {
		t.Error("redis password Secret is not what the pods expect")
	}
	if err := k8s.Get(ctx, key(ns, "acme-redis"), &corev1.Service{}); err != nil {
		t.Fatal(err)
	}

	// Status and an Event.
	eventually(t, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), fs); err != nil {
			return err
		}
		if fs.Status.ObservedGeneration != fs.Generation || fs.Status.OriginCount != 2 || fs.Status.ClientCount != 1 {
			return fmt.Errorf("status %+v", fs.Status)
		}
		return nil
	})
	eventually(t, func() error { return hasEvent(ns, "acme", "Created", "Deployment acme-forms") })
}

func mountsSecret(pod corev1.PodSpec, name string) bool {
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
	}
	return false
}

func hasEvent(ns, fsName, reason, noteContains string) error {
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return err
	}
	var seen []string
	for _, e := range list.Items {
		if e.Regarding.Name == fsName && e.Regarding.Kind == "FormsService" {
			if e.Reason == reason && strings.Contains(e.Note, noteContains) {
				return nil
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
	}
	return fmt.Errorf("no event %s %q among %q", reason, noteContains, seen)
}

// The kubelet updates a mounted ConfigMap by writing a new timestamped folder and swapping the ..data
// symlink; kubeletWrite does the same, so the test exercises the services' real reload path.
func kubeletWrite(t *testing.T, dir, content string) {
	t.Helper()
	ts := filepath.Join(dir, fmt.Sprintf("..%d", time.Now().UnixNano()))
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "config.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config.yaml")
	if _, err := os.Lstat(link); os.IsNotExist(err) {
		if err := os.Symlink("..data/config.yaml", link); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFormsService_OriginChangeReachesTheRunningConfigWithoutARestart(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, key(ns, "acme-config"), &cm); err != nil {
		t.Fatal(err)
	}
	hashBefore := restartHashes(t, ns)

	// A service process's view of its mounted configuration, reloading as the real services do.
	dir := t.TempDir()
	kubeletWrite(t, dir, cm.Data["forms.yaml"])
	store, err := config.NewWatcher(filepath.Join(dir, "config.yaml"), func() (*config.Config, error) {
		return config.Load(filepath.Join(dir, "config.yaml"), func(string) string { return "" })
	}, logging.New(os.Stderr, "error"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = store.Watch(wctx) }() // a change before its watch is set up is caught by the file's stamp

	// Edit the resource: one origin added, one client added.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.AllowedOrigins = append(fs.Spec.AllowedOrigins, "https://shop.example.org")
		fs.Spec.OAuthClients = append(fs.Spec.OAuthClients, v1alpha1.OAuthClient{ClientID: "shop", RedirectURIs: []v1alpha1.RedirectURI{"https://shop.example.org/cb"}})
	})
	eventually(t, func() error {
		c := configOf(t, ns, "acme", render.Forms)
		if !slices.Contains(c.AllowedOrigins, "https://shop.example.org") {
			return fmt.Errorf("forms origins still %v", c.AllowedOrigins)
		}
		if a := configOf(t, ns, "acme", render.Auth); len(a.Auth.Clients) != 2 {
			return fmt.Errorf("auth clients still %v", a.Auth.Clients)
		}
		return nil
	})
	// Reaches the running service through the mounted file, without a restart...
	if err := k8s.Get(ctx, key(ns, "acme-config"), &cm); err != nil {
		t.Fatal(err)
	}
	kubeletWrite(t, dir, cm.Data["forms.yaml"])
	eventually(t, func() error {
		if !slices.Contains(store.Current().AllowedOrigins, "https://shop.example.org") {
			return fmt.Errorf("the service still runs with %v", store.Current().AllowedOrigins)
		}
		return nil
	})
	eventually(t, func() error { return hasEvent(ns, "acme", "Updated", "ConfigMap acme-config") })
	// ...and the pods are not rolled: the pod templates did not change.
	if after := restartHashes(t, ns); fmt.Sprint(after) != fmt.Sprint(hashBefore) {
		t.Errorf("an origin/client change rolled the pods: restart hashes %v -> %v", hashBefore, after)
	}

	// A start-up setting (the trusted proxies) does roll the pods.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.TrustedProxies = []string{"10.0.0.0/8", "192.168.0.0/16"} })
	eventually(t, func() error {
		after := restartHashes(t, ns)
		for _, c := range render.Components {
			if after[c] == hashBefore[c] {
				return fmt.Errorf("%s: restart hash unchanged after a trustedProxies change", c)
			}
		}
		return nil
	})
}

func restartHashes(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range render.Components {
		var d appsv1.Deployment
		if err := k8s.Get(context.Background(), key(ns, "acme-"+c), &d); err != nil {
			t.Fatal(err)
		}
		out[c] = d.Spec.Template.Annotations[render.RestartHashAnnotation]
	}
	return out
}

func TestFormsService_EveryOwnedObjectIsGarbageCollectedWithIt(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme"), &networkingv1.Ingress{}) })

	// envtest runs no garbage collector: check that every object the operator made in the namespace
	// names the FormsService as its controlling owner, with blockOwnerDeletion, which is what the
	// garbage collector follows on deletion.
	lists := []client.ObjectList{
		&corev1.ConfigMapList{}, &corev1.SecretList{}, &corev1.ServiceList{}, &corev1.ServiceAccountList{},
		&appsv1.DeploymentList{}, &appsv1.StatefulSetList{}, &networkingv1.IngressList{},
		&networkingv1.NetworkPolicyList{}, &policyv1.PodDisruptionBudgetList{},
	}
	count := 0
	for _, l := range lists {
		if err := k8s.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, _ := meta.ExtractList(l)
		for _, it := range items {
			o := it.(client.Object)
			if o.GetName() == "kube-root-ca.crt" || o.GetName() == "default" {
				continue // made by the API server (the ServiceAccount default: its controllers) in every namespace
			}
			if o.GetName() == "acme-signing-key" {
				// Kept when the FormsService goes (D53): no owner reference at all.
				if refs := o.GetOwnerReferences(); len(refs) != 0 {
					t.Errorf("the signing-key Secret has owner references %+v", refs)
				}
				continue
			}
			count++
			ref := metav1.GetControllerOf(o)
			if ref == nil || ref.UID != fs.UID || ref.Kind != "FormsService" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
				t.Errorf("%T %s: controller reference %+v does not point at the FormsService", o, o.GetName(), ref)
			}
		}
	}
	// config, redis-config, redis password, 4 Services, 4 ServiceAccounts, 3 Deployments,
	// 3 PodDisruptionBudgets, 1 StatefulSet, 1 NetworkPolicy, 1 Ingress.
	if count != 20 {
		t.Errorf("found %d owned objects, want 20", count)
	}
	// The Redis data volume outlives the resource on purpose.
	var sts appsv1.StatefulSet
	if err := k8s.Get(ctx, key(ns, "acme-redis"), &sts); err != nil {
		t.Fatal(err)
	}
	if p := sts.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("PVC retention policy = %+v, want Retain", p)
	}

	// Removing the ingress from the spec deletes the Ingress; one replica needs no disruption budget;
	// an external Redis replaces the managed one, removed at once since the same edit acknowledges it by
	// its StatefulSet's UID (D72; without it the managed Redis is kept: redisretain_envtest_test.go).
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Ingress = nil
		fs.Spec.PublicURL = "https://id.acme.example"
		fs.Spec.Health.Replicas = ptr.To[int32](1)
		fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"redis.data.svc:6379"}}
		fs.Annotations = map[string]string{v1alpha1.RemoveManagedRedisAnnotation: string(sts.UID)}
	})
	gone := map[string]client.Object{
		"acme": &networkingv1.Ingress{}, "acme-health": &policyv1.PodDisruptionBudget{},
		"acme-redis": &appsv1.StatefulSet{}, "acme-redis-config": &corev1.ConfigMap{},
	}
	for name, obj := range gone {
		eventually(t, func() error {
			err := k8s.Get(ctx, key(ns, name), obj)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%T %s still there: %v", obj, name, err)
		})
	}
	for _, obj := range []client.Object{&networkingv1.NetworkPolicy{}, &corev1.Service{}} {
		eventually(t, func() error {
			if err := k8s.Get(ctx, key(ns, "acme-redis"), obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T acme-redis still there: %v", obj, err)
			}
			return nil
		})
	}
	if err := k8s.Get(ctx, key(ns, "acme-forms"), &policyv1.PodDisruptionBudget{}); err != nil {
		t.Errorf("forms (2 replicas) lost its disruption budget: %v", err)
	}
	// Each removal is an Event on the FormsService, as each creation and change is.
	eventually(t, func() error { return hasEvent(ns, "acme", "Deleted", "StatefulSet acme-redis") })

	// Deleting the resource: the reconciler leaves the rest to the garbage collector.
	if err := k8s.Delete(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), &v1alpha1.FormsService{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}); err != nil {
		t.Errorf("reconcile of a deleted resource: %v", err)
	}
}

func TestSigningKeySecret_SurvivesReconcilesAndRotatesOnlyOnRequest(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	var before corev1.Secret
	if err := k8s.Get(ctx, key(ns, "acme-signing-key"), &before); err != nil {
		t.Fatal(err)
	}
	authHash := restartHashes(t, ns)[render.Auth]

	// Several spec changes and forced reconciles later, the Secret is byte for byte the same object.
	for i := 0; i < 3; i++ {
		updateFS(t, fs, func(fs *v1alpha1.FormsService) {
			fs.Spec.AllowedOrigins = append(fs.Spec.AllowedOrigins, v1alpha1.Origin(fmt.Sprintf("https://s%d.example.org", i)))
		})
		if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, func() error {
		if n := len(configOf(t, ns, "acme", render.Forms).AllowedOrigins); n != 5 {
			return fmt.Errorf("%d origins rendered", n)
		}
		return nil
	})
	var after corev1.Secret
	if err := k8s.Get(ctx, key(ns, "acme-signing-key"), &after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || string(after.Data[render.SigningKeyKey]) != string(before.Data[render.SigningKeyKey]) {
		t.Fatal("the signing-key Secret was rewritten by a reconcile")
	}

	// Rotation: the annotation publishes a next key and signs with the old one still (the steps after
	// that: rotation_envtest_test.go).
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Annotations = map[string]string{v1alpha1.RotateSigningKeyAnnotation: "2026-01-01"}
	})
	var rotated corev1.Secret
	eventually(t, func() error {
		if err := k8s.Get(ctx, key(ns, "acme-signing-key"), &rotated); err != nil {
			return err
		}
		if len(rotated.Data[render.NextSigningKeyKey]) == 0 {
			return fmt.Errorf("no next key")
		}
		if string(rotated.Data[render.SigningKeyKey]) != string(before.Data[render.SigningKeyKey]) {
			return fmt.Errorf("the current key changed before the next one was served")
		}
		return nil
	})
	eventually(t, func() error {
		a := configOf(t, ns, "acme", render.Auth)
		if a.Auth.NextSigningKeyFile != render.SecretsDir+"/acme-signing-key/next-signing-key.pem" {
			return fmt.Errorf("auth nextSigningKeyFile = %q", a.Auth.NextSigningKeyFile)
		}
		if restartHashes(t, ns)[render.Auth] == authHash {
			return fmt.Errorf("auth pods not rolled to read the new key")
		}
		return nil
	})
	eventually(t, func() error { return hasEvent(ns, "acme", "SigningKeyPublished", "as asked") })

	// The same annotation value does not rotate again.
	for i := 0; i < 2; i++ {
		if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}); err != nil {
			t.Fatal(err)
		}
	}
	var again corev1.Secret
	if err := k8s.Get(ctx, key(ns, "acme-signing-key"), &again); err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != rotated.ResourceVersion {
		t.Error("the signing-key Secret changed again for one annotation value")
	}
}
