//go:build e2e

package e2e_test

// The monitoring phase of the end-to-end test: a real Prometheus, run by a real Prometheus Operator,
// scrapes what the chart and the FormsService ask it to and evaluates the chart's alerting rules.
// hack/node-cluster/prometheus.sh installs the operator and the Prometheus before the test starts and
// names the Prometheus in FORMSSERVICE_E2E_PROMETHEUS ("<namespace>/<name>"); hack/e2e-kind.sh does not
// build or load those images, so the phase is skipped there.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/test/internal/cluster"
	"github.com/formsservice/formsservice/test/internal/repo"
)

const (
	prometheusEnv = "FORMSSERVICE_E2E_PROMETHEUS"
	// The chart's release (and so its manager Deployment and ServiceMonitor) in the main test.
	operatorRelease = "formsservice-operator"
	// The alert that watches Redis, from config/monitoring/prometheus-rules.yaml, used unchanged.
	redisAlert = "FormsServiceRedisUnreachable"
	// The alert on the operator's manager not being scraped, paused by the test with Redis.
	operatorDownAlert = "FormsServiceOperatorDown"
)

// checkPrometheus turns on the chart's ServiceMonitor and PrometheusRule (helm upgrade) and the
// FormsService's ServiceMonitors (spec.monitoring), then proves through Prometheus' HTTP API that every
// target of the manager and of forms, auth and health is up, that the rule groups of
// config/monitoring are loaded and evaluate without error, and that stopping the managed Redis fires
// FormsServiceRedisUnreachable, which clears once Redis is back.
func (k *kind) checkPrometheus(t *testing.T, name string, phase func(string)) {
	ref := os.Getenv(prometheusEnv)
	if ref == "" {
		t.Skip(prometheusEnv + " is not set: no Prometheus Operator in this cluster (make e2e-kind does not build or load " +
			"its images; make e2e installs it with hack/node-cluster/prometheus.sh)")
	}
	promNS, promName, ok := strings.Cut(ref, "/")
	if !ok {
		t.Fatalf("%s = %q, want <namespace>/<name> of a Prometheus", prometheusEnv, ref)
	}
	ctx := context.Background()
	t.Cleanup(func() {
		if t.Failed() {
			k.logTails(t, promNS)
		}
	})

	// The chart's monitoring objects, as a platform team turns them on once the Prometheus Operator runs.
	helm := repo.Tool(t, "helm", "hack/install-chart-tools.sh")
	repo.Run(t, []string{"KUBECONFIG=" + k.kubeconfig}, helm, "upgrade", operatorRelease, "charts/formsservice-operator",
		"--namespace", operatorNS, "--reuse-values", "--wait", "--timeout", "5m",
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.serviceMonitor.interval=5s",
		"--set", "prometheusRule.enabled=true")
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: kind})
		if err := k.client.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorRelease}, u); err != nil {
			t.Fatalf("the chart's %s after helm upgrade: %v", kind, err)
		}
	}
	// The FormsService's ServiceMonitors.
	fs := &unstructured.Unstructured{}
	fs.SetGroupVersionKind(formsServiceGVK)
	fs.SetNamespace(appNS)
	fs.SetName(name)
	patch := []byte(`{"spec":{"monitoring":{"serviceMonitor":{"enabled":true,"interval":"5s"}}}}`)
	if err := k.client.Patch(ctx, fs, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("turning on spec.monitoring.serviceMonitor: %v", err)
	}
	k.waitReady(t, name, 3*time.Minute)
	cluster.Eventually(t, time.Minute, "the Monitored condition True", func() (bool, string) {
		raw, _, _ := unstructured.NestedSlice(k.get(t, name).Object, "status", "conditions")
		for _, r := range raw {
			if m, _ := r.(map[string]any); m["type"] == "Monitored" {
				return m["status"] == "True", fmt.Sprintf("%v: %v", m["reason"], m["message"])
			}
		}
		return false, "no Monitored condition"
	})
	phase("monitoring on: chart ServiceMonitor and PrometheusRule, FormsService ServiceMonitors")

	prom := k.prometheus(t, promNS, promName)
	phase("Prometheus ready, port-forward up")

	// Every target of the manager and of the three services is scraped and up.
	pools := []string{fmt.Sprintf("serviceMonitor/%s/%s/0", operatorNS, operatorRelease)}
	for _, c := range render.Components {
		pools = append(pools, fmt.Sprintf("serviceMonitor/%s/%s-%s/0", appNS, name, c))
	}
	var summary string
	t.Cleanup(func() {
		if t.Failed() {
			k.logEndpoints(t, appNS)
		}
	})
	// Five minutes, not three: when a change of Prometheus's configuration Secret reaches the pod but the
	// config reloader misses the file event, the reloader's own re-read every 3 minutes (its default
	// --watch-interval) is what brings the last ServiceMonitor in. The message names the scrape pools
	// Prometheus has and the targets it dropped, so a red run says which of the two it was.
	cluster.Eventually(t, 5*time.Minute, "every formsservice target up", func() (bool, string) {
		var d struct {
			ActiveTargets []struct {
				ScrapePool string            `json:"scrapePool"`
				ScrapeURL  string            `json:"scrapeUrl"`
				Labels     map[string]string `json:"labels"`
				Health     string            `json:"health"`
				LastError  string            `json:"lastError"`
			} `json:"activeTargets"`
			DroppedTargetCounts map[string]int `json:"droppedTargetCounts"`
		}
		if err := prom.get("/api/v1/targets", url.Values{"state": {"any"}}, &d); err != nil {
			return false, err.Error()
		}
		var configured struct {
			ScrapePools []string `json:"scrapePools"`
		}
		if err := prom.get("/api/v1/scrape_pools", nil, &configured); err != nil {
			return false, err.Error()
		}
		up, all := map[string]int{}, map[string]int{}
		var problems []string
		for _, tg := range d.ActiveTargets {
			all[tg.ScrapePool]++
			if tg.Health == "up" {
				up[tg.ScrapePool]++
			} else {
				problems = append(problems, fmt.Sprintf("%s %s: %s %s", tg.ScrapePool, tg.ScrapeURL, tg.Health, tg.LastError))
			}
		}
		var counts []string
		done := true
		for _, p := range pools {
			counts = append(counts, fmt.Sprintf("%s %d/%d", p, up[p], all[p]))
			done = done && all[p] > 0 && up[p] == all[p]
		}
		summary = strings.Join(counts, ", ")
		return done, fmt.Sprintf("%s; %s; scrape pools %v; dropped %v", summary, strings.Join(problems, "; "),
			configured.ScrapePools, d.DroppedTargetCounts)
	})
	// The same through PromQL: `up` is 1 for every target of those jobs.
	var upVec []struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	cluster.Eventually(t, time.Minute, "up == 1 for every formsservice target", func() (bool, string) {
		q := fmt.Sprintf(`up{namespace=~%q}`, appNS+"|"+operatorNS)
		if err := prom.query(q, &upVec); err != nil {
			return false, err.Error()
		}
		jobs := map[string]bool{}
		for _, s := range upVec {
			if s.Value[1] != "1" {
				return false, fmt.Sprintf("%v = %v", s.Metric, s.Value[1])
			}
			jobs[s.Metric["namespace"]+"/"+s.Metric["service"]] = true
		}
		return len(jobs) >= len(pools), fmt.Sprintf("%d series, services %v", len(upVec), jobs)
	})
	phase(fmt.Sprintf("every formsservice target up (%s; %d up series)", summary, len(upVec)))
	// The services' own `service` label survives the scrape (the operator's ServiceMonitors honor it), so
	// that the request alerts, which select service=~"forms|auth", see the requests the test made.
	cluster.Eventually(t, time.Minute, "request counters with their own service label", func() (bool, string) {
		var vec []struct {
			Metric map[string]string `json:"metric"`
		}
		q := fmt.Sprintf(`count by (service, exported_service) (formsservice_http_requests_total{namespace=%q})`, appNS)
		if err := prom.query(q, &vec); err != nil {
			return false, err.Error()
		}
		seen := map[string]bool{}
		for _, s := range vec {
			if s.Metric["exported_service"] != "" {
				return false, fmt.Sprintf("%v: the service label was overwritten by the target's", s.Metric)
			}
			seen[s.Metric["service"]] = true
		}
		return seen[render.Forms] && seen[render.Auth] && seen[render.Health], fmt.Sprintf("services %v", seen)
	})
	phase("request counters keep service=forms|auth|health")
	// The operator's status metrics name the FormsService's own namespace in `namespace` (the chart's
	// ServiceMonitor honours it), so the operator alerts group by the right FormsService.
	cluster.Eventually(t, time.Minute, "the operator's Ready metric for the FormsService", func() (bool, string) {
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		q := fmt.Sprintf(`max by (namespace, name, exported_namespace) (formsservice_operator_condition{name=%q, type="Ready"})`, name)
		if err := prom.query(q, &vec); err != nil {
			return false, err.Error()
		}
		for _, s := range vec {
			if s.Metric["namespace"] == appNS && s.Metric["exported_namespace"] == "" && s.Value[1] == "1" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%v", vec)
	})
	phase("the operator reports the FormsService Ready, under its own namespace")

	// The chart's rule groups are loaded and every rule evaluates without error.
	groups := shippedRuleGroups(t)
	var redisRule *promRule
	cluster.Eventually(t, 2*time.Minute, "the formsservice rule groups loaded and evaluated", func() (bool, string) {
		loaded, err := prom.rules()
		if err != nil {
			return false, err.Error()
		}
		var problems []string
		for g, names := range groups {
			rules, ok := loaded[g]
			if !ok {
				problems = append(problems, "group "+g+" not loaded")
				continue
			}
			for _, n := range names {
				r, ok := rules[n]
				switch {
				case !ok:
					problems = append(problems, fmt.Sprintf("%s: rule %s missing", g, n))
				case r.Health != "ok":
					problems = append(problems, fmt.Sprintf("%s: %s health %q %s", g, n, r.Health, r.LastError))
				case n == redisAlert:
					redisRule = &r
				}
			}
		}
		return len(problems) == 0, strings.Join(problems, "; ")
	})
	if redisRule == nil || redisRule.Duration != 60 {
		t.Fatalf("%s as Prometheus loaded it: %+v, want the shipped rule with for: 1m", redisAlert, redisRule)
	}
	phase(fmt.Sprintf("%d formsservice rule groups loaded, every rule evaluated without error", len(groups)))

	// Stop the managed Redis and keep it stopped: the operator, which would scale it back at once, is
	// paused first (its Deployment scaled to 0), then Redis' StatefulSet is scaled to 0.
	redisSTS := name + "-" + render.Redis
	k.scale(t, operatorNS, "deployments", operatorRelease, 0)
	restored := false
	t.Cleanup(func() {
		if !restored {
			k.scale(t, operatorNS, "deployments", operatorRelease, 1)
		}
	})
	k.waitNoPods(t, operatorNS, "deployments", operatorRelease)
	// No manager scraped: FormsServiceOperatorDown goes pending (it fires after 5 minutes, longer than
	// this pause; the promtool tests hold the duration).
	cluster.Eventually(t, 2*time.Minute, operatorDownAlert+" pending", func() (bool, string) {
		state, err := prom.alertState(operatorDownAlert, "")
		if err != nil {
			return false, err.Error()
		}
		return state == "pending" || state == "firing", "state " + state
	})
	phase(operatorDownAlert + " pending while the operator is paused")
	k.scale(t, appNS, "statefulsets", redisSTS, 0)
	k.waitNoPods(t, appNS, "statefulsets", redisSTS)
	phase("Redis stopped (operator paused, StatefulSet scaled to 0)")

	sawPending := false
	cluster.Eventually(t, 4*time.Minute, redisAlert+" firing", func() (bool, string) {
		state, err := prom.alertState(redisAlert, appNS)
		if err != nil {
			return false, err.Error()
		}
		if state == "pending" && !sawPending {
			sawPending = true
			phase(redisAlert + " pending")
		}
		return state == "firing", "state " + state
	})
	phase(redisAlert + " firing")

	// The operator back: it scales Redis up again (the StatefulSet is its own), and the alert clears.
	k.scale(t, operatorNS, "deployments", operatorRelease, 1)
	restored = true
	cluster.Eventually(t, 3*time.Minute, "Redis restored by the operator", func() (bool, string) {
		sts, err := k.clientset.AppsV1().StatefulSets(appNS).Get(ctx, redisSTS, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return sts.Status.ReadyReplicas == 1, fmt.Sprintf("replicas %v, ready %d", sts.Spec.Replicas, sts.Status.ReadyReplicas)
	})
	phase("operator back, Redis restored and Ready")
	cluster.Eventually(t, 3*time.Minute, redisAlert+" cleared", func() (bool, string) {
		state, err := prom.alertState(redisAlert, appNS)
		if err != nil {
			return false, err.Error()
		}
		return state == "inactive", "state " + state
	})
	phase(redisAlert + " cleared")
	cluster.Eventually(t, 2*time.Minute, operatorDownAlert+" cleared", func() (bool, string) {
		state, err := prom.alertState(operatorDownAlert, "")
		if err != nil {
			return false, err.Error()
		}
		return state == "inactive", "state " + state
	})
	phase(operatorDownAlert + " cleared")
	k.waitReady(t, name, 3*time.Minute)
}

// shippedRuleGroups reads the rule groups and rule names of config/monitoring/prometheus-rules.yaml,
// the file the chart's PrometheusRule is made of.
func shippedRuleGroups(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(repo.Path(t, "config", "monitoring", "prometheus-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Spec struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Alert  string `json:"alert"`
					Record string `json:"record"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	groups := map[string][]string{}
	for _, g := range f.Spec.Groups {
		for _, r := range g.Rules {
			groups[g.Name] = append(groups[g.Name], r.Alert+r.Record)
		}
	}
	if len(groups) == 0 {
		t.Fatal("config/monitoring/prometheus-rules.yaml has no rule groups")
	}
	return groups
}

// scale sets the replicas of a Deployment or StatefulSet through its scale subresource. The Scale it
// reads carries the object's resourceVersion as a precondition, and the operator and the workload
// controllers write these objects all the time: a conflict reads the Scale again (RetryOnConflict).
func (k *kind) scale(t *testing.T, namespace, resource, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		switch resource {
		case "deployments":
			sc, err := k.clientset.AppsV1().Deployments(namespace).GetScale(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			sc.Spec.Replicas = replicas
			_, err = k.clientset.AppsV1().Deployments(namespace).UpdateScale(ctx, name, sc, metav1.UpdateOptions{})
			return err
		case "statefulsets":
			sc, err := k.clientset.AppsV1().StatefulSets(namespace).GetScale(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			sc.Spec.Replicas = replicas
			_, err = k.clientset.AppsV1().StatefulSets(namespace).UpdateScale(ctx, name, sc, metav1.UpdateOptions{})
			return err
		}
		t.Fatalf("scale: unknown resource %s", resource)
		return nil
	})
	if err != nil {
		t.Fatalf("scaling %s %s/%s to %d: %v", resource, namespace, name, replicas, err)
	}
}

// waitNoPods waits until no pod of a Deployment or StatefulSet exists any more.
func (k *kind) waitNoPods(t *testing.T, namespace, resource, name string) {
	t.Helper()
	ctx := context.Background()
	var sel *metav1.LabelSelector
	switch resource {
	case "deployments":
		d, err := k.clientset.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sel = d.Spec.Selector
	default:
		s, err := k.clientset.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sel = s.Spec.Selector
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 2*time.Minute, fmt.Sprintf("the pods of %s %s/%s gone", resource, namespace, name), func() (bool, string) {
		pods, err := k.clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return len(names) == 0, strings.Join(names, ", ")
	})
}

// promClient talks to Prometheus' HTTP API through a port-forward.
type promClient struct {
	base string
	hc   *http.Client
}

// prometheus waits for the Prometheus Operator to run the Prometheus promNS/promName and for it to be
// ready, and port-forwards to its pod.
func (k *kind) prometheus(t *testing.T, promNS, promName string) promClient {
	t.Helper()
	ctx := context.Background()
	sel := labels.SelectorFromSet(map[string]string{"operator.prometheus.io/name": promName}).String()
	var pod string
	cluster.Eventually(t, 3*time.Minute, "a ready Prometheus pod", func() (bool, string) {
		pods, err := k.clientset.CoreV1().Pods(promNS).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, p := range pods.Items {
			seen = append(seen, fmt.Sprintf("%s %s", p.Name, p.Status.Phase))
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					pod = p.Name
				}
			}
		}
		return pod != "", fmt.Sprintf("pods %v", seen)
	})
	p := promClient{base: "http://" + k.portForwardPod(t, promNS, pod, 9090), hc: &http.Client{Timeout: 10 * time.Second}}
	cluster.Eventually(t, time.Minute, "Prometheus /-/ready", func() (bool, string) {
		resp, err := p.hc.Get(p.base + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return p
}

// get calls an API endpoint and decodes its data.
func (p promClient) get(path string, q url.Values, data any) error {
	u := p.base + path
	if q != nil {
		u += "?" + q.Encode()
	}
	resp, err := p.hc.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("GET %s: %s: %v", path, resp.Status, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, env.Error)
	}
	return json.Unmarshal(env.Data, data)
}

// query evaluates an instant vector query.
func (p promClient) query(q string, vec any) error {
	var d struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get("/api/v1/query", url.Values{"query": {q}}, &d); err != nil {
		return err
	}
	if d.ResultType != "vector" {
		return fmt.Errorf("query %s: result type %s", q, d.ResultType)
	}
	return json.Unmarshal(d.Result, vec)
}

type promRule struct {
	Name      string  `json:"name"`
	Type      string  `json:"type"`
	Query     string  `json:"query"`
	Duration  float64 `json:"duration"`
	Health    string  `json:"health"`
	LastError string  `json:"lastError"`
	State     string  `json:"state"`
	Alerts    []struct {
		Labels map[string]string `json:"labels"`
		State  string            `json:"state"`
	} `json:"alerts"`
}

// rules returns the loaded rules by group name and rule name.
func (p promClient) rules() (map[string]map[string]promRule, error) {
	var d struct {
		Groups []struct {
			Name  string     `json:"name"`
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get("/api/v1/rules", nil, &d); err != nil {
		return nil, err
	}
	out := map[string]map[string]promRule{}
	for _, g := range d.Groups {
		out[g.Name] = map[string]promRule{}
		for _, r := range g.Rules {
			out[g.Name][r.Name] = r
		}
	}
	return out, nil
}

// alertState is the state of an alerting rule's alert for a namespace: inactive, pending or firing.
// An empty namespace matches an alert without one (FormsServiceOperatorDown's absent() has no namespace).
func (p promClient) alertState(alert, namespace string) (string, error) {
	loaded, err := p.rules()
	if err != nil {
		return "", err
	}
	var groups []string
	for g, rules := range loaded {
		groups = append(groups, g)
		r, ok := rules[alert]
		if !ok {
			continue
		}
		if r.Health != "ok" {
			return "", fmt.Errorf("%s: health %s %s", alert, r.Health, r.LastError)
		}
		for _, a := range r.Alerts {
			if namespace == "" || a.Labels["namespace"] == namespace {
				return a.State, nil
			}
		}
		return "inactive", nil
	}
	sort.Strings(groups)
	return "", fmt.Errorf("no rule %s in the groups %v", alert, groups)
}

// portForwardPod forwards a loopback port the kernel picks to a port of a pod, and returns its address.
func (k *kind) portForwardPod(t *testing.T, namespace, pod string, port int) string {
	t.Helper()
	transport, upgrader, err := spdy.RoundTripperFor(k.cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := k.clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := fw.ForwardPorts(); err != nil {
			t.Logf("port-forward to %s ended: %v", pod, err)
		}
	}()
	t.Cleanup(func() { close(stop) })
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("port-forward to %s not ready", pod)
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("port-forward to %s: ports %v %v", pod, ports, err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local)
}

// logTails logs the last lines of every container of every pod in a namespace, for a red run's log
// (the cluster is gone afterwards).
func (k *kind) logTails(t *testing.T, namespace string) {
	ctx := context.Background()
	pods, err := k.clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("pods of %s: %v", namespace, err)
		return
	}
	tail := int64(25)
	for _, p := range pods.Items {
		for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
			b, err := k.clientset.CoreV1().Pods(namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail}).DoRaw(ctx)
			t.Logf("--- %s/%s %s (%v):\n%s", namespace, p.Name, c.Name, err, b)
		}
	}
}

// logEndpoints logs every EndpointSlice of a namespace with each endpoint's readiness and the ports, and
// every pod's phase and Ready condition: what Prometheus's service discovery had to go on.
func (k *kind) logEndpoints(t *testing.T, namespace string) {
	ctx := context.Background()
	slices, err := k.clientset.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("EndpointSlices of %s: %v", namespace, err)
	} else {
		for _, s := range slices.Items {
			var ports, eps []string
			for _, p := range s.Ports {
				ports = append(ports, fmt.Sprintf("%s:%d", ptr.Deref(p.Name, ""), ptr.Deref(p.Port, 0)))
			}
			for _, e := range s.Endpoints {
				eps = append(eps, fmt.Sprintf("%v ready=%v", e.Addresses, ptr.Deref(e.Conditions.Ready, false)))
			}
			t.Logf("EndpointSlice %s/%s (service %s): ports %v, endpoints %v", namespace, s.Name,
				s.Labels["kubernetes.io/service-name"], ports, eps)
		}
	}
	pods, err := k.clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("pods of %s: %v", namespace, err)
		return
	}
	for _, p := range pods.Items {
		ready := "unknown"
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = fmt.Sprintf("%s (%s %s)", c.Status, c.Reason, c.Message)
			}
		}
		t.Logf("pod %s/%s: %s, ready %s, ip %s", namespace, p.Name, p.Status.Phase, ready, p.Status.PodIP)
	}
}
