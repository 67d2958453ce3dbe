package render

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

func withS3Backup(fs *v1alpha1.FormsService) *v1alpha1.FormsService {
	fs.Spec.Backup = &v1alpha1.BackupSpec{
		Schedule: "0 3 * * *",
		TimeZone: ptr.To("Europe/Berlin"),
		S3: &v1alpha1.S3Location{Endpoint: "http://s3.storage:7070", Bucket: "backups", Region: "eu-1",
			CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-keys"}},
	}
	return fs
}

func envOf(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// checkDataPod checks what every backup and restore pod shares: restricted, its own ServiceAccount
// without a token, never restarted in place, the health service's configuration and the store's
// password, and the Job's name in BACKUP_NAME for the arguments.
func checkDataPod(t *testing.T, what string, p corev1.PodSpec) corev1.Container {
	t.Helper()
	if p.ServiceAccountName != "acme-backup" || ptr.Deref(p.AutomountServiceAccountToken, true) {
		t.Errorf("%s: serviceAccountName %q, automount %v", what, p.ServiceAccountName, p.AutomountServiceAccountToken)
	}
	if p.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q", what, p.RestartPolicy)
	}
	if sc := p.SecurityContext; !ptr.Deref(sc.RunAsNonRoot, false) || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod not restricted: %+v", what, sc)
	}
	if len(p.Containers) != 1 {
		t.Fatalf("%s: %d containers", what, len(p.Containers))
	}
	c := p.Containers[0]
	if sc := c.SecurityContext; ptr.Deref(sc.AllowPrivilegeEscalation, true) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s: container not restricted: %+v", what, sc)
	}
	if c.Image != "img:1" {
		t.Errorf("%s: image %q, want the services'", what, c.Image)
	}
	if e := envOf(c, "BACKUP_NAME"); e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-name']" {
		t.Errorf("%s: BACKUP_NAME %+v", what, e)
	}
	// The Job's UID makes each backup's name unique (D91): a Job of a name used before writes anew.
	if e := envOf(c, "BACKUP_JOB_UID"); e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/controller-uid']" {
		t.Errorf("%s: BACKUP_JOB_UID %+v", what, e)
	}
	var config, password bool
	for _, v := range p.Volumes {
		// They stream to and from the bucket: /tmp holds no copy of a backup, and is bounded.
		if v.Name == "tmp" && (v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.String() != "16Mi") {
			t.Errorf("%s: /tmp %+v, want an emptyDir of at most 16Mi", what, v.VolumeSource)
		}
		if v.ConfigMap != nil && v.ConfigMap.Name == "acme-config" && len(v.ConfigMap.Items) == 1 &&
			v.ConfigMap.Items[0].Key == ConfigKey(Health) && v.ConfigMap.Items[0].Path == "config.yaml" {
			config = true
		}
		if v.Secret != nil && v.Secret.SecretName == "acme-redis-password" {
			password = true
		}
		if v.Secret != nil && v.Secret.SecretName == "acme-signing-key" {
			t.Errorf("%s: mounts the signing key, which a backup does not need", what)
		}
	}
	if !config || !password {
		t.Errorf("%s: the health configuration (%v) and the store's password (%v) must be mounted: %+v", what, config, password, p.Volumes)
	}
	return c
}

