//go:build e2e

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/oauth2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/test/internal/cluster"
)

// The S3 server of the backup phase: versitygw (the server internal/tests3 runs as a process), in a
// namespace of its own that enforces the restricted Pod Security Standard.
const (
	s3NS        = "s3"
	s3Name      = "versitygw"
	s3Port      = 7070
	s3Bucket    = "backups"
	s3AccessKey = "formsservice-e2e"
	s3SecretKey = "formsservice-e2e-secret-key"
	s3Creds     = "backup-s3" // the FormsService's credentialsSecretRef, in the app's namespace
)

// acked is one submission the forms service answered 201, and when the answer arrived.
type acked struct {
	form, email string
	at          time.Time
}

// backupRestore is issue 26's proof of the data's lifecycle: a backup requested (annotation) while forms
// submissions keep coming and a user is signed in; the FormsService and its Redis volume deleted; a new
// FormsService of the same name created with spec.restoreFrom naming the backup. Every submission
// acknowledged before the backup started must be in the new store (docs/operator.md promises those; a
// later one may or may not be), and the signed-in user's refresh tokens, from before the backup, must
// still refresh against the restored platform. The signing key is kept across, as a platform team that
// moves a FormsService keeps it (bring your own key): refresh tokens are HMACs under a secret derived
// from it.
func (d *dayTwo) backupRestore(t *testing.T) {
	image := os.Getenv("FORMSSERVICE_E2E_S3_IMAGE")
	if image == "" || os.Getenv("FORMSSERVICE_E2E_NEXT_IMAGE") == "" {
		t.Skip("FORMSSERVICE_E2E_S3_IMAGE is not set: only hack/node-cluster/e2e.sh loads the S3 server's image and routes the Service network to the host")
	}
	ctx := context.Background()
	start := time.Now()
	k := d.k

	// The bucket: versitygw in its own namespace, a bucket made through the S3 API at its ClusterIP.
	s3 := k.startVersityGW(t, image)
	endpoint := fmt.Sprintf("http://%s.%s.svc:%d", s3Name, s3NS, s3Port)
	mc, err := minio.New(s3, &minio.Options{Creds: credentials.NewStaticV4(s3AccessKey, s3SecretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, time.Minute, "bucket "+s3Bucket+" created", func() (bool, string) {
		err := mc.MakeBucket(ctx, s3Bucket, minio.MakeBucketOptions{Region: "us-east-1"})
		return err == nil, fmt.Sprint(err)
	})
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: s3Creds},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3AccessKey, "AWS_SECRET_ACCESS_KEY": s3SecretKey}}
	if err := k.client.Create(ctx, creds); err != nil {
		t.Fatal(err)
	}
	s3Location := map[string]any{"endpoint": endpoint, "bucket": s3Bucket, "region": "us-east-1",
		"credentialsSecretRef": map[string]any{"name": s3Creds}}
	k.update(t, d.name, "setting spec.backup", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, map[string]any{"s3": s3Location}, "spec", "backup")
	})
	t.Logf("S3 server %s (versitygw, bucket %s) running after %s", endpoint, s3Bucket, time.Since(start).Round(time.Second))

	// A signed-in user: two grants, whose refresh tokens are not used until the restored platform runs
	// (a refresh rotates the token; the one to check is the one the backup holds).
	grants := []*oauth2.Token{
		goSignIn(t, d.client(), d.issuer, e2eClient, d.redirect, email, password),
		goSignIn(t, d.client(), d.issuer, e2eClient, d.redirect, email, password),
	}
	for i, g := range grants {
		if g.RefreshToken == "" {
			t.Fatalf("grant %d has no refresh token (scope offline_access)", i)
		}
	}

	// Forms traffic through the forms Service: a waitlist entry or a contact message every 1.5 s (under
	// the sample's 60 a minute), each 201 recorded with the time its answer arrived.
	formsURL := "http://" + k.clusterIP(t, d.name+"-"+render.Forms)
	var mu sync.Mutex
	var acks []acked
	others := map[string]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		hc := freshClient()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(1500 * time.Millisecond): // the traffic's pace, not a wait for a condition
			}
			form, addr := "waitlist", fmt.Sprintf("backup-%d@acme.example", n)
			body := `{"email":"` + addr + `","consent":true}`
			if n%2 == 1 {
				form = "contact"
				body = `{"name":"Ada Lovelace","email":"` + addr + `","topic":"support","message":"Backed up while the engine weaves."}`
			}
			req, _ := http.NewRequest(http.MethodPost, formsURL+"/"+form, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", e2eOrigin)
			res, err := hc.Do(req)
			mu.Lock()
			switch {
			case err != nil:
				others[form+" "+err.Error()]++
			case res.StatusCode == http.StatusCreated:
				acks = append(acks, acked{form: form, email: addr, at: time.Now()})
			default:
				others[fmt.Sprintf("%s %d", form, res.StatusCode)]++
			}
			mu.Unlock()
			if err == nil {
				res.Body.Close()
			}
		}
	})
	stopped := false
	stopTraffic := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopTraffic()
	cluster.Eventually(t, time.Minute, "submissions acknowledged before the backup", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(acks) >= 6, fmt.Sprintf("%d acknowledged, others %v", len(acks), others)
	})

	// The backup, requested under traffic.
	requestedAt := time.Now()
	last := k.requestBackup(t, d.name, "e2e-"+time.Now().UTC().Format("20060102T150405Z"))
	backedUpAt := time.Now()
	object, _ := last["object"].(string)
	started, err := time.Parse(time.RFC3339, fmt.Sprint(last["startTime"]))
	if err != nil || object == "" {
		t.Fatalf("status.backup.lastSuccessful = %v: want an object and a startTime", last)
	}
	stopTraffic()
	info, err := mc.StatObject(ctx, s3Bucket, object, minio.StatObjectOptions{})
	if err != nil {
		t.Fatalf("the backup %s is not in the bucket: %v", object, err)
	}
	// Promised: every submission whose 201 arrived before the backup's Job started (startTime is cut to
	// the second, so "before" it is before the backup began reading). The rest may or may not be in it.
	var promised, later []acked
	for _, a := range acks {
		if a.at.Before(started) {
			promised = append(promised, a)
		} else {
			later = append(later, a)
		}
	}
	t.Logf("backup %s: %d bytes, requested to succeeded in %s; %d submissions acknowledged before its Job started (%s), %d during or after; other answers %v",
		object, info.Size, backedUpAt.Sub(requestedAt).Round(time.Second), len(promised), started.Format(time.RFC3339), len(later), others)
	// Six were acknowledged before the request; the Job's startTime, cut to the second, may leave out
	// those of the last second before it.
	if len(promised) < 3 {
		t.Fatalf("only %d submissions acknowledged before the backup started: the test did not load it", len(promised))
	}

	// The platform and its volume go: the FormsService (its owned objects with it) and the managed Redis's
	// claim. The signing-key Secret is not the FormsService's (spec.auth.signingKeyRetention: Retain, the
	// default, D53): it stays, so that the restored platform signs with the same key.
	key := &corev1.Secret{}
	if err := k.client.Get(ctx, clientKey(d.name+"-signing-key"), key); err != nil {
		t.Fatalf("the signing-key Secret: %v", err)
	}
	old := k.get(t, d.name)
	deletedAt := time.Now()
	if err := k.client.Delete(ctx, old); err != nil {
		t.Fatalf("deleting the FormsService: %v", err)
	}
	claim := "data-" + d.name + "-redis-0"
	cluster.Eventually(t, 3*time.Minute, "the FormsService and its pods gone", func() (bool, string) {
		pods, err := k.clientset.CoreV1().Pods(appNS).List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(map[string]string{render.LabelInstance: d.name}).String()})
		if err != nil {
			return false, err.Error()
		}
		fsErr := k.client.Get(ctx, clientKey(d.name), old.DeepCopy())
		return apierrors.IsNotFound(fsErr) && len(pods.Items) == 0, fmt.Sprintf("FormsService: %v; %d pods", fsErr, len(pods.Items))
	})
	stillKey := &corev1.Secret{}
	if err := k.client.Get(ctx, clientKey(key.Name), stillKey); err != nil {
		t.Fatalf("the signing-key Secret did not outlive its FormsService: %v", err)
	}
	if !reflect.DeepEqual(stillKey.Data, key.Data) || len(stillKey.OwnerReferences) != 0 {
		t.Fatalf("the kept signing-key Secret changed: owners %v", stillKey.OwnerReferences)
	}
	pvc, err := k.clientset.CoreV1().PersistentVolumeClaims(appNS).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the managed Redis's claim %s: %v", claim, err)
	}
	oldVolume := pvc.Spec.VolumeName
	if err := k.clientset.CoreV1().PersistentVolumeClaims(appNS).Delete(ctx, claim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 2*time.Minute, "claim "+claim+" deleted", func() (bool, string) {
		_, err := k.clientset.CoreV1().PersistentVolumeClaims(appNS).Get(ctx, claim, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	t.Logf("FormsService %s and claim %s (volume %s) deleted in %s", d.name, claim, oldVolume, time.Since(deletedAt).Round(time.Second))

	// The new platform: the FormsService with the old one's spec and restoreFrom naming the backup; it
	// takes the kept signing key. A disaster recovery keeps the backup's sessions and grants
	// (keepSessions): by default a restore signs every account out (D68), and the grants below would
	// rightly be refused.
	restored := &unstructured.Unstructured{}
	restored.SetGroupVersionKind(formsServiceGVK)
	restored.SetNamespace(appNS)
	restored.SetName(d.name)
	restored.SetLabels(old.GetLabels())
	spec, _, _ := unstructured.NestedMap(old.Object, "spec")
	spec["restoreFrom"] = map[string]any{"s3": s3Location, "object": object, "keepSessions": true}
	restored.Object["spec"] = spec
	createdAt := time.Now()
	if err := k.client.Create(ctx, restored); err != nil {
		t.Fatalf("creating the FormsService with spec.restoreFrom: %v", err)
	}
	k.waitReady(t, d.name, 6*time.Minute)
	u := k.get(t, d.name)
	if !conditionTrue(u, v1alpha1.ConditionRestored) {
		t.Fatalf("Ready without Restored=True: %v", u.Object["status"])
	}
	pvc, err = k.clientset.CoreV1().PersistentVolumeClaims(appNS).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Spec.VolumeName == oldVolume {
		t.Errorf("the new Redis got the old volume %s back: the restore proves nothing", oldVolume)
	}
	k.waitRolledOut(t, d.name, []string{render.Forms, render.Auth, render.Health}, 3*time.Minute)
	t.Logf("restored from %s into a new FormsService (volume %s) Ready in %s", object, pvc.Spec.VolumeName, time.Since(createdAt).Round(time.Second))

	// Every promised submission is in the new store.
	found := map[string]string{}
	for _, form := range []string{"waitlist", "contact"} {
		found[form] = k.execInComponent(t, d.name, render.Forms,
			[]string{"/formsservice", "export", form, "--format", "jsonl", "-config", render.ConfigPath}, "")
	}
	lost := 0
	for _, a := range promised {
		if !strings.Contains(found[a.form], `"`+a.email+`"`) {
			lost++
			t.Errorf("%s %s was acknowledged at %s, before the backup started, but is not in the restored store",
				a.form, a.email, a.at.UTC().Format(time.RFC3339Nano))
		}
	}
	laterFound := 0
	for _, a := range later {
		if strings.Contains(found[a.form], `"`+a.email+`"`) {
			laterFound++
		}
	}

	// Every grant refreshes against the restored platform, with the refresh token the backup holds.
	authURL := "http://" + k.clusterIP(t, d.name+"-"+render.Auth)
	hc := freshClient()
	for i, g := range grants {
		var status int
		var body string
		cluster.Eventually(t, time.Minute, fmt.Sprintf("grant %d refreshed on the restored platform", i), func() (bool, string) {
			status, body = refreshOnce(hc, authURL, g.RefreshToken)
			// Only a refused connection (the Service's endpoints settling) is tried again: an answer counts.
			return status != 0, body
		})
		if status != http.StatusOK {
			t.Errorf("grant %d: refresh with its token from before the backup answered %d %s", i, status, body)
		}
	}
	t.Logf("after the restore: %d of %d promised submissions found (%d lost), %d of %d later ones in the backup too; %d grants refreshed; whole phase %s",
		len(promised)-lost, len(promised), lost, laterFound, len(later), len(grants), time.Since(start).Round(time.Second))

	// The other steps reach the new pods, and through the ingress once the controller serves the new
	// FormsService's Ingress (until then it answers 404).
	d.forms = k.portForward(d.main, d.name, render.Forms)
	d.followAuth()
	waitIssuerVia(t, d.client(), d.issuer, d.issuer, 2*time.Minute)
}

// requestBackup asks the operator for a backup now (the request annotation, retried on conflict) and
// waits until status.backup.lastSuccessful answers that request with BackedUp True; it returns that
// record (object, startTime, …).
func (k *kind) requestBackup(t *testing.T, name, request string) map[string]any {
	t.Helper()
	k.update(t, name, "requesting backup "+request, func(u *unstructured.Unstructured) {
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[v1alpha1.BackupRequestAnnotation] = request
		u.SetAnnotations(ann)
	})
	var last map[string]any
	cluster.Eventually(t, 3*time.Minute, "backup "+request+" succeeded (status.backup.lastSuccessful, BackedUp)", func() (bool, string) {
		u := k.get(t, name)
		last, _, _ = unstructured.NestedMap(u.Object, "status", "backup", "lastSuccessful")
		status, _, _ := unstructured.NestedMap(u.Object, "status", "backup")
		return last["request"] == request && conditionTrue(u, v1alpha1.ConditionBackedUp), fmt.Sprintf("status.backup %v", status)
	})
	return last
}

// refreshOnce redeems a refresh token at the token endpoint: the status (0 when no answer came) and the
// body or error.
func refreshOnce(hc *http.Client, base, refreshToken string) (int, string) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}, "client_id": {e2eClient}}
	res, err := hc.PostForm(base+"/oauth2/token", form)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	var tok oauth2.Token
	if res.StatusCode == http.StatusOK && (json.Unmarshal(b, &tok) != nil || tok.AccessToken == "") {
		return -1, "200 without an access token: " + string(b)
	}
	return res.StatusCode, string(b)
}

