package admission

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	apiyaml "k8s.io/apimachinery/pkg/util/yaml"
	psa "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/formsservice/formsservice/test/internal/repo"
)

// A finding is one rule an object breaks.
type finding struct {
	Object string // Kind/namespace/name
	Rule   string // the rule's name: "pod-security-restricted" or a best practice's
	Detail string
}

func (f finding) String() string { return f.Object + ": " + f.Rule + ": " + f.Detail }

// podObject is an object that makes pods (a Pod, a workload's template, a CronJob's job template), as the
// PodSecurity admission plugin and Kyverno's auto-generated rules see it: the pods' metadata and spec.
type podObject struct {
	Object string
	Kind   string
	// Namespace is the object's own (pods inherit it).
	Namespace string
	Meta      metav1.ObjectMeta
	Spec      corev1.PodSpec
	// HelmTest marks the chart's `helm test` pod (annotation helm.sh/hook: test): it runs one check and
	// exits, so it needs no probe (the one exception, as D33's PolicyException had it).
	HelmTest bool
}

// decode reads a stream of YAML or JSON documents into objects, skipping empty ones.
func decode(t testing.TB, b []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := apiyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

func objectName(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// podsOf returns the pods an object makes, or nil for a kind that makes none.
func podsOf(t testing.TB, u *unstructured.Unstructured) *podObject {
	t.Helper()
	var meta metav1.ObjectMeta
	var spec corev1.PodSpec
	convert := func(into any) {
		t.Helper()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			t.Fatalf("%s: %v", objectName(u), err)
		}
	}
	switch u.GetKind() {
	case "Pod":
		var o corev1.Pod
		convert(&o)
		meta, spec = o.ObjectMeta, o.Spec
	case "Deployment":
		var o appsv1.Deployment
		convert(&o)
		meta, spec = o.Spec.Template.ObjectMeta, o.Spec.Template.Spec
	case "StatefulSet":
		var o appsv1.StatefulSet
		convert(&o)
		meta, spec = o.Spec.Template.ObjectMeta, o.Spec.Template.Spec
	case "DaemonSet":
		var o appsv1.DaemonSet
		convert(&o)
		meta, spec = o.Spec.Template.ObjectMeta, o.Spec.Template.Spec
	case "ReplicaSet":
		var o appsv1.ReplicaSet
		convert(&o)
		meta, spec = o.Spec.Template.ObjectMeta, o.Spec.Template.Spec
	case "Job":
		var o batchv1.Job
		convert(&o)
		meta, spec = o.Spec.Template.ObjectMeta, o.Spec.Template.Spec
	case "CronJob":
		var o batchv1.CronJob
		convert(&o)
		meta, spec = o.Spec.JobTemplate.Spec.Template.ObjectMeta, o.Spec.JobTemplate.Spec.Template.Spec
	default:
		return nil
	}
	return &podObject{Object: objectName(u), Kind: u.GetKind(), Namespace: u.GetNamespace(), Meta: meta, Spec: spec,
		HelmTest: u.GetKind() == "Pod" && slices.Contains(strings.Split(u.GetAnnotations()["helm.sh/hook"], ","), "test")}
}

// --- Pod Security: the Kubernetes project's own evaluator ----------------------------------------------

// oldestMinor is the oldest Kubernetes 1.x the chart installs on (Chart.yaml's kubeVersion).
const oldestMinor = 30

var evaluator = func() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(err)
	}
	return e
}()