func TestBackupCronJob_S3(t *testing.T) {
	fs := withS3Backup(base())
	if BackupCronJob(base(), in) != nil {
		t.Error("a CronJob without spec.backup")
	}
	cj := typed[batchv1.CronJob](t, BackupCronJob(fs, in))
	if cj.Name != "acme-backup" || cj.Namespace != "prod" || len(cj.OwnerReferences) != 1 || cj.Labels[LabelComponent] != Backup {
		t.Errorf("metadata %+v", cj.ObjectMeta)
	}
	s := cj.Spec
	if s.Schedule != "0 3 * * *" || ptr.Deref(s.TimeZone, "") != "Europe/Berlin" || s.ConcurrencyPolicy != batchv1.ForbidConcurrent || ptr.Deref(s.Suspend, true) {
		t.Errorf("spec %+v", s)
	}
	if s.JobTemplate.Labels[LabelInstance] != "acme" || s.JobTemplate.Labels[LabelComponent] != Backup || s.JobTemplate.Labels[LabelManagedBy] != ManagedBy {
		t.Errorf("the Jobs need the labels the operator's cache and status select them by: %v", s.JobTemplate.Labels)
	}
	if ptr.Deref(s.JobTemplate.Spec.BackoffLimit, 0) != 2 {
		t.Errorf("backoffLimit %v: a backup only reads, another try is safe", s.JobTemplate.Spec.BackoffLimit)
	}
	p := s.JobTemplate.Spec.Template
	if p.Labels[LabelComponent] != Backup {
		t.Errorf("pod labels %v", p.Labels)
	}
	c := checkDataPod(t, "scheduled backup", p.Spec)
	want := []string{"backup", "--config", ConfigPath, "--to", "s3://backups/prod/acme/$(BACKUP_NAME)-$(BACKUP_JOB_UID).backup.gz"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	if e := envOf(c, "AWS_ENDPOINT_URL_S3"); e == nil || e.Value != "http://s3.storage:7070" {
		t.Errorf("endpoint %+v", e)
	}
	if e := envOf(c, "AWS_REGION"); e == nil || e.Value != "eu-1" {
		t.Errorf("region %+v", e)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "s3-keys" {
		t.Errorf("the credentials Secret must be passed with envFrom: %+v", c.EnvFrom)
	}
	// Two Jobs of one name (a request id used again, a FormsService made again) name two objects.
	one := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "acme-backup-29412345", UID: "0b6c2f3e-1111-4c1e-9d7a-5e0f2a3b4c5d"}}
	two := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "acme-backup-29412345", UID: "7d1e9a40-2222-4b8f-8c3d-1a2b3c4d5e6f"}}
	if got := BackupObject(fs, one); got != "prod/acme/acme-backup-29412345-0b6c2f3e-1111-4c1e-9d7a-5e0f2a3b4c5d.backup.gz" {
		t.Errorf("BackupObject %q", got)
	}
	if BackupObject(fs, one) == BackupObject(fs, two) {
		t.Errorf("two Jobs of one name share the object %q", BackupObject(fs, one))
	}

	fs.Spec.Backup.Schedule = ""
	if BackupCronJob(fs, in) != nil {
		t.Error("a CronJob without a schedule")
	}
}

func TestBackupRequestJob_OneJobPerRequest(t *testing.T) {
	fs := withS3Backup(base())
	fs.Spec.Backup.Prefix = ptr.To("site/")
	a, b := BackupRequestJobName(fs, "before-upgrade"), BackupRequestJobName(fs, "2026-11-26")
	if a == b || a != BackupRequestJobName(fs, "before-upgrade") || !strings.HasPrefix(a, "acme-backup-") || len(a) > 63 {
		t.Errorf("names %q and %q: one stable name per request, under the CronJob's prefix", a, b)
	}
	j := typed[batchv1.Job](t, BackupRequestJob(fs, in, "before-upgrade"))
	if j.Name != a || j.Annotations[v1alpha1.BackupRequestAnnotation] != "before-upgrade" || len(j.OwnerReferences) != 1 {
		t.Errorf("metadata %+v", j.ObjectMeta)
	}
	c := checkDataPod(t, "requested backup", j.Spec.Template.Spec)
	if got := c.Args[len(c.Args)-1]; got != "s3://backups/site/$(BACKUP_NAME)-$(BACKUP_JOB_UID).backup.gz" {
		t.Errorf("--to %q", got)
	}
	if BackupRequestJob(base(), in, "x") != nil {
		t.Error("a requested backup without spec.backup")
	}
}

