package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

func s3Location() *v1alpha1.S3Location {
	return &v1alpha1.S3Location{Endpoint: "http://s3.storage:7070", Bucket: "backups", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-keys"}}
}

// createS3Keys makes the Secret s3Location names, as a team would before it names it.
func createS3Keys(t *testing.T, ns string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-keys"},
		Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("id"), "AWS_SECRET_ACCESS_KEY": []byte("secret")}}
	if err := k8s.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// finishJob plays the Job controller, which envtest does not run: the Job, started ago, succeeded or
// failed. (Times have whole seconds: tests that order Jobs give them starts apart.)
func finishJob(t *testing.T, ns, name string, succeeded bool) {
	t.Helper()
	finishJobStarted(t, ns, name, succeeded, time.Minute)
}

func finishJobStarted(t *testing.T, ns, name string, succeeded bool, ago time.Duration) {
	t.Helper()
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	updateStatusOf(t, j, func(j *batchv1.Job) {
		now := metav1.Now()
		start := metav1.NewTime(now.Add(-ago))
		j.Status.StartTime = &start
		if succeeded {
			j.Status.Succeeded = 1
			j.Status.CompletionTime = &now
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			}
			return
		}
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		}
	})
}

func getFS(t *testing.T, fs *v1alpha1.FormsService) *v1alpha1.FormsService {
	t.Helper()
	cur := &v1alpha1.FormsService{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fs), cur); err != nil {
		t.Fatal(err)
	}
	return cur
}

// waitBackupStatus waits until status.backup satisfies check.
func waitBackupStatus(t *testing.T, fs *v1alpha1.FormsService, what string, check func(*v1alpha1.BackupStatus) error) {
	t.Helper()
	eventuallyWhat(t, what, func() error {
		st := getFS(t, fs).Status.Backup
		if st == nil {
			return fmt.Errorf("no status.backup")
		}
		return check(st)
	})
}

