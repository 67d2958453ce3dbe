package controllers

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

func TestBuildStatus(t *testing.T) {
	ready := func(c string, n int32) workloadState {
		return deploymentState(c, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(n)},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: n, UpdatedReplicas: n, AvailableReplicas: n},
		})
	}
	with := func(w workloadState, f func(*workloadState)) workloadState { f(&w); return w }
	type cond struct {
		status metav1.ConditionStatus
		reason string
		msg    string
	}
	blocked := func(ps ...problem) observed { return observed{Problems: ps, RolloutBlocked: true} }
	cases := []struct {
		name        string
		workloads   []workloadState
		found       observed
		ready       cond
		progress    cond
		degraded    cond
		reconciling cond
		stalled     cond
	}{
		{"all available", []workloadState{ready("forms", 2), ready("auth", 2)}, observed{},
			cond{"True", "Available", ""}, cond{"False", "RolloutComplete", ""}, cond{"False", "AsExpected", ""},
			cond{"False", "ReconciliationSucceeded", ""}, cond{"False", "AsExpected", ""}},
		{"nothing created yet", []workloadState{deploymentState("forms", nil)}, observed{},
			cond{"False", "ServicesUnavailable", "forms: Deployment not created yet"}, cond{"True", "RollingOut", "forms: Deployment not created yet"}, cond{"False", "AsExpected", ""},
			cond{"True", "RollingOut", "forms: Deployment not created yet"}, cond{"False", "RollingOut", ""}},
		{"a missing Secret explains why nothing runs", []workloadState{deploymentState("forms", nil)},
			blocked(problem{Reason: "RedisPasswordSecretMissing", Message: `Secret "r" named by spec.redis.passwordSecretRef does not exist`}),
			cond{"False", "RedisPasswordSecretMissing", `Secret "r"`}, cond{"True", "RolloutBlocked", `not rolled out until this is fixed: Secret "r"`}, cond{"True", "RedisPasswordSecretMissing", `Secret "r"`},
			cond{"False", "Stalled", ""}, cond{"True", "RedisPasswordSecretMissing", `Secret "r"`}},
		{"a problem blocks the rollout of a running platform: Ready is False while Degraded is True", []workloadState{ready("forms", 2)},
			blocked(problem{Reason: "SecretKeyMissing", Message: `Secret "smtp" named by spec.forms.delivery.smtp.passwordSecretRef has no key "pw"`}),
			cond{"False", "SecretKeyMissing", `has no key "pw"`}, cond{"True", "RolloutBlocked", `has no key "pw"`}, cond{"True", "SecretKeyMissing", `has no key "pw"`},
			cond{"False", "Stalled", ""}, cond{"True", "SecretKeyMissing", `has no key "pw"`}},
		{"a refused PDB does not block the rollout, and stalls", []workloadState{ready("forms", 2)},
			observed{Problems: []problem{{Reason: "ApplyFailed", Message: "PodDisruptionBudget acme-forms: forbidden by policy"}}},
			cond{"False", "ApplyFailed", "forbidden by policy"}, cond{"False", "RolloutComplete", ""}, cond{"True", "ApplyFailed", "forbidden by policy"},
			cond{"False", "Stalled", ""}, cond{"True", "ApplyFailed", "forbidden by policy"}},
		{"an API error the operator retries: Reconciling, not Stalled", []workloadState{ready("forms", 2)},
			observed{Problems: []problem{{Reason: "ApplyFailed", Message: "Service acme-forms: the server is currently unable to handle the request", Transient: true}}},
			cond{"False", "ApplyFailed", "unable to handle"}, cond{"False", "RolloutComplete", ""}, cond{"True", "ApplyFailed", "unable to handle"},
			cond{"True", "RetryingAfterError", "unable to handle"}, cond{"False", "Retrying", ""}},
		{"replicas unavailable", []workloadState{with(ready("auth", 3), func(w *workloadState) { w.Status.AvailableReplicas = 1 })}, observed{},
			cond{"False", "ServicesUnavailable", "auth: 1 of 3 replicas available"}, cond{"False", "RolloutComplete", ""}, cond{"False", "AsExpected", ""},
			cond{"True", "WaitingForAvailability", "auth: 1 of 3 replicas available"}, cond{"False", "AsExpected", ""}},
		{"new spec not yet observed: Ready mid-rollout, but Reconciling", []workloadState{with(ready("forms", 2), func(w *workloadState) { w.Generation = 3 })}, observed{},
			cond{"True", "Available", ""}, cond{"True", "RollingOut", "forms: the Deployment controller has not seen the new spec yet"}, cond{"False", "AsExpected", ""},
			cond{"True", "RollingOut", "forms: the Deployment controller has not seen the new spec yet"}, cond{"False", "RollingOut", ""}},
		{"old replicas still terminating", []workloadState{with(ready("forms", 2), func(w *workloadState) { w.Status.Replicas = 3 })}, observed{},
			cond{"True", "Available", ""}, cond{"True", "RollingOut", "forms: 1 old replicas terminating"}, cond{"False", "AsExpected", ""},
			cond{"True", "RollingOut", "forms: 1 old replicas terminating"}, cond{"False", "RollingOut", ""}},
		{"stalled rollout", []workloadState{with(ready("forms", 2), func(w *workloadState) {
			w.Status.UpdatedReplicas = 1
			w.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "timed out"}}
		})}, observed{},
			cond{"False", "ProgressDeadlineExceeded", "forms: rollout stalled: timed out"}, cond{"True", "RollingOut", "forms: 1 of 2 replicas updated"}, cond{"True", "ProgressDeadlineExceeded", "forms: rollout stalled: timed out"},
			cond{"False", "Stalled", ""}, cond{"True", "ProgressDeadlineExceeded", "timed out"}},
		{"pods cannot be created", []workloadState{with(ready("health", 2), func(w *workloadState) {
			w.Status.AvailableReplicas = 0
			w.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Message: "quota exceeded"}}
		})}, observed{},
			cond{"False", "ReplicaFailure", "health: cannot create pods: quota exceeded"}, cond{"False", "RolloutComplete", ""}, cond{"True", "ReplicaFailure", "quota exceeded"},
			cond{"False", "Stalled", ""}, cond{"True", "ReplicaFailure", "quota exceeded"}},
		{"a Gateway refused the route", []workloadState{ready("forms", 2)},
			observed{Routes: []v1alpha1.RouteStatus{{Kind: "HTTPRoute", Name: "acme", Accepted: "False", Reason: "NotAccepted", Message: "Gateway public: NotAllowedByListeners: no listener allows this namespace"}}},
			cond{"False", "RouteNotAccepted", "NotAllowedByListeners"}, cond{"False", "RolloutComplete", ""}, cond{"True", "RouteNotAccepted", "HTTPRoute acme: Gateway public"},
			cond{"False", "Stalled", ""}, cond{"True", "RouteNotAccepted", "NotAllowedByListeners"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := &v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Name: "acme", Generation: 7}}
			st := buildStatus(fs, tc.workloads, tc.found)
			if st.ObservedGeneration != 7 {
				t.Errorf("observedGeneration = %d", st.ObservedGeneration)
			}
			for typ, want := range map[string]cond{v1alpha1.ConditionReady: tc.ready, v1alpha1.ConditionProgressing: tc.progress, v1alpha1.ConditionDegraded: tc.degraded,
				v1alpha1.ConditionReconciling: tc.reconciling, v1alpha1.ConditionStalled: tc.stalled} {
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c == nil || c.Status != want.status || c.Reason != want.reason || !strings.Contains(c.Message, want.msg) {
					t.Errorf("%s = %+v, want %+v", typ, c, want)
				}
			}
			if meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReconciling) && meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionStalled) {
				t.Error("Reconciling and Stalled are both True")
			}
		})
	}
}

