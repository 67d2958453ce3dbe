// Package admission checks, offline and without any tool, that what we install would be admitted in a
// namespace that enforces the restricted Pod Security Standard, and meets the best practices we hold it
// to: the chart's `helm template` output for every golden case of test/chart (which proves those files
// equal to what helm renders) and every object the operator renders for a FormsService.
//
// Pod Security is checked by the Kubernetes project's own code: the policy package of
// k8s.io/pod-security-admission, which kube-apiserver's PodSecurity admission plugin runs, at every
// Kubernetes minor the chart installs on. The best practices of Kyverno's library that D33 applied are
// Go checks with the library's names (checks_test.go). A control breaks each rule and checks that it is
// refused, so a pass means something.
package admission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/test/internal/repo"
	"github.com/formsservice/formsservice/test/internal/samples"
)

// namespace of the operator's objects: disallow-default-namespace refuses "default".
const namespace = "formsservice-system"

// pass fails the test with every finding, or when no pod was checked at all.
func pass(t *testing.T, c checked) {
	t.Helper()
	for _, f := range c.Findings {
		t.Error(f)
	}
	if c.Pods == 0 {
		t.Fatalf("no object that makes pods among the %d checked: the check proved nothing", c.Objects)
	}
	t.Logf("%d objects, %d of them making pods: restricted Pod Security at v1.%d to v1.%d and latest, %d best practices",
		c.Objects, c.Pods, oldestMinor, newestMinor(t), len(bestPractices)+len(objectPractices))
}

func TestChart_PassesPodSecurityRestrictedAndTheBestPractices(t *testing.T) {
	files, err := filepath.Glob(repo.Path(t, "test", "chart", "testdata", "*.golden.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files of helm template in test/chart/testdata: %v", err)
	}
	helmTest := false
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".golden.yaml"), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			objs := decode(t, b)
			for _, u := range objs {
				if p := podsOf(t, u); p != nil && p.HelmTest {
					helmTest = true
				}
			}
			pass(t, check(t, objs, false))
		})
	}
	if !helmTest {
		t.Error("no helm test pod in any golden file: the probe exception is no longer needed, or the chart lost its test")
	}
}

// operandImage is the services' image as an install pins it (the chart's serviceImage.digest).
const operandImage = "ghcr.io/formsservice/formsservice@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestOperands_PassPodSecurityRestrictedTheBestPracticesAndTheOperandPractices(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*v1alpha1.FormsService)
	}{
		{"sample", func(*v1alpha1.FormsService) {}},
		{"autoscaled, network policies, a pinned user", func(fs *v1alpha1.FormsService) {
			fs.Spec.RunAsUser = ptr.To[int64](1000)
			fs.Spec.Forms.Autoscaling = &v1alpha1.AutoscalingSpec{MaxReplicas: 5}
			fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{RunAsUser: ptr.To[int64](0)}
		}},
		{"highly available Redis", func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{HighAvailability: true}
		}},
		{"backups and a restore: the CronJob's and the Jobs' pods", func(fs *v1alpha1.FormsService) {
			s3 := &v1alpha1.S3Location{Endpoint: "https://s3.example.com", Bucket: "backups", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}
			fs.Spec.Backup = &v1alpha1.BackupSpec{Schedule: "0 3 * * *", S3: s3}
			fs.Annotations = map[string]string{v1alpha1.BackupRequestAnnotation: "now"}
			fs.Spec.RestoreFrom = &v1alpha1.RestoreSource{Volume: &v1alpha1.VolumeLocation{ClaimName: "backups"}, Object: "a.backup.gz"}
		}},
		{"backups with a web identity and a private CA: the projected token and the CA volume", func(fs *v1alpha1.FormsService) {
			s3 := &v1alpha1.S3Location{Endpoint: "https://s3.private:9443", Bucket: "backups",
				CABundleRef: &v1alpha1.SecretKeySelector{Name: "s3-ca", Key: "ca.crt"},
				WebIdentity: &v1alpha1.S3WebIdentity{RoleARN: "arn:aws:iam::111122223333:role/backup"}}
			fs.Spec.Backup = &v1alpha1.BackupSpec{Schedule: "0 3 * * *", S3: s3}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := sample(t)
			c.edit(fs)
			objs := operands(t, fs, render.Inputs{Image: operandImage, RedisRunAsUser: ptr.To[int64](render.DefaultRedisUID)})
			pass(t, check(t, objs, true))
		})
	}
}

