package controllers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/tests3"
)

// runLikeKubelet runs a Job's container as the kubelet would, as a process: its environment (the values,
// the Secrets of envFrom, the Job's name for the pod label it reads), its arguments with $(VAR) expanded
// the Kubernetes way, and the mounted files moved to the test's folders (the configuration, the
// Secrets). It returns the process's output.
func runLikeKubelet(t *testing.T, bin string, c corev1.Container, job *batchv1.Job, secrets map[string]map[string]string,
	configFile, secretsDir string) string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.SecretRef == nil {
			t.Fatalf("envFrom %+v: only Secrets expected", from)
		}
		for k, v := range secrets[from.SecretRef.Name] {
			env[k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.labels['"+render.JobNameLabel+"']":
			env[e.Name] = job.Name
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.labels['"+render.JobUIDLabel+"']":
			env[e.Name] = string(job.UID)
		case e.ValueFrom != nil:
			t.Fatalf("env %s: an unexpected source %+v", e.Name, e.ValueFrom)
		default:
			env[e.Name] = e.Value
		}
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	var args []string
	for _, a := range c.Args {
		a = ref.ReplaceAllStringFunc(a, func(m string) string {
			if v, ok := env[m[2:len(m)-1]]; ok {
				return v
			}
			return m
		})
		if a == render.ConfigPath {
			a = configFile
		}
		args = append(args, a)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", c.Name, args, err, out)
	}
	return string(out)
}

