// Package admission checks, offline, that what we install passes a real admission policy engine: Kyverno's
// command line (bin/kyverno, hack/install-kyverno.sh) applies the Pod Security (restricted) and
// best-practice policies of Kyverno's published library, vendored in policies/, to the chart's
// `helm template` output and to every object the operator renders for a FormsService
// (docs/architecture.md, D33).
package admission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/test/internal/repo"
	"github.com/formsservice/formsservice/test/internal/samples"
)

// The policy sets: every pod the chart or the operator makes must meet the restricted Pod Security
// Standard and the best practices; the operator's pods also run without a service-account token and
// from images pinned by digest (the manager needs its token to reach the API server, and its image is
// the user's choice of tag or digest).
var (
	podSecurity   = "test/admission/policies/pod-security"
	bestPractices = "test/admission/policies/best-practices"
	operandsOnly  = "test/admission/policies/other"
)

// namespace of the checks: best-practices/disallow-default-namespace refuses "default".
const namespace = "formsservice-system"

// kyverno applies the policy folders to the resources in file and fails the test with its report unless
// every rule passes. It returns the report.
func kyverno(t *testing.T, file string, policies ...string) string {
	t.Helper()
	out, err := kyvernoOutput(t, file, policies...)
	if err != nil {
		t.Fatalf("kyverno apply %s on %s: %v\n%s", strings.Join(policies, " "), file, err, report(out))
	}
	if !strings.Contains(out, "fail: 0, warn: 0, error: 0") {
		t.Fatalf("kyverno apply on %s did not pass every rule:\n%s", file, report(out))
	}
	if i := strings.Index(out, "pass: "); i >= 0 {
		t.Log(strings.TrimSpace(out[i:]))
	}
	return out
}

func kyvernoOutput(t *testing.T, file string, policies ...string) (string, error) {
	t.Helper()
	bin := repo.Tool(t, "kyverno", "hack/install-kyverno.sh")
	args := append([]string{"apply"}, policies...)
	args = append(args, "--resource", file, "--exception", repo.Path(t, "test", "admission", "exceptions", "helm-test-hooks.yaml"))
	return repo.Output(t, nil, bin, args...)
}

// report drops the CLI's deprecation warning about each ClusterPolicy (kyverno.io/v1 is what the
// library publishes for the Pod Security policies).
func report(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "Warning: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func TestChart_PassesThePodSecurityAndBestPracticePolicies(t *testing.T) {
	helm := repo.Tool(t, "helm", "hack/install-chart-tools.sh")
	files, err := filepath.Glob(repo.Path(t, "test", "chart", "testdata", "*.values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no chart test values: %v", err)
	}
	env := []string{"HELM_CACHE_HOME=" + repo.Path(t, "bin", ".helm", "cache"), "HELM_CONFIG_HOME=" + repo.Path(t, "bin", ".helm", "config"),
		"HELM_DATA_HOME=" + repo.Path(t, "bin", ".helm", "data")}
	type render struct{ name, values, apiVersions string }
	var renders []render
	for _, values := range files {
		name := strings.TrimSuffix(filepath.Base(values), ".values.yaml")
		renders = append(renders, render{name, values, ""})
		if name == "formsservice" { // the FormsService and the helm test pod render once the CRD is served
			renders = append(renders, render{name + "-crd-present", values, "platform.formsservice.io/v1alpha1/FormsService"})
		}
	}
	for _, r := range renders {
		name := r.name
		t.Run(name, func(t *testing.T) {
			args := []string{"template", "formsservice-operator", "charts/formsservice-operator", "--namespace", namespace, "--values", r.values}
			if r.apiVersions != "" {
				args = append(args, "--api-versions", r.apiVersions)
			}
			manifest := repo.Run(t, env, helm, args...)
			if r.apiVersions != "" && !strings.Contains(manifest, "helm.sh/hook: test") {
				t.Fatal("no helm test pod rendered with a FormsService in the release")
			}
			file := filepath.Join(t.TempDir(), name+".yaml")
			if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			out := kyverno(t, file, podSecurity, bestPractices)
			if strings.Contains(out, "pass: 0,") {
				t.Fatalf("no rule applied to the chart's objects:\n%s", report(out))
			}
		})
	}
}

// operandImage is the services' image as an install pins it (the chart's serviceImage.digest).
const operandImage = "ghcr.io/formsservice/formsservice@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestOperands_PassThePodSecurityBestPracticeAndOperandPolicies(t *testing.T) {
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
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := sample(t)
			c.edit(fs)
			file := writeOperands(t, fs, render.Inputs{Image: operandImage, RedisRunAsUser: ptr.To[int64](render.DefaultRedisUID)})
			kyverno(t, file, podSecurity, bestPractices, operandsOnly)
		})
	}
}

// TestOperands_ThePoliciesRefuseWhatTheyShould is the control: the same check fails on operands that
// break a rule of each set, so a pass above means something.
func TestOperands_ThePoliciesRefuseWhatTheyShould(t *testing.T) {
	fs := sample(t)
	fs.Spec.Image = "ghcr.io/formsservice/formsservice:latest" // best practices: no latest; operands: digests
	file := writeOperands(t, fs, render.Inputs{})
	// Pod Security: a root user where the rendered pods name none.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rooted := strings.Replace(string(b), `"runAsNonRoot":true,"seccompProfile"`, `"runAsNonRoot":true,"runAsUser":0,"seccompProfile"`, 1)
	if rooted == string(b) {
		t.Fatal("no pod security context to edit: the control would prove nothing")
	}
	if err := os.WriteFile(file, []byte(rooted), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := kyvernoOutput(t, file, podSecurity, bestPractices, operandsOnly)
	if err == nil {
		t.Fatalf("kyverno passed operands that break the policies:\n%s", report(out))
	}
	for _, policy := range []string{"disallow-latest-tag", "require-image-checksum", "require-run-as-non-root-user"} {
		if !strings.Contains(out, "policy "+policy+" -> ") {
			t.Errorf("policy %s did not refuse:\n%s", policy, report(out))
		}
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

// writeOperands writes every object the operator renders for fs, as the reconciler does, into one file
// of JSON documents, and returns its path.
func writeOperands(t *testing.T, fs *v1alpha1.FormsService, in render.Inputs) string {
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
		add(render.RedisNetworkPolicy(fs))
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
		b.WriteString("---\n")
		b.Write(j)
		b.WriteString("\n")
	}
	file := filepath.Join(t.TempDir(), "operands.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d operand objects in %s", len(objs), file)
	return file
}

// isNilPointer reports a typed nil (a render function's "nothing to apply").
func isNilPointer(o any) bool {
	b, _ := json.Marshal(o)
	return string(b) == "null"
}
