package render

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/backup"
)

// The data's Jobs: backups (scheduled and requested) and the restore of a new FormsService. Each runs the
// services' image as `formsservice backup` or `formsservice restore` (docs/architecture.md D39, D40),
// with the health service's configuration and Secrets: they hold the store's address, password and CA,
// and nothing else.
const (
	Backup  = "backup"
	Restore = "restore"

	// BackupDir is where a backup or restore Job mounts spec.backup.volume or spec.restoreFrom.volume.
	BackupDir = "/backup"
	// BackupSuffix ends every backup's name.
	BackupSuffix = ".backup.gz"
	// backupNameVar is the container's variable that holds the Job's name: Kubernetes expands $(VAR) in
	// the arguments, so a scheduled Job writes to a name the operator knows from the Job alone.
	backupNameVar = "BACKUP_NAME"
	// backupUIDVar holds the Job's UID, which makes a backup's name unique: a request id used again, or
	// a FormsService deleted and created again under its name, gives a Job of the same name, and its
	// backup must not overwrite the older one (D91).
	backupUIDVar = "BACKUP_JOB_UID"
	// JobNameLabel and JobUIDLabel are the labels the Job controller puts on a Job's pods.
	JobNameLabel = "batch.kubernetes.io/job-name"
	JobUIDLabel  = "batch.kubernetes.io/controller-uid"
	// RequestAnnotation on a requested backup's Job holds the request id it answers.
	RequestAnnotation = v1alpha1.BackupRequestAnnotation
)

// BackupCronJobName is the CronJob of the scheduled backups (at most 52 characters, the CronJob limit:
// the FormsService's name has at most 40).
func BackupCronJobName(fs *v1alpha1.FormsService) string { return fs.Name + "-backup" }

// BackupRequestJobName is the Job of one requested backup: the same request always names the same Job,
// so a request is answered once however often it is reconciled.
func BackupRequestJobName(fs *v1alpha1.FormsService, request string) string {
	sum := sha256.Sum256([]byte(request))
	return fs.Name + "-backup-" + hex.EncodeToString(sum[:4])
}

// RestoreJobName is the Job that fills a new FormsService's store from spec.restoreFrom.
func RestoreJobName(fs *v1alpha1.FormsService) string { return fs.Name + "-restore" }

// DataSecretRefs are the Secrets the backup and restore Jobs read: a bucket's credentials (the whole
// Secret, passed with envFrom: Key "") and the age identity of an encryption. The reconciler checks them
// at once, so that a typo shows as a condition now, not as a failed Job in an hour (or a restore that
// waits with the services stopped).
func DataSecretRefs(fs *v1alpha1.FormsService) []SecretRef {
	var refs []SecretRef
	add := func(field string, s3 *v1alpha1.S3Location, enc *v1alpha1.BackupEncryption) {
		if s3 != nil && s3.CredentialsSecretRef.Name != "" {
			refs = append(refs, SecretRef{Secret: s3.CredentialsSecretRef.Name, Field: field + ".s3.credentialsSecretRef"})
		}
		if s3 != nil && s3.CABundleRef != nil {
			refs = append(refs, SecretRef{Secret: s3.CABundleRef.Name, Key: s3.CABundleRef.Key,
				Field: field + ".s3.caBundleRef", Check: checkCABundle})
		}
		if enc != nil {
			refs = append(refs, SecretRef{Secret: enc.IdentitySecretRef.Name, Key: enc.IdentitySecretRef.Key,
				Field: field + ".encryption.identitySecretRef", Check: checkAgeIdentity})
		}
	}
	if b := fs.Spec.Backup; b != nil {
		add("spec.backup", b.S3, b.Encryption)
	}
	if r := fs.Spec.RestoreFrom; r != nil {
		add("spec.restoreFrom", r.S3, r.Encryption)
	}
	return refs
}

// checkAgeIdentity is what `formsservice backup|restore --identity-file` would refuse.
func checkAgeIdentity(value []byte) error {
	_, err := backup.ParseIdentities(string(value))
	return err
}