func TestBackup_ScheduledAndRequestedJobsReportTheirOutcome(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	createS3Keys(t, ns)
	fs := sampleFS(ns)
	fs.Spec.Backup = &v1alpha1.BackupSpec{Schedule: "0 3 * * *", S3: s3Location()}
	fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{IngressFrom: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}}
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	// The Jobs' NetworkPolicy, as the API server accepts it.
	np := &networkingv1.NetworkPolicy{}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-data-jobs"), np) })
	if len(np.Spec.Egress) < 3 || len(np.Spec.Ingress) != 0 {
		t.Errorf("the Jobs' NetworkPolicy: %+v", np.Spec)
	}

	// The CronJob and the Jobs' ServiceAccount, without a token.
	cj := &batchv1.CronJob{}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-backup"), cj) })
	if cj.Spec.Schedule != "0 3 * * *" || cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || metav1.GetControllerOf(cj) == nil {
		t.Errorf("CronJob %+v", cj.Spec)
	}
	sa := &corev1.ServiceAccount{}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-backup"), sa) })
	if ptr.Deref(sa.AutomountServiceAccountToken, true) {
		t.Error("the backup ServiceAccount mounts a token")
	}
	waitCondition(t, fs, v1alpha1.ConditionBackedUp, metav1.ConditionUnknown, "NoBackupYet")

	// A request: one Job, answered once.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		metav1.SetMetaDataAnnotation(&fs.ObjectMeta, v1alpha1.BackupRequestAnnotation, "before-upgrade")
	})
	reqJob := render.BackupRequestJobName(fs, "before-upgrade")
	j := &batchv1.Job{}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, reqJob), j) })
	if args := j.Spec.Template.Spec.Containers[0].Args; !strings.HasSuffix(args[len(args)-1], "s3://backups/"+ns+"/acme/$(BACKUP_NAME)-$(BACKUP_JOB_UID).backup.gz") {
		t.Errorf("args %q", args)
	}
	waitBackupStatus(t, fs, "the requested backup running", func(st *v1alpha1.BackupStatus) error {
		if st.LastRequest != "before-upgrade" || st.Last == nil || st.Last.Job != reqJob || st.Last.Outcome != v1alpha1.JobRunning || st.CronJob != "acme-backup" {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})

	finishJobStarted(t, ns, reqJob, true, 10*time.Minute)
	wantObject := ns + "/acme/" + reqJob + "-" + string(j.UID) + ".backup.gz"
	waitCondition(t, fs, v1alpha1.ConditionBackedUp, metav1.ConditionTrue, "BackupSucceeded", wantObject)
	waitBackupStatus(t, fs, "the requested backup done", func(st *v1alpha1.BackupStatus) error {
		if s := st.LastSuccessful; s == nil || s.Job != reqJob || s.Object != wantObject || s.Request != "before-upgrade" || s.CompletionTime == nil {
			return fmt.Errorf("lastSuccessful %+v", s)
		}
		return nil
	})

	// A scheduled backup, created as the CronJob controller would (its labels from the template, owned
	// by the CronJob), fails: BackedUp says so, and the last good backup stays the one to restore.
	sched := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-backup-29412345", Labels: cj.Spec.JobTemplate.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: ptr.To(true)}}},
		Spec: cj.Spec.JobTemplate.Spec,
	}
	if err := k8s.Create(ctx, sched); err != nil {
		t.Fatal(err)
	}
	waitBackupStatus(t, fs, "the scheduled backup running", func(st *v1alpha1.BackupStatus) error {
		if st.Last == nil || st.Last.Job != sched.Name || st.Last.Request != "" || st.Last.Object != ns+"/acme/acme-backup-29412345-"+string(sched.UID)+".backup.gz" {
			return fmt.Errorf("last %+v", st.Last)
		}
		return nil
	})
	finishJob(t, ns, sched.Name, false)
	waitCondition(t, fs, v1alpha1.ConditionBackedUp, metav1.ConditionFalse, "BackupFailed", sched.Name, "BackoffLimitExceeded")
	st := getFS(t, fs).Status
	if st.Backup.LastSuccessful.Job != reqJob || st.Backup.Last.Outcome != v1alpha1.JobFailed {
		t.Errorf("after a failed backup: %+v / %+v", st.Backup.Last, st.Backup.LastSuccessful)
	}
	if !meta.IsStatusConditionFalse(st.Conditions, v1alpha1.ConditionDegraded) {
		t.Errorf("a failed backup is BackedUp=False, not a degraded platform: %+v", meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded))
	}

	// The requested Job's time to live removes it: the request is not answered again, and the backup it
	// wrote stays reported.
	if err := k8s.Delete(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: reqJob}}, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := k8s.Get(ctx, key(ns, reqJob), &batchv1.Job{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("job still there: %v", err)
		}
		return nil
	})
	waitReconciled(t, getFS(t, fs))
	waitQuiet(t)
	if err := k8s.Get(ctx, key(ns, reqJob), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("the request was answered a second time: %v", err)
	}
	if s := getFS(t, fs).Status.Backup.LastSuccessful; s == nil || s.Job != reqJob {
		t.Errorf("lastSuccessful forgotten with its Job: %+v", s)
	}

	// No more backups: the CronJob goes, and so does BackedUp.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Backup = nil })
	eventually(t, func() error {
		if err := k8s.Get(ctx, key(ns, "acme-backup"), &batchv1.CronJob{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("CronJob still there: %v", err)
		}
		if c := meta.FindStatusCondition(getFS(t, fs).Status.Conditions, v1alpha1.ConditionBackedUp); c != nil {
			return fmt.Errorf("BackedUp still reported: %+v", c)
		}
		return nil
	})
}

func restoringFS(ns string) *v1alpha1.FormsService {
	fs := sampleFS(ns)
	fs.Spec.RestoreFrom = &v1alpha1.RestoreSource{S3: s3Location(), Object: "prod/acme/acme-backup-29412345.backup.gz"}
	return fs
}

func noDeployments(t *testing.T, ns string) {
	t.Helper()
	list := &appsv1.DeploymentList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) > 0 {
		t.Errorf("%d Deployments before the restore succeeded: the services would write to the store first", len(list.Items))
	}
}

