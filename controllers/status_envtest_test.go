package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// setDeploymentStatus plays the Deployment controller, which envtest does not run.
func setDeploymentStatus(t *testing.T, ns, name string, updated, available int32, conds ...appsv1.DeploymentCondition) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	updateStatusOf(t, d, func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           max(updated, available),
			UpdatedReplicas:    updated,
			ReadyReplicas:      available,
			AvailableReplicas:  available,
			Conditions:         conds,
		}
	})
}

func setStatefulSetReady(t *testing.T, ns, name string) {
	t.Helper()
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	updateStatusOf(t, s, func(s *appsv1.StatefulSet) {
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1, CurrentReplicas: 1}
	})
}

// waitCondition waits until the FormsService's condition has the status and reason, and its message
// holds every given fragment.
func waitCondition(t *testing.T, fs *v1alpha1.FormsService, typ string, status metav1.ConditionStatus, reason string, fragments ...string) {
	t.Helper()
	eventually(t, func() error {
		var cur v1alpha1.FormsService
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fs), &cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, typ)
		if c == nil {
			return fmt.Errorf("no %s condition", typ)
		}
		if c.Status != status || c.Reason != reason {
			return fmt.Errorf("%s = %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
		}
		for _, f := range fragments {
			if !strings.Contains(c.Message, f) {
				return fmt.Errorf("%s message %q lacks %q", typ, c.Message, f)
			}
		}
		if cur.Status.ObservedGeneration != cur.Generation || c.ObservedGeneration != cur.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", cur.Status.ObservedGeneration, cur.Generation)
		}
		return nil
	})
}

func TestStatus_FollowsSecretsAndDeploymentStatus(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.Redis = v1alpha1.RedisSpec{
		Addresses:         []v1alpha1.HostPort{"redis.data.svc:6379"},
		PasswordSecretRef: &v1alpha1.SecretKeySelector{Name: "redis-auth", Key: "password"},
	}
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}

	// A missing Redis password Secret: Degraded, not Ready, and nothing rolled out that would hang.
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "RedisPasswordSecretMissing",
		`Secret "redis-auth" named by spec.redis.passwordSecretRef does not exist`)
	waitCondition(t, fs, v1alpha1.ConditionReady, metav1.ConditionFalse, "RedisPasswordSecretMissing")
	waitCondition(t, fs, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RolloutBlocked", `Secret "redis-auth"`)
	if err := k8s.Get(ctx, key(ns, "acme-forms"), &appsv1.Deployment{}); err == nil {
		t.Error("a Deployment was created although the Secret its pods mount is missing")
	}
	eventually(t, func() error { return hasEvent(ns, "acme", "RedisPasswordSecretMissing", "redis-auth") })

	// The Secret appears (the operator looks again for a missing Secret): the pods roll out.
	if err := k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "redis-auth", Namespace: ns},
		Data:       map[string][]byte{"password": []byte("s3cret")},
	}); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	waitCondition(t, fs, v1alpha1.ConditionReady, metav1.ConditionFalse, "ServicesUnavailable",
		"forms: 0 of 2 replicas available", "auth: 0 of 3 replicas available")
	if err := k8s.Get(ctx, key(ns, "acme-redis"), &appsv1.StatefulSet{}); err == nil {
		t.Error("a managed Redis runs although spec.redis names an external one")
	}

	// The Deployments become available.
	setDeploymentStatus(t, ns, "acme-forms", 2, 2)
	setDeploymentStatus(t, ns, "acme-auth", 3, 3)
	setDeploymentStatus(t, ns, "acme-health", 2, 2)
	waitCondition(t, fs, v1alpha1.ConditionReady, metav1.ConditionTrue, "Available")
	waitCondition(t, fs, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "RolloutComplete")
	eventually(t, func() error { return hasEvent(ns, "acme", "Available", "Ready=True") })

	// A rollout under way.
	setDeploymentStatus(t, ns, "acme-forms", 1, 2)
	waitCondition(t, fs, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RollingOut", "forms: 1 of 2 replicas updated")
	waitCondition(t, fs, v1alpha1.ConditionReady, metav1.ConditionTrue, "Available")

	// A replica down.
	setDeploymentStatus(t, ns, "acme-auth", 3, 2)
	waitCondition(t, fs, v1alpha1.ConditionReady, metav1.ConditionFalse, "ServicesUnavailable", "auth: 2 of 3 replicas available")

	// A rollout the Deployment controller gave up on.
	setDeploymentStatus(t, ns, "acme-forms", 1, 2, appsv1.DeploymentCondition{
		Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
		Message: `ReplicaSet "acme-forms-abc" has timed out progressing.`,
	})
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "ProgressDeadlineExceeded", "forms: rollout stalled")
	waitCondition(t, fs, v1alpha1.ConditionReady, metav1.ConditionFalse, "ProgressDeadlineExceeded", "forms: rollout stalled")
	waitCondition(t, fs, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RollingOut", "forms: 1 of 2 replicas updated")

	// The Secret loses its key.
	var sec corev1.Secret
	if err := k8s.Get(ctx, key(ns, "redis-auth"), &sec); err != nil {
		t.Fatal(err)
	}
	sec.Data = map[string][]byte{"other": []byte("x")}
	if err := k8s.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "SecretKeyMissing", `has no key "password"`)
	waitCondition(t, fs, v1alpha1.ConditionReady, metav1.ConditionFalse, "SecretKeyMissing", `has no key "password"`)
	waitCondition(t, fs, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RolloutBlocked", `has no key "password"`)
}