// Where a backup or restore Job finds spec.*.s3.caBundleRef and the projected token of
// spec.*.s3.webIdentity (D93).
const (
	S3CADir            = "/var/run/secrets/formsservice-s3-ca"
	s3CAFile           = "ca.pem"
	S3TokenDir         = "/var/run/secrets/formsservice-s3-token"
	s3TokenFile        = "token"
	DefaultSTSAudience = "sts.amazonaws.com"
	// s3TokenSeconds is the projected token's life; the kubelet renews it at 80 %, and the S3 client
	// reads the file again whenever its keys near their end.
	s3TokenSeconds = 3600
)

// BackupKeyDir is where a backup or restore Job mounts the age identity of spec.backup.encryption or
// spec.restoreFrom.encryption.
const (
	BackupKeyDir  = "/var/run/secrets/formsservice-backup-key"
	backupKeyFile = "identity"
)

// encryptionArgs are the CLI's flags for a backup's encryption: a backup encrypts to the identity's
// public key; a restore reads with it, or, without one, is told that it may read a clear file (the
// operator's own backups are clear unless spec.backup.encryption is set).
func encryptionArgs(component string, enc *v1alpha1.BackupEncryption) []string {
	switch {
	case enc != nil:
		return []string{"--identity-file", BackupKeyDir + "/" + backupKeyFile}
	case component == Restore:
		return []string{"--insecure"}
	}
	return nil
}

// BackupPrefix is where the backups go at the target: spec.backup.prefix, else "<namespace>/<name>/".
func BackupPrefix(fs *v1alpha1.FormsService) string {
	if b := fs.Spec.Backup; b != nil && b.Prefix != nil {
		return *b.Prefix
	}
	return fs.Namespace + "/" + fs.Name + "/"
}

// BackupObject is the key in the bucket, or the path in the volume, of the backup a Job writes:
// <prefix><job name>-<job UID>.backup.gz.
func BackupObject(fs *v1alpha1.FormsService, j *batchv1.Job) string {
	return BackupPrefix(fs) + j.Name + "-" + string(j.UID) + BackupSuffix
}

// backupLocation is the argument of --to or --from: an s3:// location or a file under BackupDir.
func backupLocation(s3 *v1alpha1.S3Location, object string) string {
	if s3 != nil {
		return "s3://" + s3.Bucket + "/" + object
	}
	return BackupDir + "/" + object
}

// BackupCronJob runs the scheduled backups; nil when spec.backup has no schedule. Only one runs at a
// time, and the last three successful and three failed Jobs are kept for their status and logs.
func BackupCronJob(fs *v1alpha1.FormsService, in Inputs) *batchv1ac.CronJobApplyConfiguration {
	b := fs.Spec.Backup
	if b == nil || b.Schedule == "" {
		return nil
	}
	name := BackupCronJobName(fs)
	spec := batchv1ac.CronJobSpec().
		WithSchedule(b.Schedule).
		WithSuspend(b.Suspend).
		WithConcurrencyPolicy(batchv1.ForbidConcurrent).
		// A backup missed by more than an hour (the controller was down) is skipped, not run late.
		WithStartingDeadlineSeconds(3600).
		WithSuccessfulJobsHistoryLimit(3).
		WithFailedJobsHistoryLimit(3).
		WithJobTemplate(batchv1ac.JobTemplateSpec().
			WithLabels(Labels(fs, Backup)).
			WithSpec(backupJobSpec(fs, in)))
	if b.TimeZone != nil {
		spec.WithTimeZone(*b.TimeZone)
	}
	c := batchv1ac.CronJob(name, fs.Namespace).WithSpec(spec)
	c.ObjectMetaApplyConfiguration = objectMeta(fs, name, Backup)
	return c
}

// BackupRequestJob is the Job of one requested backup (BackupRequestAnnotation); nil without spec.backup.
func BackupRequestJob(fs *v1alpha1.FormsService, in Inputs, request string) *batchv1ac.JobApplyConfiguration {
	if fs.Spec.Backup == nil || request == "" {
		return nil
	}
	name := BackupRequestJobName(fs, request)
	j := batchv1ac.Job(name, fs.Namespace).WithSpec(backupJobSpec(fs, in))
	j.ObjectMetaApplyConfiguration = objectMeta(fs, name, Backup).WithAnnotations(map[string]string{RequestAnnotation: request})
	return j
}