// The Jobs the operator renders do what they say, run as real processes from the rendered configuration
// and arguments: a requested backup of a real Redis to a real S3 server (versitygw), and a new
// FormsService restored from the object its status names, into an empty Redis, before its services start.
func TestPlatform_TheRenderedBackupAndRestoreJobsRun(t *testing.T) {
	ctx := context.Background()
	bin := testproc.Build(t, "./cmd/formsservice")
	bucket := tests3.Start(t, "backups")
	const password = "backup-test-password"
	stores := map[string]*redis.Client{}
	addrs := map[string]string{}
	for _, name := range []string{"old", "new"} {
		rs := testredis.Start(t, testredis.Options{AppendFsync: "no"})
		if err := rs.Client().ConfigSet(ctx, "requirepass", password).Err(); err != nil {
			t.Fatal(err)
		}
		stores[name] = redis.NewClient(&redis.Options{Addr: rs.Addr(), Password: password})
		t.Cleanup(func() { stores[name].Close() })
		addrs[name] = rs.Addr()
	}
	// What the old platform holds: a submission, and a grant that ends.
	old := stores["old"]
	if err := old.HSet(ctx, "forms:contact:1", "email", "ada@example.com", "message", "Hello").Err(); err != nil {
		t.Fatal(err)
	}
	if err := old.Set(ctx, "auth:grant:abc", "grant", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}

	ns := newNamespace(t)
	secrets := map[string]map[string]string{
		"redis-auth": {"password": password},
		"s3-keys":    {"AWS_ACCESS_KEY_ID": tests3.AccessKey, "AWS_SECRET_ACCESS_KEY": tests3.SecretKey},
	}
	for name, data := range secrets {
		if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}); err != nil {
			t.Fatal(err)
		}
	}
	s3 := &v1alpha1.S3Location{Endpoint: bucket.Endpoint, Bucket: "backups", Region: "us-east-1", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-keys"}}
	platform := func(name, store string) *v1alpha1.FormsService {
		fs := sampleFS(ns)
		fs.Name = name
		fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{v1alpha1.HostPort(addrs[store])},
			PasswordSecretRef: &v1alpha1.SecretKeySelector{Name: "redis-auth", Key: "password"}}
		return fs
	}
	// The configuration and Secrets as the kubelet would mount them into the Job's pod.
	secretsDir := t.TempDir()
	writeSecret(t, secretsDir, "redis-auth", map[string][]byte{"password": []byte(password)})
	mountConfig := func(fs *v1alpha1.FormsService) string {
		var cm corev1.ConfigMap
		eventually(t, func() error { return k8s.Get(ctx, key(ns, fs.Name+"-config"), &cm) })
		dir := t.TempDir()
		kubeletWrite(t, dir, strings.ReplaceAll(cm.Data[render.ConfigKey(render.Health)], render.SecretsDir+"/", secretsDir+"/"))
		return filepath.Join(dir, "config.yaml")
	}

	// The old platform: a backup on request.
	src := platform("old", "old")
	src.Annotations = map[string]string{v1alpha1.BackupRequestAnnotation: "move"}
	src.Spec.Backup = &v1alpha1.BackupSpec{S3: s3}
	if err := k8s.Create(ctx, src); err != nil {
		t.Fatal(err)
	}
	jobName := render.BackupRequestJobName(src, "move")
	job := &batchv1.Job{}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, jobName), job) })
	out := runLikeKubelet(t, bin, job.Spec.Template.Spec.Containers[0], job, secrets, mountConfig(src), secretsDir)
	if !strings.Contains(out, "wrote 2 keys") {
		t.Errorf("backup: %s", out)
	}
	finishJob(t, ns, jobName, true)
	var object string
	waitBackupStatus(t, src, "the backup reported", func(st *v1alpha1.BackupStatus) error {
		if st.LastSuccessful == nil {
			return fmt.Errorf("no lastSuccessful yet")
		}
		object = st.LastSuccessful.Object
		return nil
	})
	if _, err := os.Stat(filepath.Join(bucket.Dir, "backups", object)); err != nil {
		t.Fatalf("status.backup.lastSuccessful.object %q is not in the bucket: %v", object, err)
	}

	// The new platform, from the object the old one's status names.
	dst := platform("new", "new")
	dst.Spec.RestoreFrom = &v1alpha1.RestoreSource{S3: s3, Object: object}
	if err := k8s.Create(ctx, dst); err != nil {
		t.Fatal(err)
	}
	restore := &batchv1.Job{}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "new-restore"), restore) })
	noDeployment := func() {
		t.Helper()
		if err := k8s.Get(ctx, key(ns, "new-forms"), &appsv1.Deployment{}); err == nil {
			t.Error("the services run before the restore")
		}
	}
	noDeployment()
	out = runLikeKubelet(t, bin, restore.Spec.Template.Spec.Containers[0], restore, secrets, mountConfig(dst), secretsDir)
	if !strings.Contains(out, "restored 2 keys") {
		t.Errorf("restore: %s", out)
	}
	nw := stores["new"]
	if v, err := nw.HGet(ctx, "forms:contact:1", "email").Result(); err != nil || v != "ada@example.com" {
		t.Errorf("the submission in the new store: %q %v", v, err)
	}
	if ttl, err := nw.TTL(ctx, "auth:grant:abc").Result(); err != nil || ttl <= 0 || ttl > time.Hour {
		t.Errorf("the grant in the new store ends in %v (%v), want its original end", ttl, err)
	}
	noDeployment()
	finishJob(t, ns, "new-restore", true)
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "new-forms"), &appsv1.Deployment{}) })

	// The same Job again into the store that now holds the data is refused: a restore never writes over
	// data by mistake.
	cmd := restore.Spec.Template.Spec.Containers[0]
	from := cmd.Args[slices.Index(cmd.Args, "--from")+1]
	failing := exec.Command(bin, "restore", "--insecure", "--config", mountConfig(dst), "--from", from)
	failing.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir(), "AWS_ENDPOINT_URL_S3=" + bucket.Endpoint,
		"AWS_ACCESS_KEY_ID=" + tests3.AccessKey, "AWS_SECRET_ACCESS_KEY=" + tests3.SecretKey, "AWS_REGION=us-east-1"}
	if b, err := failing.CombinedOutput(); err == nil || !strings.Contains(string(b), "not empty") {
		t.Errorf("a second restore into the filled store: %v %s, want refused as not empty", err, b)
	}
}
