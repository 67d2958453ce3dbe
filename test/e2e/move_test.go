//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/test/internal/cluster"
)

// ownRedis is the Redis a platform team runs itself, the target of the move.
const ownRedis = "own-redis"

// moveToOwnRedis is issue 26's move from the managed Redis to your own, as docs/operator.md ("Moving
// from the managed Redis to your own") gives it: a backup of the managed store (requested with the
// annotation, to the bucket of the backup phase), restored by a one-off pod of the services' image into
// a Redis the team runs (a plain Deployment here), then the FormsService pointed at it
// (spec.redis.addresses). Every submission acknowledged before the backup is found through the moved
// platform, and a grant from before the move still refreshes; the managed Redis, kept until then
// (D72), is removed once the annotation acknowledges it. The way back is the same steps the
// other way; its restore into a new managed store is the backup phase's.
func (d *dayTwo) moveToOwnRedis(t *testing.T) {
	if os.Getenv("FORMSSERVICE_E2E_S3_IMAGE") == "" || os.Getenv("FORMSSERVICE_E2E_NEXT_IMAGE") == "" {
		t.Skip("FORMSSERVICE_E2E_S3_IMAGE is not set: the move goes through the backup phase's S3 server, which only hack/node-cluster/e2e.sh runs")
	}
	ctx := context.Background()
	start := time.Now()
	k := d.k

	// The team's own Redis: the image the managed one runs, append-only and fsynced before each answer
	// (whatever durability the FormsService asks of it), on an emptyDir, as restricted as the managed pod.
	// Without a password Redis's protected mode would refuse every client from another pod.
	managed := &appsv1.StatefulSet{}
	if err := k.client.Get(ctx, clientKey(d.name+"-redis"), managed); err != nil {
		t.Fatalf("the managed Redis's StatefulSet: %v", err)
	}
	var redisContainer corev1.Container
	for _, c := range managed.Spec.Template.Spec.Containers {
		if c.Name == render.Redis {
			redisContainer = c
		}
	}
	k.runOnePod(t, appNS, ownRedis, "redis", 6379, corev1.PodSpec{
		SecurityContext: managed.Spec.Template.Spec.SecurityContext,
		Containers: []corev1.Container{{
			Name:            "redis",
			Image:           redisContainer.Image,
			ImagePullPolicy: redisContainer.ImagePullPolicy,
			Command: []string{"sh", "-c", `exec "$(command -v valkey-server || command -v redis-server)" ` +
				`--port 6379 --protected-mode no --dir /data --appendonly yes --appendfsync always --save ''`},
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 2, ProbeHandler: corev1.ProbeHandler{
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6379)}}},
			SecurityContext: redisContainer.SecurityContext,
			VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	})

	// What must move: submissions acknowledged before the backup, and a signed-in user's grant.
	formsURL := "http://" + k.clusterIP(t, d.name+"-"+render.Forms)
	hc := freshClient()
	var submitted []string
	for n := range 5 {
		addr := fmt.Sprintf("move-%d@acme.example", n)
		req, _ := http.NewRequest(http.MethodPost, formsURL+"/waitlist", strings.NewReader(`{"email":"`+addr+`","consent":true}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", e2eOrigin)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatalf("waitlist %s: %v", addr, err)
		}
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("waitlist %s: %d %s", addr, res.StatusCode, b)
		}
		submitted = append(submitted, addr)
	}
	grant := goSignIn(t, d.client(), d.issuer, e2eClient, d.redirect, email, password)

	// 1. The backup of the managed store.
	last := k.requestBackup(t, d.name, "move-"+time.Now().UTC().Format("20060102T150405Z"))
	object, _ := last["object"].(string)
	if object == "" {
		t.Fatalf("status.backup.lastSuccessful = %v: no object", last)
	}

	// 2. The restore into the own Redis: a one-off pod of the services' image, as restricted as theirs,
	// with the store named by REDIS_URL and the bucket's keys from the backup's Secret.
	forms := &appsv1.Deployment{}
	if err := k.client.Get(ctx, clientKey(d.name+"-"+render.Forms), forms); err != nil {
		t.Fatal(err)
	}
	fc := forms.Spec.Template.Spec.Containers[0]
	restorePod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "move-restore"},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext:              forms.Spec.Template.Spec.SecurityContext,
			Containers: []corev1.Container{{
				Name:            "restore",
				Image:           fc.Image,
				ImagePullPolicy: fc.ImagePullPolicy,
				// A move keeps the sessions and grants (D68): the store is the same one, moved.
				Args: []string{"restore", "--insecure", "--keep-sessions", "--from", "s3://" + s3Bucket + "/" + object},
				Env: []corev1.EnvVar{
					{Name: "REDIS_URL", Value: fmt.Sprintf("redis://%s.%s.svc:6379/0", ownRedis, appNS)},
					{Name: "AWS_ENDPOINT_URL_S3", Value: fmt.Sprintf("http://%s.%s.svc:%d", s3Name, s3NS, s3Port)},
					{Name: "AWS_REGION", Value: "us-east-1"},
				},
				EnvFrom:                  []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s3Creds}}}},
				SecurityContext:          fc.SecurityContext,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				VolumeMounts:             []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
			}},
			Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	if err := k.client.Create(ctx, restorePod); err != nil {
		t.Fatalf("the restore pod: %v", err)
	}
	cluster.Eventually(t, 3*time.Minute, "the restore into the own Redis finished", func() (bool, string) {
		if err := k.client.Get(ctx, client.ObjectKeyFromObject(restorePod), restorePod); err != nil {
			return false, err.Error()
		}
		switch restorePod.Status.Phase {
		case corev1.PodSucceeded:
			return true, ""
		case corev1.PodFailed:
			msg := ""
			for _, s := range restorePod.Status.ContainerStatuses {
				if s.State.Terminated != nil {
					msg = s.State.Terminated.Message
				}
			}
			t.Fatalf("the restore pod failed: %s", msg)
		}
		return false, string(restorePod.Status.Phase)
	})

	// 3. The FormsService pointed at the own Redis: the store is a start-up setting, so forms and auth
	// roll onto it (their Deployments' generation moves on; waiting for the roll alone could see the
	// old, finished one).
	generations := map[string]int64{}
	for _, c := range []string{render.Forms, render.Auth} {
		dep := &appsv1.Deployment{}
		if err := k.client.Get(ctx, clientKey(d.name+"-"+c), dep); err != nil {
			t.Fatal(err)
		}
		generations[c] = dep.Generation
	}
	movedAt := time.Now()
	k.update(t, d.name, "pointing spec.redis at the own Redis", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, map[string]any{
			"addresses": []any{fmt.Sprintf("%s.%s.svc:6379", ownRedis, appNS)},
		}, "spec", "redis")
	})
	cluster.Eventually(t, 2*time.Minute, "forms and auth rolling onto the own Redis", func() (bool, string) {
		var state []string
		for c, before := range generations {
			dep := &appsv1.Deployment{}
			if err := k.client.Get(ctx, clientKey(d.name+"-"+c), dep); err != nil {
				return false, err.Error()
			}
			if dep.Generation == before {
				state = append(state, c+" not changed yet")
			}
		}
		return len(state) == 0, strings.Join(state, ", ")
	})
	k.waitRolledOut(t, d.name, []string{render.Forms, render.Auth, render.Health}, 4*time.Minute)
	k.waitReady(t, d.name, 3*time.Minute)
	t.Logf("moved to %s: backup %s, restored by a pod, services rolled and Ready in %s", ownRedis, object, time.Since(movedAt).Round(time.Second))

	// Everything from before the move is there.
	exported := k.execInComponent(t, d.name, render.Forms,
		[]string{"/formsservice", "export", "waitlist", "--format", "jsonl", "-config", render.ConfigPath}, "")
	lost := 0
	for _, addr := range submitted {
		if !strings.Contains(exported, `"`+addr+`"`) {
			lost++
			t.Errorf("%s was acknowledged before the move's backup but is not in the own Redis", addr)
		}
	}
	authURL := "http://" + k.clusterIP(t, d.name+"-"+render.Auth)
	var status int
	var body string
	cluster.Eventually(t, time.Minute, "the grant from before the move refreshed", func() (bool, string) {
		status, body = refreshOnce(freshClient(), authURL, grant.RefreshToken)
		return status != 0, body
	})
	if status != http.StatusOK {
		t.Errorf("refresh of a grant from before the move: %d %s", status, body)
	}
	t.Logf("after the move: %d of %d submissions found (%d lost), the grant refreshed (%d); whole phase %s",
		len(submitted)-lost, len(submitted), lost, status, time.Since(start).Round(time.Second))

	// 4. The managed Redis is kept, unused, after the move (D72), until its removal is acknowledged by
	// its StatefulSet's UID: then it goes; its claim stays.
	if err := k.client.Get(ctx, clientKey(d.name+"-redis"), managed); err != nil {
		t.Fatalf("the managed Redis's StatefulSet after the move (kept until the removal is acknowledged): %v", err)
	}
	cluster.Eventually(t, time.Minute, "ManagedRedisRetained reported", func() (bool, string) {
		return conditionTrue(k.get(t, d.name), v1alpha1.ConditionManagedRedisRetained), "not True yet"
	})
	k.update(t, d.name, "acknowledging the managed Redis's removal", func(u *unstructured.Unstructured) {
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[v1alpha1.RemoveManagedRedisAnnotation] = string(managed.UID)
		u.SetAnnotations(ann)
	})
	cluster.Eventually(t, 2*time.Minute, "the managed Redis removed", func() (bool, string) {
		err := k.client.Get(ctx, clientKey(d.name+"-redis"), &appsv1.StatefulSet{})
		u := k.get(t, d.name)
		return apierrors.IsNotFound(err) && !conditionTrue(u, v1alpha1.ConditionManagedRedisRetained),
			fmt.Sprintf("StatefulSet: %v; ManagedRedisRetained %v", err, conditionTrue(u, v1alpha1.ConditionManagedRedisRetained))
	})
	if err := k.client.Get(ctx, clientKey("data-"+d.name+"-redis-0"), &corev1.PersistentVolumeClaim{}); err != nil {
		t.Errorf("the managed Redis's claim after its removal (it is kept): %v", err)
	}

	// The other steps reach the new pods.
	d.forms = k.portForward(d.main, d.name, render.Forms)
	d.followAuth()
	waitIssuerVia(t, d.client(), d.issuer, d.issuer, 2*time.Minute)
}