func TestBuildStatus_KeepsTransitionTimeWhileTheStatusHolds(t *testing.T) {
	old := metav1.NewTime(metav1.Now().Add(-3600e9))
	fs := &v1alpha1.FormsService{Status: v1alpha1.FormsServiceStatus{Conditions: []metav1.Condition{
		{Type: v1alpha1.ConditionReady, Status: "False", Reason: "ServicesUnavailable", LastTransitionTime: old},
	}}}
	st := buildStatus(fs, []workloadState{deploymentState("forms", nil)}, observed{})
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); !c.LastTransitionTime.Equal(&old) {
		t.Errorf("transition time moved from %v to %v without a transition", old, c.LastTransitionTime)
	}
}

func TestHolds(t *testing.T) {
	live := map[string]any{
		"metadata": map[string]any{"name": "x", "uid": "1", "labels": map[string]any{"a": "1", "b": "2"},
			"ownerReferences": []any{map[string]any{"uid": "o2"}, map[string]any{"uid": "o1", "controller": true}}},
		"spec": map[string]any{"replicas": int64(2), "ports": []any{map[string]any{"port": int64(80), "protocol": "TCP"}}},
	}
	cases := []struct {
		name string
		want map[string]any
		ok   bool
	}{
		{"subset with server defaults ignored", map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}, true},
		{"different value", map[string]any{"spec": map[string]any{"replicas": int64(3)}}, false},
		{"missing field", map[string]any{"spec": map[string]any{"selector": map[string]any{}}}, false},
		{"list of another length", map[string]any{"spec": map[string]any{"ports": []any{}}}, false},
		{"owner references as a set", map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{"uid": "o1", "controller": true}}}}, true},
		{"owner reference missing", map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{"uid": "o3"}}}}, false},
		{"label changed by someone", map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "9"}}}, false},
	}
	for _, tc := range cases {
		if got := holds(live, tc.want); got != tc.ok {
			t.Errorf("%s: holds = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// The request server-side apply sends is the typed apply configuration's JSON: only the fields render
// sets. No status, no creationTimestamp: null, no zero values of fields never set; an empty object that
// is set (emptyDir {}) stays.
func TestToMap_OfARenderedDeployment_HoldsOnlyWhatRenderSets(t *testing.T) {
	fs := &v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", UID: "u1"}}
	d := render.Deployment(fs, render.Forms, render.Inputs{Image: "i"})
	d.Spec.Template.Spec.WithVolumes(corev1ac.Volume().WithName("e").WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	m, err := toMap(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["status"]; ok {
		t.Error("status is applied")
	}
	md := m["metadata"].(map[string]any)
	if _, ok := md["creationTimestamp"]; ok {
		t.Error("creationTimestamp is applied")
	}
	spec := m["spec"].(map[string]any)
	if _, ok := spec["paused"]; ok {
		t.Error("a field render never sets is applied")
	}
	vols := spec["template"].(map[string]any)["spec"].(map[string]any)["volumes"].([]any)
	last := vols[len(vols)-1].(map[string]any)
	if e, ok := last["emptyDir"].(map[string]any); !ok || len(e) != 0 {
		t.Errorf("an empty emptyDir is not applied as {}: %v", last)
	}
	again, _ := toMap(render.Deployment(fs, render.Forms, render.Inputs{Image: "i"}))
	d2, _ := toMap(render.Deployment(fs, render.Forms, render.Inputs{Image: "i"}))
	if digestOf(again) != digestOf(d2) || len(digestOf(d2)) != 16 {
		t.Error("the digest of the same object differs")
	}
}

func TestNewSigningKey_IsP256PKCS8WithItsRFC7638Thumbprint(t *testing.T) {
	pemBytes, kid, err := newSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("not PKCS#8 PEM: %q", pemBytes)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	ek := k.(*ecdsa.PrivateKey)
	want, err := (&jose.JSONWebKey{Key: &ek.PublicKey}).Thumbprint(cryptoSHA256)
	if err != nil {
		t.Fatal(err)
	}
	if kid != b64url(want) {
		t.Errorf("kid %q, go-jose's RFC 7638 thumbprint %q", kid, b64url(want))
	}
	other, _, _ := newSigningKey()
	if string(other) == string(pemBytes) {
		t.Error("two keys are the same")
	}
}

const cryptoSHA256 = crypto.SHA256

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func TestRateLimiter_BacksOffToFiveMinutesAtMost(t *testing.T) {
	rl := RateLimiter()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "n", Name: "a"}}
	if d := rl.When(req); d != time.Second {
		t.Errorf("first retry after %v, want 1s", d)
	}
	var last time.Duration
	for i := 0; i < 30; i++ {
		last = rl.When(req)
	}
	if last != 5*time.Minute {
		t.Errorf("after 30 failures the retry waits %v, want the 5m bound", last)
	}
	rl.Forget(req)
	if d := rl.When(req); d != time.Second {
		t.Errorf("after success the backoff restarts at %v, want 1s", d)
	}
}

// The highly available Redis serves with two pods of three: Ready stays True, and RedisHighAvailability
// says the set would not survive another loss. A single Redis has no such condition.
func TestBuildStatus_HighlyAvailableRedisServesWithTwoOfThree(t *testing.T) {
	forms := deploymentState("forms", &appsv1.Deployment{
		Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1},
	})
	redis := func(available int32) workloadState {
		w := statefulSetState(render.Redis, &appsv1.StatefulSet{
			Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
			Status: appsv1.StatefulSetStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: available},
		})
		w.MinAvailable = render.RedisHAMinAvailable
		return w
	}
	ha := &v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Name: "acme"}}
	ha.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{HighAvailability: true}
	for _, tc := range []struct {
		available     int32
		ready, haCond metav1.ConditionStatus
		haReason      string
	}{
		{3, metav1.ConditionTrue, metav1.ConditionTrue, "AllNodesAvailable"},
		{2, metav1.ConditionTrue, metav1.ConditionFalse, "NodesUnavailable"},
		{1, metav1.ConditionFalse, metav1.ConditionFalse, "NotServing"},
	} {
		st := buildStatus(ha, []workloadState{forms, redis(tc.available)}, observed{})
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != tc.ready {
			t.Errorf("%d of 3: Ready %+v, want %s", tc.available, c, tc.ready)
		}
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRedisHighAvailability); c == nil || c.Status != tc.haCond || c.Reason != tc.haReason {
			t.Errorf("%d of 3: RedisHighAvailability %+v, want %s/%s", tc.available, c, tc.haCond, tc.haReason)
		}
	}
	single := &v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Name: "acme"}}
	single.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionRedisHighAvailability, Status: metav1.ConditionTrue}}
	st := buildStatus(single, []workloadState{forms, statefulSetState(render.Redis, &appsv1.StatefulSet{
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)}, Status: appsv1.StatefulSetStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}})}, observed{})
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRedisHighAvailability); c != nil {
		t.Errorf("a single Redis reports %+v", c)
	}
}