// A new FormsService with restoreFrom: the store first, then the restore Job, and only when it has
// succeeded the services.
func TestRestore_TheServicesStartOnlyAfterTheRestore(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	createS3Keys(t, ns)
	fs := restoringFS(ns)
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionRestored, metav1.ConditionFalse, "WaitingForStore")
	if err := k8s.Get(ctx, key(ns, "acme-restore"), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("restore Job before the store is ready: %v", err)
	}
	noDeployments(t, ns)

	setStatefulSetReady(t, ns, "acme-redis")
	j := &batchv1.Job{}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-restore"), j) })
	if args := j.Spec.Template.Spec.Containers[0].Args; args[0] != "restore" || !slices.Contains(args, "s3://backups/prod/acme/acme-backup-29412345.backup.gz") ||
		args[len(args)-1] != "--insecure" { // a restoreFrom without a key reads the operator's clear backups
		t.Errorf("args %q", args)
	}
	waitCondition(t, fs, v1alpha1.ConditionRestored, metav1.ConditionFalse, "Restoring", "acme-restore")
	waitCondition(t, fs, v1alpha1.ConditionReady, metav1.ConditionFalse, "Restoring")
	noDeployments(t, ns)

	finishJob(t, ns, "acme-restore", true)
	waitCondition(t, fs, v1alpha1.ConditionRestored, metav1.ConditionTrue, "RestoreSucceeded")
	for _, c := range render.Components {
		eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-"+c), &appsv1.Deployment{}) })
	}

	// The Job deleted after it succeeded: the store holds the backup, the services keep running, and
	// nothing is restored again.
	if err := k8s.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := k8s.Get(ctx, key(ns, "acme-restore"), &batchv1.Job{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("job still there: %v", err)
		}
		return nil
	})
	waitReconciled(t, getFS(t, fs))
	waitQuiet(t)
	if err := k8s.Get(ctx, key(ns, "acme-restore"), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("restored a second time: %v", err)
	}
	waitCondition(t, fs, v1alpha1.ConditionRestored, metav1.ConditionTrue, "RestoreSucceeded")
}

// A failed restore stops there, visibly: Stalled with the reason, the services not started, no retry
// loop; deleting the Job is the way to try again.
func TestRestore_AFailedRestoreStallsAndIsNotRetried(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	createS3Keys(t, ns)
	fs := restoringFS(ns)
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-redis"), &appsv1.StatefulSet{}) })
	setStatefulSetReady(t, ns, "acme-redis")
	j := &batchv1.Job{}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-restore"), j) })
	finishJob(t, ns, "acme-restore", false)
	waitCondition(t, fs, v1alpha1.ConditionRestored, metav1.ConditionFalse, "RestoreFailed", "BackoffLimitExceeded", "kubectl logs job/acme-restore")
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "RestoreFailed")
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "RestoreFailed")
	waitCondition(t, fs, v1alpha1.ConditionReady, metav1.ConditionFalse, "RestoreFailed")
	waitQuiet(t)
	noDeployments(t, ns)
	again := &batchv1.Job{}
	if err := k8s.Get(ctx, key(ns, "acme-restore"), again); err != nil || again.UID != j.UID {
		t.Errorf("the failed Job must stay for its logs, not be replaced: %v", err)
	}

	// Deleted by the person who emptied the store: tried again.
	if err := k8s.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := k8s.Get(ctx, key(ns, "acme-restore"), again); err != nil {
			return err
		}
		if again.UID == j.UID {
			return fmt.Errorf("still the failed Job")
		}
		return nil
	})
	waitCondition(t, fs, v1alpha1.ConditionRestored, metav1.ConditionFalse, "Restoring")
}