// conditionTrue reports whether the FormsService's condition of that type is True.
func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, r := range raw {
		if m, _ := r.(map[string]any); m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// clientKey names an object in the test's namespace.
func clientKey(name string) client.ObjectKey { return client.ObjectKey{Namespace: appNS, Name: name} }

// startVersityGW runs versitygw as a Deployment and Service in the namespace s3 (restricted Pod
// Security), serving an emptyDir as buckets, with its root keys from a Secret; it returns the Service's
// ClusterIP:port, which the node cluster's host routes.
func (k *kind) startVersityGW(t *testing.T, image string) string {
	t.Helper()
	ctx := context.Background()
	k.createNamespace(t, s3NS)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s3NS, Name: s3Name},
		StringData: map[string]string{"ROOT_ACCESS_KEY_ID": s3AccessKey, "ROOT_SECRET_ACCESS_KEY": s3SecretKey}}
	if err := k.client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	emptyDir := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	svc := k.runOnePod(t, s3NS, s3Name, "s3", s3Port, corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			RunAsGroup: ptr.To[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{
			Name:            s3Name,
			Image:           image,
			ImagePullPolicy: corev1.PullNever,
			// Object metadata in a sidecar folder, not in extended attributes.
			Args:    []string{"--port", fmt.Sprintf(":%d", s3Port), "--health", "/health", "posix", "--sidecar", "/meta", "/buckets"},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s3Name}}}},
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 2, ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(s3Port)}}},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "buckets", MountPath: "/buckets"}, {Name: "meta", MountPath: "/meta"},
				{Name: "tmp", MountPath: "/tmp"}},
		}},
		Volumes: []corev1.Volume{emptyDir("buckets"), emptyDir("meta"), emptyDir("tmp")},
	})
	return fmt.Sprintf("%s:%d", svc.Spec.ClusterIP, s3Port)
}