func TestReconcile_UnchangedResourceWritesNothing(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	for _, c := range render.Components {
		n := map[string]int32{render.Forms: 2, render.Auth: 3, render.Health: 2}[c]
		setDeploymentStatus(t, ns, "acme-"+c, n, n)
	}
	setStatefulSetReady(t, ns, "acme-redis")
	waitCondition(t, fs, v1alpha1.ConditionReady, metav1.ConditionTrue, "Available")
	checkPrinterColumns(t, ns, []string{"Name", "Ready", "Origins", "Clients", "Age"}, []any{"acme", "True", float64(2), float64(1)})
	waitQuiet(t)

	// Reconcile the unchanged resource several times, directly and through the watch (an annotation
	// that means nothing to the operator), and count every write the operator sends.
	opWrites.Reset()
	eventsAt := recorded.mark()
	for i := 0; i < 3; i++ {
		if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}); err != nil {
			t.Fatal(err)
		}
	}
	// (Added beside the operator's own annotation, the signing key's record: removing that one is a
	// change the operator answers by writing it again.)
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Annotations["example.com/touched"] = "yes" })
	waitReconciled(t, fs) // the reconcile the watch brought, at the annotated version, has finished
	if w := withoutEvents(opWrites.Writes()); len(w) != 0 {
		t.Fatalf("reconciling an unchanged resource wrote %d times: %v", len(w), w)
	}
	if e := recorded.since(eventsAt, ns); len(e) != 0 {
		t.Fatalf("reconciling an unchanged resource recorded Events %v", e)
	}

	// The counter does count: a real change produces writes (the ConfigMap, the status).
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.AllowedOrigins = append(fs.Spec.AllowedOrigins, "https://new.example.org")
	})
	eventually(t, func() error {
		for _, w := range opWrites.Writes() {
			if strings.HasPrefix(w, "PATCH") && strings.HasSuffix(w, "/configmaps/acme-config") {
				return nil
			}
		}
		return fmt.Errorf("no ConfigMap write among %v", opWrites.Writes())
	})
}