func TestBackupJob_Volume(t *testing.T) {
	fs := base()
	fs.Spec.Backup = &v1alpha1.BackupSpec{Volume: &v1alpha1.VolumeLocation{ClaimName: "backups"}}
	j := typed[batchv1.Job](t, BackupRequestJob(fs, in, "r1"))
	p := j.Spec.Template.Spec
	c := checkDataPod(t, "backup to a volume", p)
	if got := c.Args[len(c.Args)-1]; got != "/backup/prod/acme/$(BACKUP_NAME)-$(BACKUP_JOB_UID).backup.gz" {
		t.Errorf("--to %q", got)
	}
	if len(c.EnvFrom) != 0 || envOf(c, "AWS_ENDPOINT_URL_S3") != nil {
		t.Errorf("S3 settings for a volume: %+v", c.Env)
	}
	var mounted bool
	for _, v := range p.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "backups" && !v.PersistentVolumeClaim.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("the claim is not mounted writable: %+v", p.Volumes)
	}
	if ptr.Deref(p.SecurityContext.FSGroup, 0) != ImageUID {
		t.Errorf("fsGroup %v: the image's user could not write to a fresh volume", p.SecurityContext.FSGroup)
	}
	fs.Spec.RunAsUser = ptr.To[int64](1000)
	p = typed[batchv1.Job](t, BackupRequestJob(fs, in, "r1")).Spec.Template.Spec
	if ptr.Deref(p.SecurityContext.FSGroup, 0) != 1000 || ptr.Deref(p.SecurityContext.RunAsUser, 0) != 1000 {
		t.Errorf("spec.runAsUser must be the backup's user and group too: %+v", p.SecurityContext)
	}
}

func TestRestoreJob_OnceFromTheSource(t *testing.T) {
	fs := base()
	if RestoreJob(fs, in) != nil {
		t.Error("a restore Job without spec.restoreFrom")
	}
	fs.Spec.RestoreFrom = &v1alpha1.RestoreSource{
		S3:     &v1alpha1.S3Location{Endpoint: "https://s3.example.com", Bucket: "backups", CredentialsSecretRef: corev1.LocalObjectReference{Name: "keys"}},
		Object: "prod/acme/acme-backup-1.backup.gz",
	}
	j := typed[batchv1.Job](t, RestoreJob(fs, in))
	if j.Name != "acme-restore" || ptr.Deref(j.Spec.BackoffLimit, 0) != 2 || j.Spec.TTLSecondsAfterFinished != nil {
		t.Errorf("a restore is tried up to three times (a half-done one finishes on the next) and its Job kept: %+v", j.Spec)
	}
	if j.Spec.Template.Labels[LabelComponent] != Restore {
		t.Errorf("pod labels %v", j.Spec.Template.Labels)
	}
	c := checkDataPod(t, "restore", j.Spec.Template.Spec)
	// The operator's own backups are clear unless spec.backup.encryption is set: a restore without a key
	// is told that it may read one.
	want := []string{"restore", "--config", ConfigPath, "--from", "s3://backups/prod/acme/acme-backup-1.backup.gz", "--insecure"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}

	// keepSessions passes --keep-sessions; without it the restore signs every account out (D68).
	fs.Spec.RestoreFrom.KeepSessions = true
	if args := typed[batchv1.Job](t, RestoreJob(fs, in)).Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, append(want, "--keep-sessions")) {
		t.Errorf("args with keepSessions %q", args)
	}

	fs.Spec.RestoreFrom = &v1alpha1.RestoreSource{Volume: &v1alpha1.VolumeLocation{ClaimName: "backups"}, Object: "a/b.backup.gz"}
	p := typed[batchv1.Job](t, RestoreJob(fs, in)).Spec.Template.Spec
	if got := p.Containers[0].Args[4]; got != "/backup/a/b.backup.gz" {
		t.Errorf("--from %q", got)
	}
	for _, v := range p.Volumes {
		if v.PersistentVolumeClaim != nil && !v.PersistentVolumeClaim.ReadOnly {
			t.Error("a restore mounts its source read-only")
		}
	}
}