// TestChecks_RefuseWhatTheyShould is the control: one valid pod of the operator's, broken in one way per
// rule, is refused by that rule, so a pass above means something.
func TestChecks_RefuseWhatTheyShould(t *testing.T) {
	fs := sample(t)
	valid := operands(t, fs, render.Inputs{Image: operandImage, RedisRunAsUser: ptr.To[int64](render.DefaultRedisUID)})
	var deployment *unstructured.Unstructured
	for _, u := range valid {
		if u.GetKind() == "Deployment" {
			deployment = u
			break
		}
	}
	if deployment == nil {
		t.Fatal("the operator renders no Deployment for the sample")
	}
	if c := check(t, []*unstructured.Unstructured{deployment}, true); len(c.Findings) > 0 {
		t.Fatalf("the control's starting point already breaks a rule: %v", c.Findings)
	}
	pod := func(edit func(p *corev1.PodSpec)) *unstructured.Unstructured {
		u := deployment.DeepCopy()
		spec, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
		var p corev1.PodSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &p); err != nil {
			t.Fatal(err)
		}
		edit(&p)
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&p)
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedMap(u.Object, m, "spec", "template", "spec"); err != nil {
			t.Fatal(err)
		}
		return u
	}
	first := func(p *corev1.PodSpec) *corev1.Container { return &p.Containers[0] }
	for _, c := range []struct {
		name  string
		obj   *unstructured.Unstructured
		rules []string // each must refuse it
	}{
		{"a root user", pod(func(p *corev1.PodSpec) { p.SecurityContext.RunAsUser = ptr.To[int64](0) }), []string{"pod-security-restricted"}},
		{"privilege escalation", pod(func(p *corev1.PodSpec) { first(p).SecurityContext.AllowPrivilegeEscalation = ptr.To(true) }), []string{"pod-security-restricted"}},
		{"a host path", pod(func(p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, corev1.Volume{Name: "sock", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run/containerd/containerd.sock"}}})
		}), []string{"pod-security-restricted", "disallow-cri-sock-mount"}},
		{"the host network", pod(func(p *corev1.PodSpec) { p.HostNetwork = true }), []string{"pod-security-restricted"}},
		{"an added capability", pod(func(p *corev1.PodSpec) {
			first(p).SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		}), []string{"pod-security-restricted"}},
		{"no capability dropped", pod(func(p *corev1.PodSpec) { first(p).SecurityContext.Capabilities.Drop = nil }), []string{"pod-security-restricted", "require-drop-all"}},
		{"a :latest image", pod(func(p *corev1.PodSpec) { first(p).Image = "ghcr.io/formsservice/formsservice:latest" }), []string{"disallow-latest-tag", "require-image-checksum"}},
		{"an image without a tag", pod(func(p *corev1.PodSpec) { first(p).Image = "ghcr.io/formsservice/formsservice" }), []string{"disallow-latest-tag", "require-image-checksum"}},
		{"a writable root file system", pod(func(p *corev1.PodSpec) { first(p).SecurityContext.ReadOnlyRootFilesystem = ptr.To(false) }), []string{"require-ro-rootfs"}},
		{"no CPU request", pod(func(p *corev1.PodSpec) { delete(first(p).Resources.Requests, corev1.ResourceCPU) }), []string{"require-pod-requests-limits"}},
		{"no memory limit", pod(func(p *corev1.PodSpec) {
			first(p).Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}), []string{"require-pod-requests-limits"}},
		{"no probe", pod(func(p *corev1.PodSpec) {
			c := first(p)
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
		}), []string{"require-pod-probes"}},
		{"a service-account token", pod(func(p *corev1.PodSpec) { p.AutomountServiceAccountToken = nil }), []string{"restrict-automount-sa-token"}},
		{"no name label", func() *unstructured.Unstructured {
			u := deployment.DeepCopy()
			unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "labels", "app.kubernetes.io/name")
			return u
		}(), []string{"require-labels"}},
		{"the default namespace", func() *unstructured.Unstructured {
			u := deployment.DeepCopy()
			u.SetNamespace("default")
			return u
		}(), []string{"disallow-default-namespace"}},
		{"a NodePort Service with external IPs", &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "s", "namespace": namespace},
			"spec":     map[string]any{"type": "NodePort", "externalIPs": []any{"192.0.2.1"}}}}, []string{"restrict-node-port", "restrict-service-external-ips"}},
		{"an Ingress rule without a host", &unstructured.Unstructured{Object: map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
			"metadata": map[string]any{"name": "i", "namespace": namespace},
			"spec": map[string]any{"rules": []any{map[string]any{"http": map[string]any{"paths": []any{map[string]any{"path": "/", "pathType": "Prefix",
				"backend": map[string]any{"service": map[string]any{"name": "s", "port": map[string]any{"number": int64(80)}}}}}}}}}}},
			[]string{"disallow-empty-ingress-host"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := check(t, []*unstructured.Unstructured{c.obj}, true)
			var refused []string
			for _, f := range got.Findings {
				if !slices.Contains(refused, f.Rule) {
					refused = append(refused, f.Rule)
				}
			}
			for _, rule := range c.rules {
				if !slices.Contains(refused, rule) {
					t.Errorf("%s did not refuse it; refused by %v: %v", rule, refused, got.Findings)
				}
			}
		})
	}
}