func TestCRD_BackupAndRestoreRules(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for i, tc := range []struct {
		name   string
		mutate func(fs *v1alpha1.FormsService)
		want   string
	}{
		{"two backup targets", func(fs *v1alpha1.FormsService) {
			fs.Spec.Backup = &v1alpha1.BackupSpec{S3: s3Location(), Volume: &v1alpha1.VolumeLocation{ClaimName: "b"}}
		}, "backup needs exactly one target"},
		{"no backup target", func(fs *v1alpha1.FormsService) { fs.Spec.Backup = &v1alpha1.BackupSpec{Schedule: "@daily"} }, "backup needs exactly one target"},
		{"a schedule of four fields", func(fs *v1alpha1.FormsService) {
			fs.Spec.Backup = &v1alpha1.BackupSpec{Schedule: "0 3 * *", S3: s3Location()}
		}, "schedule is five cron fields"},
		{"an endpoint with a path", func(fs *v1alpha1.FormsService) {
			s := s3Location()
			s.Endpoint = "https://s3.example.com/bucket"
			fs.Spec.Backup = &v1alpha1.BackupSpec{S3: s}
		}, "endpoint is scheme://host[:port]"},
		{"a prefix that climbs out", func(fs *v1alpha1.FormsService) {
			fs.Spec.Backup = &v1alpha1.BackupSpec{S3: s3Location(), Prefix: ptr.To("../other/")}
		}, "prefix is folders"},
		{"a restore object that climbs out", func(fs *v1alpha1.FormsService) {
			fs.Spec.RestoreFrom = &v1alpha1.RestoreSource{Volume: &v1alpha1.VolumeLocation{ClaimName: "b"}, Object: "a/../../etc/x"}
		}, "object is a key or path"},
		{"two restore sources", func(fs *v1alpha1.FormsService) {
			fs.Spec.RestoreFrom = &v1alpha1.RestoreSource{S3: s3Location(), Volume: &v1alpha1.VolumeLocation{ClaimName: "b"}, Object: "x.backup.gz"}
		}, "restoreFrom needs exactly one source"},
		{"static keys and a web identity", func(fs *v1alpha1.FormsService) {
			s := s3Location()
			s.WebIdentity = &v1alpha1.S3WebIdentity{RoleARN: "arn:aws:iam::111122223333:role/backup"}
			fs.Spec.Backup = &v1alpha1.BackupSpec{S3: s}
		}, "exactly one of credentialsSecretRef and webIdentity"},
		{"no credentials", func(fs *v1alpha1.FormsService) {
			s := s3Location()
			s.CredentialsSecretRef = corev1.LocalObjectReference{}
			fs.Spec.Backup = &v1alpha1.BackupSpec{S3: s}
		}, "exactly one of credentialsSecretRef and webIdentity"},
		{"a role that is no role ARN", func(fs *v1alpha1.FormsService) {
			s := s3Location()
			s.CredentialsSecretRef = corev1.LocalObjectReference{}
			s.WebIdentity = &v1alpha1.S3WebIdentity{RoleARN: "formsservice-backup-role"}
			fs.Spec.Backup = &v1alpha1.BackupSpec{S3: s}
		}, "roleARN"},
		{"a CA bundle for plain http", func(fs *v1alpha1.FormsService) {
			s := s3Location() // http://s3.storage:7070
			s.CABundleRef = &v1alpha1.SecretKeySelector{Name: "ca", Key: "ca.crt"}
			fs.Spec.Backup = &v1alpha1.BackupSpec{S3: s}
		}, "caBundleRef needs an https endpoint"},
		{"a KMS key for SSE-S3", func(fs *v1alpha1.FormsService) {
			s := s3Location()
			s.ServerSideEncryption = &v1alpha1.S3ServerSideEncryption{Type: "AES256", KMSKeyID: "alias/backups"}
			fs.Spec.Backup = &v1alpha1.BackupSpec{S3: s}
		}, "kmsKeyID is for type aws:kms"},
		{"an unknown server-side encryption", func(fs *v1alpha1.FormsService) {
			s := s3Location()
			s.ServerSideEncryption = &v1alpha1.S3ServerSideEncryption{Type: "aws:kms:dsse"}
			fs.Spec.Backup = &v1alpha1.BackupSpec{S3: s}
		}, "supported values"},
		{"a web identity for the forms' files", func(fs *v1alpha1.FormsService) {
			s := *s3Location()
			s.CredentialsSecretRef = corev1.LocalObjectReference{}
			s.WebIdentity = &v1alpha1.S3WebIdentity{RoleARN: "arn:aws:iam::111122223333:role/files"}
			fs.Spec.Forms.Files = &v1alpha1.FormFilesSpec{S3: s, LinkKeySecretRef: v1alpha1.SecretKeySelector{Name: "links", Key: "key"}}
		}, "apply to backups and restores only"},
	} {
		fs := sampleFS(ns)
		fs.Name = fmt.Sprintf("rules%d", i)
		tc.mutate(fs)
		if err := k8s.Create(ctx, fs, client.DryRunAll); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a refusal saying %q", tc.name, err, tc.want)
		}
	}
	good := sampleFS(ns)
	good.Name = "rulesgood"
	good.Spec.Backup = &v1alpha1.BackupSpec{Schedule: "*/15 * * * *", S3: s3Location(), Prefix: ptr.To("backups/site/")}
	if err := k8s.Create(ctx, good, client.DryRunAll); err != nil {
		t.Errorf("a good backup spec refused: %v", err)
	}
	private := sampleFS(ns)
	private.Name = "rulesprivate"
	private.Spec.Backup = &v1alpha1.BackupSpec{S3: &v1alpha1.S3Location{Endpoint: "https://s3.private:9443", Bucket: "backups",
		CABundleRef:          &v1alpha1.SecretKeySelector{Name: "ca", Key: "ca.crt"},
		ServerSideEncryption: &v1alpha1.S3ServerSideEncryption{Type: "aws:kms", KMSKeyID: "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab"},
		WebIdentity:          &v1alpha1.S3WebIdentity{RoleARN: "arn:aws:iam::111122223333:role/backup", STSEndpoint: "https://sts.eu-west-1.amazonaws.com"}}}
	if err := k8s.Create(ctx, private, client.DryRunAll); err != nil {
		t.Errorf("a private endpoint with SSE-KMS and a web identity refused: %v", err)
	}

	// restoreFrom only at creation, and never changed.
	fs := sampleFS(ns)
	fs.Name = "later"
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	update := func(fs *v1alpha1.FormsService, mutate func(*v1alpha1.FormsService)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), fs); err != nil {
				return err
			}
			mutate(fs)
			return k8s.Update(ctx, fs, client.DryRunAll)
		})
	}
	err := update(fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.RestoreFrom = &v1alpha1.RestoreSource{S3: s3Location(), Object: "x.backup.gz"}
	})
	if err == nil || !strings.Contains(err.Error(), "restoreFrom is set only when the FormsService is created") {
		t.Errorf("restoreFrom added later: %v", err)
	}
	r := restoringFS(ns)
	r.Name = "restoring"
	if err := k8s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	err = update(r, func(fs *v1alpha1.FormsService) { fs.Spec.RestoreFrom.Object = "other.backup.gz" })
	if err == nil || !strings.Contains(err.Error(), "restoreFrom cannot change") {
		t.Errorf("restoreFrom changed: %v", err)
	}
	if err := update(r, func(fs *v1alpha1.FormsService) { fs.Spec.RestoreFrom = nil }); err != nil {
		t.Errorf("removing restoreFrom after the restore must be allowed: %v", err)
	}
}