// backupJobSpec tries a backup three times (a backup only reads the store, so another try is safe) within
// an hour, and keeps the finished Job a week for its status and logs (a scheduled one: until the
// CronJob's history drops it).
func backupJobSpec(fs *v1alpha1.FormsService, in Inputs) *batchv1ac.JobSpecApplyConfiguration {
	b := fs.Spec.Backup
	to := backupLocation(b.S3, BackupPrefix(fs)+"$("+backupNameVar+")-$("+backupUIDVar+")"+BackupSuffix)
	return batchv1ac.JobSpec().
		WithBackoffLimit(2).
		WithActiveDeadlineSeconds(3600).
		WithTTLSecondsAfterFinished(7 * 24 * 3600).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(Labels(fs, Backup)).
			WithSpec(dataPod(fs, in, Backup, b.S3, b.Volume, b.Resources, b.Encryption,
				append([]string{"backup", "--config", ConfigPath, "--to", to}, encryptionArgs(Backup, b.Encryption)...)...)))
}

// RestoreJob fills the new platform's store from spec.restoreFrom. A try that fails (a lost connection,
// a killed pod) is run again, up to RestoreRetries times: a restore interrupted halfway finishes on the
// next try (backup.MarkerKey), and one refused (a damaged file, too little memory) is refused again at
// once, before it writes. The Job stays for its logs. Nil without spec.restoreFrom.
func RestoreJob(fs *v1alpha1.FormsService, in Inputs) *batchv1ac.JobApplyConfiguration {
	r := fs.Spec.RestoreFrom
	if r == nil {
		return nil
	}
	name := RestoreJobName(fs)
	from := backupLocation(r.S3, r.Object)
	j := batchv1ac.Job(name, fs.Namespace).WithSpec(batchv1ac.JobSpec().
		WithBackoffLimit(RestoreRetries).
		WithActiveDeadlineSeconds(6 * 3600).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(Labels(fs, Restore)).
			WithSpec(dataPod(fs, in, Restore, r.S3, r.Volume, nil, r.Encryption,
				restoreArgs(r, from)...))))
	j.ObjectMetaApplyConfiguration = objectMeta(fs, name, Restore)
	return j
}

// RestoreRetries is the restore Job's backoffLimit (D91).
const RestoreRetries = 2

// restoreArgs are the restore Job's command line.
func restoreArgs(r *v1alpha1.RestoreSource, from string) []string {
	args := append([]string{"restore", "--config", ConfigPath, "--from", from}, encryptionArgs(Restore, r.Encryption)...)
	if r.KeepSessions {
		args = append(args, "--keep-sessions")
	}
	return args
}

// DataScratchLimit bounds the backup and restore pods' /tmp: they stream, and keep no copy of a backup.
const DataScratchLimit = "16Mi"

// DataEphemeralStorage is what the backup and restore pods ask of the node's disk (D93): the bounded
// /tmp (DataScratchLimit) and the container's log, which the kubelet counts too. The limit leaves
// room for a long log; a pod that writes more is evicted instead of filling the node.
const (
	DataEphemeralStorageRequest = "32Mi"
	DataEphemeralStorageLimit   = "128Mi"
)

// DefaultBackupResources are the backup and restore container's resources when spec.backup.resources
// is not set.
func DefaultBackupResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("50m"),
			corev1.ResourceMemory:           resource.MustParse("64Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse(DataEphemeralStorageRequest),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceMemory:           resource.MustParse("512Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse(DataEphemeralStorageLimit),
		},
	}
}