func TestDataJobs_NetworkPolicies(t *testing.T) {
	fs := base()
	redisFrom := func() []networkingv1.NetworkPolicyPeer {
		return typed[networkingv1.NetworkPolicy](t, RedisNetworkPolicy(fs, Inputs{})).Spec.Ingress[0].From
	}
	if n := len(redisFrom()); n != len(Components) {
		t.Errorf("without backups the managed Redis admits %d peers, want the %d services", n, len(Components))
	}
	withS3Backup(fs)
	var admits []string
	for _, p := range redisFrom() {
		admits = append(admits, p.PodSelector.MatchLabels[LabelComponent])
	}
	if !slices.Contains(admits, Backup) || !slices.Contains(admits, Restore) {
		t.Errorf("the managed Redis must admit the backup and restore pods: %v", admits)
	}

	if DataNetworkPolicy(fs) != nil {
		t.Error("a policy for the Jobs without spec.networkPolicy")
	}
	fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{IngressFrom: []networkingv1.NetworkPolicyPeer{{}}}
	np := typed[networkingv1.NetworkPolicy](t, DataNetworkPolicy(fs))
	if len(np.Spec.Ingress) != 0 || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Errorf("the Jobs take no connections: %+v", np.Spec)
	}
	var ports []int32
	for _, r := range np.Spec.Egress {
		for _, p := range r.Ports {
			ports = append(ports, p.Port.IntVal)
		}
	}
	if !slices.Contains(ports, 53) || !slices.Contains(ports, RedisPort) || !slices.Contains(ports, 7070) {
		t.Errorf("egress ports %v: DNS, the store and the bucket's endpoint", ports)
	}
	sel := np.Spec.PodSelector.MatchExpressions
	if len(sel) != 3 || !slices.Equal(sel[2].Values, []string{Backup, Restore}) {
		t.Errorf("selector %+v", sel)
	}
}

// With an age key, the backup Job encrypts to it and the restore Job reads with it (never --insecure),
// each mounting only that Secret key, read-only.
func TestDataJobs_Encryption(t *testing.T) {
	fs := base()
	enc := &v1alpha1.BackupEncryption{IdentitySecretRef: v1alpha1.SecretKeySelector{Name: "backup-age", Key: "key.txt"}}
	fs.Spec.Backup = &v1alpha1.BackupSpec{Schedule: "0 3 * * *", Encryption: enc,
		S3: &v1alpha1.S3Location{Endpoint: "https://s3.example.com", Bucket: "backups", CredentialsSecretRef: corev1.LocalObjectReference{Name: "keys"}}}
	fs.Spec.RestoreFrom = &v1alpha1.RestoreSource{Encryption: enc, Object: "a/b.backup.gz",
		S3: &v1alpha1.S3Location{Endpoint: "https://s3.example.com", Bucket: "backups", CredentialsSecretRef: corev1.LocalObjectReference{Name: "keys"}}}
	for _, p := range []corev1.PodSpec{
		typed[batchv1.CronJob](t, BackupCronJob(fs, in)).Spec.JobTemplate.Spec.Template.Spec,
		typed[batchv1.Job](t, RestoreJob(fs, in)).Spec.Template.Spec,
	} {
		c := p.Containers[0]
		args := strings.Join(c.Args, " ")
		if !strings.HasSuffix(args, " --identity-file "+BackupKeyDir+"/identity") || strings.Contains(args, "--insecure") {
			t.Errorf("%s args %q", c.Name, args)
		}
		var vol *corev1.Volume
		for i := range p.Volumes {
			if p.Volumes[i].Name == "backup-key" {
				vol = &p.Volumes[i]
			}
		}
		if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "backup-age" || len(vol.Secret.Items) != 1 ||
			vol.Secret.Items[0].Key != "key.txt" || vol.Secret.Items[0].Path != "identity" {
			t.Fatalf("%s: the key's volume %+v", c.Name, vol)
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || m.Name == "backup-key" && m.MountPath == BackupKeyDir && m.ReadOnly
		}
		if !mounted {
			t.Errorf("%s mounts %+v", c.Name, c.VolumeMounts)
		}
	}
}