// newestMinor is the Kubernetes minor of the pod-security-admission module in go.mod (v0.37.x is
// Kubernetes 1.37), the newest policy version it knows.
func newestMinor(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(repo.Path(t, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/pod-security-admission v0\.(\d+)\.`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod does not require k8s.io/pod-security-admission v0.x.y")
	}
	minor, _ := strconv.Atoi(string(m[1]))
	return minor
}

// podSecurity evaluates the pods against the restricted Pod Security Standard as the PodSecurity
// admission plugin does for a namespace labelled pod-security.kubernetes.io/enforce: restricted with
// enforce-version each Kubernetes minor from oldestMinor to newest, and "latest": a pod must be admitted
// by each.
func podSecurity(t testing.TB, p *podObject) []finding {
	t.Helper()
	var out []finding
	seen := map[string]bool{}
	versions := []psa.Version{psa.LatestVersion()}
	for minor := oldestMinor; minor <= newestMinor(t); minor++ {
		versions = append(versions, psa.MajorMinorVersion(1, minor))
	}
	for _, v := range versions {
		for _, r := range evaluator.EvaluatePod(psa.LevelVersion{Level: psa.LevelRestricted, Version: v}, &p.Meta, &p.Spec) {
			if r.Allowed {
				continue
			}
			d := r.ForbiddenReason + " (" + r.ForbiddenDetail + ")"
			if !seen[d] {
				seen[d] = true
				out = append(out, finding{p.Object, "pod-security-restricted", d + " at enforce-version " + v.String()})
			}
		}
	}
	return out
}

// --- best practices: the checks of Kyverno's best-practice library that D33 applied, in Go -------------

// A podRule checks the pods of one object; an objectRule any object.
type (
	podRule    func(p *podObject) []string
	objectRule func(u *unstructured.Unstructured) []string
)

// allContainers are the regular, init and ephemeral containers with their kind, as Kyverno's foreach
// over request.object.spec.[ephemeralContainers, initContainers, containers] sees them.
func allContainers(s *corev1.PodSpec) []corev1.Container {
	out := append(slices.Clone(s.Containers), s.InitContainers...)
	for _, e := range s.EphemeralContainers {
		out = append(out, corev1.Container(e.EphemeralContainerCommon))
	}
	return out
}

// bestPractices are Kyverno's best-practice policies D33 applied (the library's names kept), each as
// the condition its pattern states.
var bestPractices = map[string]podRule{
	// disallow-latest-tag: every image names a tag (or a digest), and not "latest".
	"disallow-latest-tag": func(p *podObject) (bad []string) {
		for _, c := range allContainers(&p.Spec) {
			name, _, digested := strings.Cut(c.Image, "@")
			tag := ""
			if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
				tag = name[i+1:]
			}
			switch {
			case tag == "" && !digested:
				bad = append(bad, c.Name+": image "+c.Image+" names no tag")
			case tag == "latest":
				bad = append(bad, c.Name+": image "+c.Image+" is :latest")
			}
		}
		return bad
	},
	// require-drop-all: every container drops ALL capabilities.
	"require-drop-all": func(p *podObject) (bad []string) {
		for _, c := range allContainers(&p.Spec) {
			var drop []corev1.Capability
			if c.SecurityContext != nil && c.SecurityContext.Capabilities != nil {
				drop = c.SecurityContext.Capabilities.Drop
			}
			if !slices.ContainsFunc(drop, func(d corev1.Capability) bool { return strings.EqualFold(string(d), "ALL") }) {
				bad = append(bad, c.Name+": capabilities.drop lacks ALL")
			}
		}
		return bad
	},
	// require-ro-rootfs: every (regular) container's root file system is read-only.
	"require-ro-rootfs": func(p *podObject) (bad []string) {
		for _, c := range p.Spec.Containers {
			if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
				bad = append(bad, c.Name+": readOnlyRootFilesystem is not true")
			}
		}
		return bad
	},
	// require-pod-requests-limits: every container asks for CPU and memory and bounds its memory.
	"require-pod-requests-limits": func(p *podObject) (bad []string) {
		for _, c := range allContainers(&p.Spec) {
			r := c.Resources
			for what, ok := range map[string]bool{"requests.cpu": !r.Requests.Cpu().IsZero(),
				"requests.memory": !r.Requests.Memory().IsZero(), "limits.memory": !r.Limits.Memory().IsZero()} {
				if !ok {
					bad = append(bad, c.Name+": no "+what)
				}
			}
		}
		slices.Sort(bad)
		return bad
	},
	// require-pod-probes: every (regular) container of a long-running pod (a Pod, a Deployment's, a
	// StatefulSet's, a DaemonSet's: the library's autogen-controllers; a Job's pods end) has a liveness,
	// readiness or startup probe; the chart's helm test pod is exempt.
	"require-pod-probes": func(p *podObject) (bad []string) {
		if p.HelmTest || !slices.Contains([]string{"Pod", "Deployment", "StatefulSet", "DaemonSet"}, p.Kind) {
			return nil
		}
		for _, c := range p.Spec.Containers {
			if c.LivenessProbe == nil && c.ReadinessProbe == nil && c.StartupProbe == nil {
				bad = append(bad, c.Name+": no liveness, readiness or startup probe")
			}
		}
		return bad
	},
	// require-labels: the pods carry app.kubernetes.io/name.
	"require-labels": func(p *podObject) []string {
		if p.Meta.Labels["app.kubernetes.io/name"] == "" {
			return []string{"no app.kubernetes.io/name label on the pods"}
		}
		return nil
	},
	// disallow-default-namespace: pods and their controllers name a namespace, not "default".
	"disallow-default-namespace": func(p *podObject) []string {
		if p.Namespace == "" || p.Namespace == "default" {
			return []string{fmt.Sprintf("namespace %q", p.Namespace)}
		}
		return nil
	},
	// disallow-cri-sock-mount: no hostPath volume on a container runtime's socket (restricted already
	// refuses every hostPath volume; kept because the library checks it on its own).
	"disallow-cri-sock-mount": func(p *podObject) (bad []string) {
		for _, v := range p.Spec.Volumes {
			if v.HostPath != nil && slices.Contains([]string{"/var/run/docker.sock", "/var/run/containerd/containerd.sock",
				"/var/run/crio/crio.sock", "/var/run/cri-dockerd.sock"}, v.HostPath.Path) {
				bad = append(bad, v.Name+": hostPath "+v.HostPath.Path)
			}
		}
		return bad
	},
}

// objectPractices are the best practices on other kinds: Services and Ingresses.
var objectPractices = map[string]objectRule{
	// restrict-node-port: no Service of type NodePort.
	"restrict-node-port": func(u *unstructured.Unstructured) []string {
		if t, _, _ := unstructured.NestedString(u.Object, "spec", "type"); u.GetKind() == "Service" && t == "NodePort" {
			return []string{"type NodePort"}
		}
		return nil
	},
	// restrict-service-external-ips: no Service with externalIPs.
	"restrict-service-external-ips": func(u *unstructured.Unstructured) []string {
		if ips, _, _ := unstructured.NestedSlice(u.Object, "spec", "externalIPs"); u.GetKind() == "Service" && len(ips) > 0 {
			return []string{fmt.Sprintf("externalIPs %v", ips)}
		}
		return nil
	},
	// disallow-empty-ingress-host: every rule of an Ingress that routes HTTP names its host.
	"disallow-empty-ingress-host": func(u *unstructured.Unstructured) (bad []string) {
		if u.GetKind() != "Ingress" {
			return nil
		}
		var ing networkingv1.Ingress
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ing); err != nil {
			return []string{err.Error()}
		}
		for i, r := range ing.Spec.Rules {
			if r.HTTP != nil && r.Host == "" {
				bad = append(bad, fmt.Sprintf("rules[%d] routes HTTP without a host", i))
			}
		}
		return bad
	},
}

// operandPractices hold for the operator's pods only: the manager needs its token to reach the API
// server, and its image is the installer's choice of tag or digest (Kyverno's other/ policies of D33).
var operandPractices = map[string]podRule{
	// require-image-checksum: every image is pinned by digest.
	"require-image-checksum": func(p *podObject) (bad []string) {
		for _, c := range allContainers(&p.Spec) {
			if !strings.Contains(c.Image, "@") {
				bad = append(bad, c.Name+": image "+c.Image+" is not pinned by digest")
			}
		}
		return bad
	},
	// restrict-automount-sa-token: the pods mount no service-account token.
	"restrict-automount-sa-token": func(p *podObject) []string {
		if a := p.Spec.AutomountServiceAccountToken; a == nil || *a {
			return []string{"automountServiceAccountToken is not false"}
		}
		return nil
	},
}

// checked is what check looked at, so that a test can tell "nothing broken" from "nothing checked".
type checked struct {
	Objects, Pods int
	Findings      []finding
}

// check applies Pod Security (restricted), the best practices and, for the operator's objects, the
// operand practices to every object.
func check(t testing.TB, objs []*unstructured.Unstructured, operands bool) checked {
	t.Helper()
	var c checked
	add := func(object, rule string, bad []string) {
		for _, b := range bad {
			c.Findings = append(c.Findings, finding{object, rule, b})
		}
	}
	for _, u := range objs {
		c.Objects++
		for _, name := range sortedKeys(objectPractices) {
			add(objectName(u), name, objectPractices[name](u))
		}
		p := podsOf(t, u)
		if p == nil {
			continue
		}
		c.Pods++
		c.Findings = append(c.Findings, podSecurity(t, p)...)
		for _, name := range sortedKeys(bestPractices) {
			add(p.Object, name, bestPractices[name](p))
		}
		if operands {
			for _, name := range sortedKeys(operandPractices) {
				add(p.Object, name, operandPractices[name](p))
			}
		}
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