// Growing storageSize grows the claim and replaces the StatefulSet (whose claim templates cannot
// change) with orphan deletion, which leaves the Redis pod running.
func TestVolumeExpansion_GrowsTheClaimAndReplacesTheStatefulSet(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "expandable-" + ns}, Provisioner: "example.com/csi", AllowVolumeExpansion: ptr.To(true)}
	if err := k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sc) })
	fs := sampleFS(ns)
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{StorageClassName: ptr.To(sc.Name)}
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	old := &appsv1.StatefulSet{}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-redis"), old) })

	// The claim, as the StatefulSet controller and a provisioner would have made and bound it.
	tmpl := old.Spec.VolumeClaimTemplates[0]
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-acme-redis-0", Labels: tmpl.Labels}, Spec: tmpl.Spec}
	if err := k8s.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	updateStatusOf(t, pvc, func(p *corev1.PersistentVolumeClaim) {
		p.Status.Phase = corev1.ClaimBound
		p.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	})

	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Redis.Managed.StorageSize = ptr.To(resource.MustParse("3Gi")) })
	eventuallyWhat(t, "the claim asked for 3Gi", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return err
		}
		if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("3Gi")) != 0 {
			return fmt.Errorf("claim requests %s", q.String())
		}
		return nil
	})
	// Deleted with orphan propagation: play the garbage collector, which envtest does not run.
	eventuallyWhat(t, "the StatefulSet deleted, its dependents orphaned", func() error {
		s := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, key(ns, "acme-redis"), s); err != nil {
			return err
		}
		if s.DeletionTimestamp.IsZero() || !strings.Contains(fmt.Sprint(s.Finalizers), metav1.FinalizerOrphanDependents) {
			return fmt.Errorf("deletionTimestamp %v, finalizers %v", s.DeletionTimestamp, s.Finalizers)
		}
		return nil
	})
	updateObject(t, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}}, func(s *appsv1.StatefulSet) { s.Finalizers = nil })
	eventuallyWhat(t, "the StatefulSet created again with 3Gi claims", func() error {
		s := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, key(ns, "acme-redis"), s); err != nil {
			return err
		}
		if s.UID == old.UID {
			return fmt.Errorf("still the old StatefulSet")
		}
		if q := s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("3Gi")) != 0 {
			return fmt.Errorf("template requests %s", q.String())
		}
		return nil
	})
	setStatefulSetReady(t, ns, "acme-redis")
	waitQuiet(t)
	if c := meta.FindStatusCondition(getFS(t, fs).Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Degraded after the expansion: %+v", c)
	}
}