// Someone edits an object the operator owns: the watch brings the FormsService back and the reconcile
// restores the desired content (the live object no longer holds it).
func TestReconcile_RestoresAnOwnedObjectEditedByHand(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	createAndWait(t, sampleFS(ns))

	d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-forms"}}
	updateObject(t, &d, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "attacker.example/forms:evil"
		d.Spec.Template.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr.To(false)
	})
	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-config"}}
	updateObject(t, &cm, func(cm *corev1.ConfigMap) {
		cm.Data["forms.yaml"] = "allowedOrigins: [\"https://evil.example\"]\n"
	})
	eventually(t, func() error {
		if err := k8s.Get(ctx, key(ns, "acme-forms"), &d); err != nil {
			return err
		}
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != testImage || !ptr.Deref(c.SecurityContext.ReadOnlyRootFilesystem, false) {
			return fmt.Errorf("deployment still edited: %s", c.Image)
		}
		if err := k8s.Get(ctx, key(ns, "acme-config"), &cm); err != nil {
			return err
		}
		if strings.Contains(cm.Data["forms.yaml"], "evil") {
			return fmt.Errorf("configmap still edited")
		}
		return nil
	})
}

// checkPrinterColumns asks the API server for the table kubectl prints (`kubectl get formsservices`).
func checkPrinterColumns(t *testing.T, ns string, wantColumns []string, wantCells []any) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(cluster.Config.Host, "/")+"/apis/platform.formsservice.io/v1alpha1/namespaces/"+ns+"/formsservices", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("%v: %d %.300s", err, res.StatusCode, body)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	if fmt.Sprint(cols) != fmt.Sprint(wantColumns) {
		t.Errorf("kubectl get columns %v, want %v", cols, wantColumns)
	}
	if len(table.Rows) != 1 || fmt.Sprint(table.Rows[0].Cells[:len(wantCells)]) != fmt.Sprint(wantCells) {
		t.Errorf("kubectl get row %v, want %v", table.Rows, wantCells)
	}
}

// An operator upgrade past D32 must not switch a managed store that Redis 7.4 wrote to Valkey, which
// cannot read its files: a StatefulSet that runs the legacy image keeps it (here set as the operator
// before D32 left it), while the rest of the StatefulSet is still the operator's.
func TestReconcile_AStoreOnTheLegacyRedisKeepsItsImage(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	createAndWait(t, sampleFS(ns))
	s := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}}
	// The hand edit can meet a reconcile already under way, which read the StatefulSet before it and
	// applies the image it rendered then over it (a CI run met it once): the edit is made again then.
	// An operator that switched a legacy store it had read would fail every attempt.
	var switched error
	for attempt := 1; attempt <= 3; attempt++ {
		updateObject(t, &s, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Image = render.LegacyRedisImage
			s.Spec.Template.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr.To(false)
		})
		eventually(t, func() error {
			if err := k8s.Get(ctx, key(ns, "acme-redis"), &s); err != nil {
				return err
			}
			if !ptr.Deref(s.Spec.Template.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem, false) {
				return fmt.Errorf("the edited security context was not restored yet")
			}
			return nil
		})
		if c := s.Spec.Template.Spec.Containers[0]; c.Image != render.LegacyRedisImage {
			switched = fmt.Errorf("attempt %d: the legacy store was switched to %s", attempt, c.Image)
			t.Log(switched)
			continue
		}
		// And it stays: another reconcile (a change of the FormsService) keeps the legacy image.
		fs := &v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme"}}
		updateFS(t, fs, func(fs *v1alpha1.FormsService) {
			if fs.Annotations == nil {
				fs.Annotations = map[string]string{}
			}
			fs.Annotations["example.com/touched"] = strconv.Itoa(attempt)
		})
		waitReconciled(t, fs)
		if err := k8s.Get(ctx, key(ns, "acme-redis"), &s); err != nil {
			t.Fatal(err)
		}
		if c := s.Spec.Template.Spec.Containers[0]; c.Image != render.LegacyRedisImage {
			t.Fatalf("a reconcile after the operator saw the legacy store switched it to %s", c.Image)
		}
		return
	}
	t.Fatal(switched)
}