// The backup and restore pods ask for the disk they use (their /tmp and their log), so the scheduler
// places them where it is and the kubelet evicts them rather than a neighbour when they write more (D93).
func TestDataJobs_EphemeralStorage(t *testing.T) {
	fs := withS3Backup(base())
	fs.Spec.RestoreFrom = &v1alpha1.RestoreSource{
		S3:     &v1alpha1.S3Location{Endpoint: "https://s3.example.com", Bucket: "backups", CredentialsSecretRef: corev1.LocalObjectReference{Name: "keys"}},
		Object: "prod/acme/acme-backup-1.backup.gz",
	}
	backup := typed[batchv1.CronJob](t, BackupCronJob(fs, in)).Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	restore := typed[batchv1.Job](t, RestoreJob(fs, in)).Spec.Template.Spec.Containers[0]
	scratch := resource.MustParse(DataScratchLimit)
	for what, c := range map[string]corev1.Container{"backup": backup, "restore": restore} {
		req, ok := c.Resources.Requests[corev1.ResourceEphemeralStorage]
		if !ok || req.Cmp(resource.MustParse("32Mi")) != 0 {
			t.Errorf("%s: ephemeral-storage request %v (set %v), want 32Mi", what, req.String(), ok)
		}
		limit, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]
		if !ok || limit.Cmp(resource.MustParse("128Mi")) != 0 {
			t.Errorf("%s: ephemeral-storage limit %v (set %v), want 128Mi", what, limit.String(), ok)
		}
		if req.Cmp(scratch) < 0 {
			t.Errorf("%s: the request %v does not cover /tmp's %v", what, req.String(), scratch.String())
		}
	}
	// Resources of one's own replace the defaults whole, as spec.services' do.
	fs.Spec.Backup.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	own := typed[batchv1.CronJob](t, BackupCronJob(fs, in)).Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	if _, ok := own.Resources.Requests[corev1.ResourceEphemeralStorage]; ok || own.Resources.Requests.Cpu().String() != "1" {
		t.Errorf("spec.backup.resources %+v, want exactly the spec's", own.Resources)
	}
}