// A retained managed Redis (D72) is reported, and leaves Ready, Degraded and the kstatus conditions as
// they would be without it; gone, its condition goes too.
func TestBuildStatus_ARetainedManagedRedisKeepsTheResourceReady(t *testing.T) {
	fs := &v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Name: "acme"}}
	fs.Spec.Redis.Addresses = []v1alpha1.HostPort{"redis.data.svc:6379"}
	var workloads []workloadState
	for _, c := range render.Components {
		workloads = append(workloads, deploymentState(c, &appsv1.Deployment{
			Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
			Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1},
		}))
	}
	st := buildStatus(fs, workloads, observed{RetainedRedis: "the managed Redis of before keeps running"})
	want := map[string]string{
		v1alpha1.ConditionReady: "True/Available", v1alpha1.ConditionDegraded: "False/AsExpected",
		v1alpha1.ConditionStalled: "False/AsExpected", v1alpha1.ConditionReconciling: "False/ReconciliationSucceeded",
		v1alpha1.ConditionManagedRedisRetained: "True/ExternalRedisInUse",
	}
	for typ, w := range want {
		if c := meta.FindStatusCondition(st.Conditions, typ); c == nil || string(c.Status)+"/"+c.Reason != w {
			t.Errorf("%s = %+v, want %s", typ, c, w)
		}
	}
	fs.Status = st
	st = buildStatus(fs, workloads, observed{})
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionManagedRedisRetained); c != nil {
		t.Errorf("ManagedRedisRetained after the store went: %+v", c)
	}
}