// dataPod is the pod of a backup or restore Job: the services' image and security context, the health
// service's configuration and Secrets (the store's address, password and CA), the bucket's endpoint and
// credentials or the volume, and a scratch folder for the file on its way to or from the bucket.
func dataPod(fs *v1alpha1.FormsService, in Inputs, component string, s3 *v1alpha1.S3Location, vol *v1alpha1.VolumeLocation,
	res *corev1.ResourceRequirements, enc *v1alpha1.BackupEncryption, args ...string) *corev1ac.PodSpecApplyConfiguration {
	resources := DefaultBackupResources()
	if res != nil {
		resources = *res
	}
	volumes := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName("config").WithConfigMap(corev1ac.ConfigMapVolumeSource().
			WithName(NamesOf(fs).ConfigMap).
			WithItems(corev1ac.KeyToPath().WithKey(ConfigKey(Health)).WithPath("config.yaml"))),
		// A backup streams to its bucket and a restore reads the object from it (twice), so nothing big
		// is written here: the read-only root's /tmp, bounded (D91).
		corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(resource.MustParse(DataScratchLimit))),
	}
	mounts := []*corev1ac.VolumeMountApplyConfiguration{
		corev1ac.VolumeMount().WithName("config").WithMountPath(ConfigDir).WithReadOnly(true),
		corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"),
	}
	uid := ptr.Deref(fs.Spec.RunAsUser, 0)
	for _, m := range secretMounts(fs, Health) {
		src := corev1ac.SecretVolumeSource().WithSecretName(m.Secret).WithDefaultMode(secretFileMode(uid))
		for _, k := range m.Keys {
			src.WithItems(corev1ac.KeyToPath().WithKey(k).WithPath(k))
		}
		name := secretVolumeName(m.Secret)
		volumes = append(volumes, corev1ac.Volume().WithName(name).WithSecret(src))
		mounts = append(mounts, corev1ac.VolumeMount().WithName(name).WithMountPath(SecretsDir+"/"+m.Secret).WithReadOnly(true))
	}
	if enc != nil {
		volumes = append(volumes, corev1ac.Volume().WithName("backup-key").WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(enc.IdentitySecretRef.Name).WithDefaultMode(secretFileMode(uid)).
			WithItems(corev1ac.KeyToPath().WithKey(enc.IdentitySecretRef.Key).WithPath(backupKeyFile))))
		mounts = append(mounts, corev1ac.VolumeMount().WithName("backup-key").WithMountPath(BackupKeyDir).WithReadOnly(true))
	}
	if vol != nil {
		volumes = append(volumes, corev1ac.Volume().WithName("backup").WithPersistentVolumeClaim(
			corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(vol.ClaimName).WithReadOnly(component == Restore)))
		mounts = append(mounts, corev1ac.VolumeMount().WithName("backup").WithMountPath(BackupDir).WithReadOnly(component == Restore))
	}
	env := []*corev1ac.EnvVarApplyConfiguration{
		corev1ac.EnvVar().WithName(backupNameVar).WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.labels['" + JobNameLabel + "']"))),
		corev1ac.EnvVar().WithName(backupUIDVar).WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.labels['" + JobUIDLabel + "']"))),
	}
	container := corev1ac.Container().
		WithName(component).
		WithImage(Image(fs, in)).
		WithArgs(args...).
		WithResources(applyConfigOf[corev1ac.ResourceRequirementsApplyConfiguration](resources)).
		WithVolumeMounts(mounts...).
		// The CLI's last words (why a restore was refused) are the pod's termination message.
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithSecurityContext(containerSecurityContext())
	if s3 != nil {
		env = append(env, corev1ac.EnvVar().WithName("AWS_ENDPOINT_URL_S3").WithValue(s3.Endpoint))
		if s3.Region != "" {
			env = append(env, corev1ac.EnvVar().WithName("AWS_REGION").WithValue(s3.Region))
		}
		if s3.CredentialsSecretRef.Name != "" {
			container.WithEnvFrom(corev1ac.EnvFromSource().WithSecretRef(corev1ac.SecretEnvSource().WithName(s3.CredentialsSecretRef.Name)))
		}
		v, m, e := s3Options(s3, uid)
		volumes, env = append(volumes, v...), append(env, e...)
		container.WithVolumeMounts(m...)
	}
	container.WithEnv(env...)
	if fs.Spec.ImagePullPolicy != "" {
		container.WithImagePullPolicy(fs.Spec.ImagePullPolicy)
	}
	sc := podSecurityContext(uid)
	if vol != nil && uid == 0 {
		// A fresh volume's root folder is root's: the group lets the image's user write its backups.
		sc.WithFSGroup(ImageUID).WithFSGroupChangePolicy(corev1.FSGroupChangeOnRootMismatch)
	}
	pod := corev1ac.PodSpec().
		WithRestartPolicy(corev1.RestartPolicyNever).
		WithContainers(container).
		WithVolumes(volumes...).
		WithServiceAccountName(DataServiceAccountName(fs)).
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(sc)
	schedule(pod, fs, in)
	return pod
}