// A claim that cannot grow (its storage class does not allow it) stops the expansion with the API
// server's answer, and the StatefulSet stays.
func TestVolumeExpansion_AClaimThatCannotGrowStalls(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fixed-" + ns}, Provisioner: "example.com/csi", AllowVolumeExpansion: ptr.To(false)}
	if err := k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sc) })
	fs := sampleFS(ns)
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{StorageClassName: ptr.To(sc.Name)}
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	old := &appsv1.StatefulSet{}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-redis"), old) })
	tmpl := old.Spec.VolumeClaimTemplates[0]
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-acme-redis-0"}, Spec: tmpl.Spec}
	if err := k8s.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	updateStatusOf(t, pvc, func(p *corev1.PersistentVolumeClaim) { p.Status.Phase = corev1.ClaimBound })

	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Redis.Managed.StorageSize = ptr.To(resource.MustParse("2Gi")) })
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "VolumeExpansionFailed", "data-acme-redis-0")
	s := &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, key(ns, "acme-redis"), s); err != nil || s.UID != old.UID || !s.DeletionTimestamp.IsZero() {
		t.Errorf("the StatefulSet must stay while its claim cannot grow: %v %+v", err, s.ObjectMeta)
	}
}

// The Secrets the backup and restore Jobs read are checked when the FormsService is reconciled, not
// when a Job runs an hour later: a missing credentials Secret, a missing key or a key that is not an
// age identity is Degraded with BackupCredentialsMissing at once, naming the field; the services are
// rolled out all the same (nothing they mount is wrong), and it clears when the Secret is fixed.
func TestBackup_MissingCredentialsShowAtOnce(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.Backup = &v1alpha1.BackupSpec{Schedule: "0 3 * * *", S3: s3Location(),
		Encryption: &v1alpha1.BackupEncryption{IdentitySecretRef: v1alpha1.SecretKeySelector{Name: "backup-age", Key: "key.txt"}}}
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "BackupCredentialsMissing",
		`Secret "s3-keys" named by spec.backup.s3.credentialsSecretRef does not exist`,
		`Secret "backup-age" named by spec.backup.encryption.identitySecretRef does not exist`)
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-auth"), &appsv1.Deployment{}) })

	createS3Keys(t, ns)
	keySecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup-age"},
		Data: map[string][]byte{"key.txt": []byte("AGE-SECRET-KEY-1NOTAREALKEY\n")}}
	if err := k8s.Create(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "BackupCredentialsMissing",
		`Secret "backup-age" key "key.txt" named by spec.backup.encryption.identitySecretRef: a line that is not an age identity`)
	if c := meta.FindStatusCondition(getFS(t, fs).Status.Conditions, v1alpha1.ConditionDegraded); strings.Contains(c.Message, "NOTAREALKEY") {
		t.Errorf("the condition repeats the Secret's value: %s", c.Message)
	}

	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keySecret.Data["key.txt"] = []byte("# created by age-keygen\n" + id.String() + "\n")
	if err := k8s.Update(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
}