// What the team's updatePolicy says of an upgrade, at a time: approval first (which image), then the
// windows (when).
func TestHeldByTeam_ApprovalSaysWhichImageAndTheWindowWhen(t *testing.T) {
	const next = "registry.example/formsservice:next"
	sat := time.Date(2026, 12, 5, 2, 0, 0, 0, time.UTC) // a Saturday, 02:00 UTC
	fsWith := func(mode string, approved string, windows ...v1alpha1.MaintenanceWindow) *v1alpha1.FormsService {
		fs := &v1alpha1.FormsService{}
		fs.Spec.UpdatePolicy = &v1alpha1.UpdatePolicy{Mode: mode, MaintenanceWindows: windows}
		if approved != "" {
			metav1.SetMetaDataAnnotation(&fs.ObjectMeta, v1alpha1.ApproveUpgradeAnnotation, approved)
		}
		return fs
	}
	for _, c := range []struct {
		name   string
		fs     *v1alpha1.FormsService
		now    time.Time
		reason string
	}{
		{"automatic, no window", fsWith(v1alpha1.UpdateModeAutomatic, ""), sat, ""},
		{"automatic, in its window", fsWith("", "", "Sat:01:00-05:00"), sat, ""},
		{"automatic, outside its window", fsWith("", "", "Sat:01:00-05:00"), sat.Add(3 * time.Hour), ReasonUpgradeAwaitsWindow},
		{"manual, not approved, in its window", fsWith(v1alpha1.UpdateModeManual, "", "Sat:01:00-05:00"), sat, ReasonUpgradeAwaitsApproval},
		{"manual, another image approved", fsWith(v1alpha1.UpdateModeManual, "registry.example/formsservice:old"), sat, ReasonUpgradeAwaitsApproval},
		{"manual, approved, outside its window", fsWith(v1alpha1.UpdateModeManual, next, "Sun:01:00-05:00"), sat, ReasonUpgradeAwaitsWindow},
		{"manual, approved, in its window", fsWith(v1alpha1.UpdateModeManual, next, "Sun:01:00-05:00", "01:30-02:30"), sat, ""},
	} {
		why, reason := heldByTeam(c.fs, next, c.now)
		if reason != c.reason {
			t.Errorf("%s: reason %q (%s), want %q", c.name, reason, why, c.reason)
		}
		if reason == ReasonUpgradeAwaitsWindow && !strings.Contains(why, "the next opens at 2026-12-") {
			t.Errorf("%s: %q names no next opening", c.name, why)
		}
	}
	if why, reason := heldByTeam(&v1alpha1.FormsService{}, next, sat); why != "" || reason != "" {
		t.Errorf("no updatePolicy held the upgrade: %s", why)
	}
}