// DataServiceAccountName is the ServiceAccount of the backup and restore pods.
func DataServiceAccountName(fs *v1alpha1.FormsService) string { return ServiceAccountName(fs, Backup) }

// DataJobsWanted reports whether fs runs backup or restore Jobs (and so needs their ServiceAccount
// and NetworkPolicy).
func DataJobsWanted(fs *v1alpha1.FormsService) bool {
	return fs.Spec.Backup != nil || fs.Spec.RestoreFrom != nil
}

// DataServiceAccount is the identity of the backup and restore pods, without a token: they talk to the
// store and the bucket, never to the Kubernetes API.
func DataServiceAccount(fs *v1alpha1.FormsService) *corev1ac.ServiceAccountApplyConfiguration {
	name := DataServiceAccountName(fs)
	sa := corev1ac.ServiceAccount(name, fs.Namespace).WithAutomountServiceAccountToken(false)
	sa.ObjectMetaApplyConfiguration = objectMeta(fs, name, Backup)
	return sa
}

// dataJobPeers select the backup and restore pods, for the managed Redis's NetworkPolicy.
func dataJobPeers(fs *v1alpha1.FormsService) []*networkingv1ac.NetworkPolicyPeerApplyConfiguration {
	if !DataJobsWanted(fs) {
		return nil
	}
	return []*networkingv1ac.NetworkPolicyPeerApplyConfiguration{podsOf(fs, Backup), podsOf(fs, Restore)}
}

// DataNetworkPolicyName names the NetworkPolicy of the backup and restore pods.
func DataNetworkPolicyName(fs *v1alpha1.FormsService) string { return fs.Name + "-data-jobs" }

// DataNetworkPolicy fences the backup and restore pods when spec.networkPolicy is on: no ingress; egress
// to DNS, the store (as the services reach it) and the bucket's endpoint port (any address: a host
// name cannot be selected). Nil when policies are off or no Job is wanted.
func DataNetworkPolicy(fs *v1alpha1.FormsService) *networkingv1ac.NetworkPolicyApplyConfiguration {
	if !NetworkPoliciesEnabled(fs) || !DataJobsWanted(fs) {
		return nil
	}
	egress := []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration{networkingv1ac.NetworkPolicyEgressRule().WithPorts(
		networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolUDP).WithPort(intstr.FromInt32(53)),
		networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt32(53)),
	)}
	egress = append(egress, redisEgress(fs)...)
	var ports []int
	for _, s3 := range dataBuckets(fs) {
		ports = appendPort(ports, urlPort(s3.Endpoint))
		if wi := s3.WebIdentity; wi != nil {
			// STS, where the token is traded for keys: the region's (443) or the one named.
			ports = appendPort(ports, urlPort(cmp.Or(wi.STSEndpoint, "https://sts.amazonaws.com")))
		}
	}
	egress = append(egress, anyAddressOn(ports)...)
	name := DataNetworkPolicyName(fs)
	np := networkingv1ac.NetworkPolicy(name, fs.Namespace).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchExpressions(
				metav1ac.LabelSelectorRequirement().WithKey(LabelInstance).WithOperator(metav1.LabelSelectorOpIn).WithValues(fs.Name),
				metav1ac.LabelSelectorRequirement().WithKey(LabelName).WithOperator(metav1.LabelSelectorOpIn).WithValues("formsservice"),
				metav1ac.LabelSelectorRequirement().WithKey(LabelComponent).WithOperator(metav1.LabelSelectorOpIn).WithValues(Backup, Restore))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress).
			WithEgress(egress...))
	np.ObjectMetaApplyConfiguration = objectMeta(fs, name, Backup)
	return np
}