// sample is config/samples' FormsService in the check's namespace.
func sample(t *testing.T) *v1alpha1.FormsService {
	t.Helper()
	for _, u := range samples.Load(t, namespace) {
		if u.GetKind() != "FormsService" {
			continue
		}
		fs := &v1alpha1.FormsService{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, fs); err != nil {
			t.Fatal(err)
		}
		fs.UID = "0f0e0d0c-0b0a-0908-0706-050403020100"
		return fs
	}
	t.Fatal("config/samples has no FormsService")
	return nil
}

// operands returns every object the operator renders for fs, as the reconciler applies them.
func operands(t *testing.T, fs *v1alpha1.FormsService, in render.Inputs) []*unstructured.Unstructured {
	t.Helper()
	objs := []any{}
	add := func(o any) {
		if o != nil && !isNilPointer(o) {
			objs = append(objs, o)
		}
	}
	for _, c := range render.Components {
		add(render.ServiceAccount(fs, c))
		add(render.Service(fs, c))
		add(render.Deployment(fs, c, in))
		add(render.PodDisruptionBudget(fs, c))
		add(render.ServiceNetworkPolicy(fs, c))
		add(render.HorizontalPodAutoscaler(fs, c))
	}
	if render.ManagedRedis(fs) {
		add(render.ServiceAccount(fs, render.Redis))
		add(render.RedisConfigMap(fs))
		add(render.RedisService(fs))
		add(render.RedisNetworkPolicy(fs, render.Inputs{}))
		add(render.RedisStatefulSet(fs, in))
		if render.RedisHA(fs) {
			for _, s := range render.RedisHANodeServices(fs) {
				add(s)
			}
			add(render.RedisHAPodDisruptionBudget(fs))
		}
	}
	if render.DataJobsWanted(fs) {
		add(render.DataServiceAccount(fs))
		add(render.DataNetworkPolicy(fs))
		add(render.BackupCronJob(fs, in))
		add(render.BackupRequestJob(fs, in, fs.Annotations[v1alpha1.BackupRequestAnnotation]))
		add(render.RestoreJob(fs, in))
	}
	cm, err := render.ConfigMap(fs, in)
	if err != nil {
		t.Fatal(err)
	}
	add(cm)
	add(render.Ingress(fs))
	var b strings.Builder
	for _, o := range objs {
		j, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteString("\n")
	}
	return decode(t, []byte(b.String()))
}

// isNilPointer reports a typed nil (a render function's "nothing to apply").
func isNilPointer(o any) bool {
	b, _ := json.Marshal(o)
	return string(b) == "null"
}