// A private endpoint's CA bundle, server-side encryption and a web identity reach the Jobs as the
// files and variables services/platform/objectstore reads (D93); without them nothing of them is there.
func TestDataJobs_S3Options(t *testing.T) {
	fs := withS3Backup(base())
	fs.Spec.Backup.S3 = &v1alpha1.S3Location{Endpoint: "https://s3.private:9443", Bucket: "backups",
		CABundleRef:          &v1alpha1.SecretKeySelector{Name: "s3-ca", Key: "ca.crt"},
		ServerSideEncryption: &v1alpha1.S3ServerSideEncryption{Type: "aws:kms", KMSKeyID: "alias/backups"},
		WebIdentity:          &v1alpha1.S3WebIdentity{RoleARN: "arn:aws:iam::111122223333:role/backup", STSEndpoint: "https://sts.private:8443"}}
	fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{IngressFrom: []networkingv1.NetworkPolicyPeer{{}}}
	p := typed[batchv1.CronJob](t, BackupCronJob(fs, in)).Spec.JobTemplate.Spec.Template.Spec
	c := p.Containers[0]
	if len(c.EnvFrom) != 0 {
		t.Errorf("envFrom %+v: a web identity has no keys Secret", c.EnvFrom)
	}
	for name, want := range map[string]string{
		"AWS_CA_BUNDLE":                  "/var/run/secrets/formsservice-s3-ca/ca.pem",
		"FORMSSERVICE_S3_SSE":            "aws:kms",
		"FORMSSERVICE_S3_SSE_KMS_KEY_ID": "alias/backups",
		"AWS_WEB_IDENTITY_TOKEN_FILE":    "/var/run/secrets/formsservice-s3-token/token",
		"AWS_ROLE_ARN":                   "arn:aws:iam::111122223333:role/backup",
		"AWS_ENDPOINT_URL_STS":           "https://sts.private:8443",
	} {
		if e := envOf(c, name); e == nil || e.Value != want {
			t.Errorf("%s = %+v, want %q", name, e, want)
		}
	}
	mounted := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounted[m.Name] = m.MountPath
		if (m.Name == "s3-ca" || m.Name == "s3-token") && !m.ReadOnly {
			t.Errorf("%s mounted writable", m.Name)
		}
	}
	if mounted["s3-ca"] != "/var/run/secrets/formsservice-s3-ca" || mounted["s3-token"] != "/var/run/secrets/formsservice-s3-token" {
		t.Errorf("mounts %v", mounted)
	}
	var ca, token bool
	for _, v := range p.Volumes {
		if v.Name == "s3-ca" && v.Secret != nil && v.Secret.SecretName == "s3-ca" && len(v.Secret.Items) == 1 &&
			v.Secret.Items[0].Key == "ca.crt" && v.Secret.Items[0].Path == "ca.pem" {
			ca = true
		}
		if v.Name == "s3-token" && v.Projected != nil && len(v.Projected.Sources) == 1 {
			tp := v.Projected.Sources[0].ServiceAccountToken
			token = tp != nil && tp.Audience == "sts.amazonaws.com" && ptr.Deref(tp.ExpirationSeconds, 0) == 3600 && tp.Path == "token"
		}
	}
	if !ca || !token {
		t.Errorf("the CA bundle (%v) and the projected STS token (%v) volumes: %+v", ca, token, p.Volumes)
	}
	// Only the STS token: the Kubernetes API's stays unmounted.
	if ptr.Deref(p.AutomountServiceAccountToken, true) {
		t.Error("the pod mounts a Kubernetes API token")
	}
	// The CA bundle is checked at once, like the other Secrets of the Jobs; the keys Secret is not asked for.
	var fields []string
	for _, r := range DataSecretRefs(fs) {
		fields = append(fields, r.Field+"="+r.Secret+"/"+r.Key)
		if r.Field == "spec.backup.s3.caBundleRef" && (r.Check == nil || r.Check([]byte("not PEM")) == nil) {
			t.Error("a CA bundle without a certificate passes the check")
		}
	}
	if !slices.Equal(fields, []string{"spec.backup.s3.caBundleRef=s3-ca/ca.crt"}) {
		t.Errorf("checked Secrets %v", fields)
	}
	// The NetworkPolicy lets the pods reach the bucket and STS.
	np := typed[networkingv1.NetworkPolicy](t, DataNetworkPolicy(fs))
	var ports []int32
	for _, e := range np.Spec.Egress {
		for _, p := range e.Ports {
			ports = append(ports, p.Port.IntVal)
		}
	}
	if !slices.Contains(ports, 9443) || !slices.Contains(ports, 8443) {
		t.Errorf("egress ports %v, want the bucket's 9443 and STS's 8443", ports)
	}

	// The default audience and STS; a restore gets the same options.
	fs.Spec.Backup.S3.WebIdentity = &v1alpha1.S3WebIdentity{RoleARN: "arn:aws:iam::111122223333:role/backup", Audience: "sts.example"}
	fs.Spec.RestoreFrom = &v1alpha1.RestoreSource{S3: fs.Spec.Backup.S3, Object: "a.backup.gz"}
	rc := typed[batchv1.Job](t, RestoreJob(fs, in)).Spec.Template.Spec
	if envOf(rc.Containers[0], "AWS_ENDPOINT_URL_STS") != nil || envOf(rc.Containers[0], "AWS_ROLE_ARN") == nil {
		t.Errorf("restore env %+v", rc.Containers[0].Env)
	}
	for _, v := range rc.Volumes {
		if v.Name == "s3-token" && v.Projected.Sources[0].ServiceAccountToken.Audience != "sts.example" {
			t.Errorf("audience %q", v.Projected.Sources[0].ServiceAccountToken.Audience)
		}
	}

	// Static keys: envFrom, and none of the options.
	plain := typed[batchv1.CronJob](t, BackupCronJob(withS3Backup(base()), in)).Spec.JobTemplate.Spec.Template.Spec
	if len(plain.Containers[0].EnvFrom) != 1 {
		t.Errorf("static keys: envFrom %+v", plain.Containers[0].EnvFrom)
	}
	for _, name := range []string{"AWS_CA_BUNDLE", "FORMSSERVICE_S3_SSE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"} {
		if envOf(plain.Containers[0], name) != nil {
			t.Errorf("%s set without its option", name)
		}
	}
}