// dataBuckets are the buckets the backup and restore Jobs reach.
func dataBuckets(fs *v1alpha1.FormsService) []*v1alpha1.S3Location {
	var out []*v1alpha1.S3Location
	if b := fs.Spec.Backup; b != nil && b.S3 != nil {
		out = append(out, b.S3)
	}
	if r := fs.Spec.RestoreFrom; r != nil && r.S3 != nil {
		out = append(out, r.S3)
	}
	return out
}

// BackupJobRequest is the request id a requested backup's Job answers ("" for a scheduled one).
func BackupJobRequest(j *batchv1.Job) string { return j.Annotations[RequestAnnotation] }

// IsBackupJobOf reports whether j is one of fs's backup Jobs (requested or scheduled).
func IsBackupJobOf(fs *v1alpha1.FormsService, j *batchv1.Job) bool {
	return j.Labels[LabelInstance] == fs.Name && j.Labels[LabelComponent] == Backup &&
		strings.HasPrefix(j.Name, BackupCronJobName(fs)+"-")
}

// s3Options are the volumes, mounts and environment of a bucket's CA bundle, server-side encryption and
// web identity (D93), read by services/platform/objectstore.
func s3Options(s3 *v1alpha1.S3Location, uid int64) ([]*corev1ac.VolumeApplyConfiguration, []*corev1ac.VolumeMountApplyConfiguration, []*corev1ac.EnvVarApplyConfiguration) {
	var (
		volumes []*corev1ac.VolumeApplyConfiguration
		mounts  []*corev1ac.VolumeMountApplyConfiguration
		env     []*corev1ac.EnvVarApplyConfiguration
	)
	if ca := s3.CABundleRef; ca != nil {
		volumes = append(volumes, corev1ac.Volume().WithName("s3-ca").WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(ca.Name).WithDefaultMode(secretFileMode(uid)).
			WithItems(corev1ac.KeyToPath().WithKey(ca.Key).WithPath(s3CAFile))))
		mounts = append(mounts, corev1ac.VolumeMount().WithName("s3-ca").WithMountPath(S3CADir).WithReadOnly(true))
		env = append(env, corev1ac.EnvVar().WithName("AWS_CA_BUNDLE").WithValue(S3CADir+"/"+s3CAFile))
	}
	if sse := s3.ServerSideEncryption; sse != nil {
		env = append(env, corev1ac.EnvVar().WithName("FORMSSERVICE_S3_SSE").WithValue(sse.Type))
		if sse.KMSKeyID != "" {
			env = append(env, corev1ac.EnvVar().WithName("FORMSSERVICE_S3_SSE_KMS_KEY_ID").WithValue(sse.KMSKeyID))
		}
	}
	if wi := s3.WebIdentity; wi != nil {
		audience := wi.Audience
		if audience == "" {
			audience = DefaultSTSAudience
		}
		// A token of its own, for STS only: the pod still mounts no token for the Kubernetes API.
		volumes = append(volumes, corev1ac.Volume().WithName("s3-token").WithProjected(corev1ac.ProjectedVolumeSource().
			WithDefaultMode(secretFileMode(uid)).
			WithSources(corev1ac.VolumeProjection().WithServiceAccountToken(corev1ac.ServiceAccountTokenProjection().
				WithAudience(audience).WithExpirationSeconds(s3TokenSeconds).WithPath(s3TokenFile)))))
		mounts = append(mounts, corev1ac.VolumeMount().WithName("s3-token").WithMountPath(S3TokenDir).WithReadOnly(true))
		env = append(env,
			corev1ac.EnvVar().WithName("AWS_WEB_IDENTITY_TOKEN_FILE").WithValue(S3TokenDir+"/"+s3TokenFile),
			corev1ac.EnvVar().WithName("AWS_ROLE_ARN").WithValue(wi.RoleARN))
		if wi.STSEndpoint != "" {
			env = append(env, corev1ac.EnvVar().WithName("AWS_ENDPOINT_URL_STS").WithValue(wi.STSEndpoint))
		}
	}
	return volumes, mounts, env
}
