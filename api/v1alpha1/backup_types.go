package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupRequestAnnotation asks for a backup now: each new value (a request id, for example a date or a
// ticket number) makes one backup Job, to spec.backup's target. status.backup reports it.
const BackupRequestAnnotation = "platform.formsservice.io/backup-request"

// Conditions of the data's lifecycle.
const (
	// ConditionBackedUp is True when the last backup succeeded, False when it failed (the reason says
	// which Job, and the next scheduled or requested backup tries again). It is absent without
	// spec.backup, and it never affects Ready.
	ConditionBackedUp = "BackedUp"
	// ConditionRestored is present on a FormsService created with spec.restoreFrom: False while the
	// restore Job waits or runs (the services are not started), True once it succeeded (the services
	// start), and False with reason RestoreFailed (and Stalled) when it failed.
	ConditionRestored = "Restored"
)

// S3Location is an S3-compatible bucket. The Job reads its access keys from CredentialsSecretRef, a
// Secret whose keys are the AWS variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, and optionally
// AWS_REGION or AWS_SESSION_TOKEN), passed whole with envFrom, or assumes WebIdentity's role.
//
// +kubebuilder:validation:XValidation:rule="has(self.credentialsSecretRef) != has(self.webIdentity)",message="s3 needs exactly one of credentialsSecretRef and webIdentity"
// +kubebuilder:validation:XValidation:rule="!has(self.caBundleRef) || self.endpoint.startsWith('https://')",message="caBundleRef needs an https endpoint"
type S3Location struct {
	// Endpoint of the S3 server, e.g. https://s3.eu-west-1.amazonaws.com or http://s3.storage:7070 for a
	// server inside the cluster. Requests are path-style.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/?#@ ]+$')",message="endpoint is scheme://host[:port] with no path, like https://s3.example.com"
	Endpoint string `json:"endpoint"`
	// Bucket name.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	Bucket string `json:"bucket"`
	// Region of the bucket, where the server needs one.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+$`
	Region string `json:"region,omitempty"`
	// CredentialsSecretRef names the Secret with the AWS_* keys, in the FormsService's namespace.
	// Required unless webIdentity is set (backups and restores only).
	// +optional
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef,omitzero"`
	// CABundleRef names a Secret's key holding the PEM CAs that sign an https endpoint's certificate (a
	// private S3 server), checked instead of the system's CAs; mounted as a file (AWS_CA_BUNDLE).
	// Backups and restores only.
	// +optional
	CABundleRef *SecretKeySelector `json:"caBundleRef,omitempty"`
	// ServerSideEncryption asks the server to encrypt every backup it stores (S3's SSE-S3 or SSE-KMS),
	// on top of, or instead of, spec.backup.encryption. Backups only.
	// +optional
	ServerSideEncryption *S3ServerSideEncryption `json:"serverSideEncryption,omitempty"`
	// WebIdentity replaces static keys: the pod's projected ServiceAccount token is traded at STS for
	// the role's temporary keys (AssumeRoleWithWebIdentity, as EKS's IRSA does). Backups and restores
	// only.
	// +optional
	WebIdentity *S3WebIdentity `json:"webIdentity,omitempty"`
}

// S3ServerSideEncryption is the encryption S3 applies to what it stores.
//
// +kubebuilder:validation:XValidation:rule="!has(self.kmsKeyID) || self.type == 'aws:kms'",message="kmsKeyID is for type aws:kms"
type S3ServerSideEncryption struct {
	// Type is AES256 (SSE-S3: keys the server manages) or aws:kms (SSE-KMS).
	// +kubebuilder:validation:Enum=AES256;aws:kms
	Type string `json:"type"`
	// KMSKeyID is the KMS key of aws:kms (an id, an ARN or an alias); default the bucket's key.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^[-A-Za-z0-9:/_.]+$`
	KMSKeyID string `json:"kmsKeyID,omitempty"`
}

// S3WebIdentity is a role the backup and restore pods assume with their ServiceAccount's token. The
// role's trust policy names the cluster's OIDC issuer and the subject
// system:serviceaccount:<namespace>:<name>-backup.
type S3WebIdentity struct {
	// RoleARN is the role to assume, e.g. arn:aws:iam::111122223333:role/formsservice-backup.
	// +kubebuilder:validation:MinLength=20
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^arn:[-a-z]+:iam::[0-9]{12}:role/[-A-Za-z0-9+=,.@_/]+$`
	RoleARN string `json:"roleARN"`
	// Audience of the projected token, what STS expects (default sts.amazonaws.com).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Audience string `json:"audience,omitempty"`
	// STSEndpoint is the STS to ask (AWS_ENDPOINT_URL_STS); default the region's, sts.<region>.amazonaws.com.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^https://[^/?#@ ]+$')",message="stsEndpoint is https://host[:port] with no path"
	STSEndpoint string `json:"stsEndpoint,omitempty"`
}

// VolumeLocation is a PersistentVolumeClaim the operator does not manage (create it yourself; a
// ReadWriteMany claim lets a backup run on any node). The Job mounts it at /backup.
type VolumeLocation struct {
	// ClaimName of the PersistentVolumeClaim, in the FormsService's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName"`
}

// BackupSpec makes backups of the whole store (formsservice backup, docs/architecture.md D39) on a
// schedule and on request (BackupRequestAnnotation), to one target: a bucket or a volume. A second copy
// elsewhere is the bucket's replication, or a second FormsService-independent job: one backup has one
// place, so a failure says which.
//
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.volume)",message="backup needs exactly one target: s3 or volume"
type BackupSpec struct {
	// Schedule in cron format ("0 3 * * *": every day at 03:00 in timeZone). Empty: backups only on
	// request.
	// +optional
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every [0-9]+[smh]|[^ ]+ [^ ]+ [^ ]+ [^ ]+ [^ ]+)$')",message="schedule is five cron fields (minute hour day-of-month month day-of-week), like 0 3 * * *, or @daily, @hourly, …"
	Schedule string `json:"schedule,omitempty"`
	// TimeZone of the schedule, an IANA name such as Europe/Berlin; default the controller manager's
	// (usually UTC).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone *string `json:"timeZone,omitempty"`
	// Suspend stops scheduled backups (requested ones still run).
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// S3 writes each backup to this bucket, as the object <prefix><job name>.backup.gz.
	// +optional
	S3 *S3Location `json:"s3,omitempty"`
	// Volume writes each backup to this claim, as the file /backup/<prefix><job name>.backup.gz.
	// +optional
	Volume *VolumeLocation `json:"volume,omitempty"`
	// Prefix of every backup's name: a folder ("site/") or a name's beginning. Default: the
	// FormsService's namespace and name ("<namespace>/<name>/").
	// +optional
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:XValidation:rule="self.matches('^([A-Za-z0-9][-A-Za-z0-9._]*/)*[-A-Za-z0-9._]*$') && !self.matches('(^|/)[.][.]?(/|$)')",message="prefix is folders and a name's beginning of letters, digits, '-', '.' and '_', each folder ending in / (like backups/site/), without . or .. folders"
	Prefix *string `json:"prefix,omitempty"`
	// Resources of the backup container. Default: requests 50m CPU, 64Mi memory and 32Mi
	// ephemeral-storage, limits 512Mi memory and 128Mi ephemeral-storage (a restore holds one value at
	// a time; a backup streams; the disk holds the log and a /tmp of at most 16Mi).
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Encryption encrypts and authenticates every backup with age to a key the team keeps. Without it
	// the files are clear, and a restore of one must be told it may read a clear file.
	// +optional
	Encryption *BackupEncryption `json:"encryption,omitempty"`
}

// BackupEncryption names the age key of the backups (docs/operator.md "Encrypted backups").
type BackupEncryption struct {
	// IdentitySecretRef names the Secret key holding an age identity, as age-keygen writes it
	// (AGE-SECRET-KEY-1…). Backups are encrypted to its public key; a restore reads them with it. Keep
	// a copy outside the cluster: without it no backup can be read.
	IdentitySecretRef SecretKeySelector `json:"identitySecretRef"`
}

// RestoreSource is the backup a new FormsService starts from: an object in a bucket, or a file in a
// volume.
//
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.volume)",message="restoreFrom needs exactly one source: s3 or volume"
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="restoreFrom cannot change; it is read once, when the FormsService is created"
type RestoreSource struct {
	// S3 holds the backup as the object Object.
	// +optional
	S3 *S3Location `json:"s3,omitempty"`
	// Volume holds the backup as the file /backup/<object>.
	// +optional
	Volume *VolumeLocation `json:"volume,omitempty"`
	// Object is the backup's key in the bucket or its path in the volume, e.g.
	// site/site-backup-29412345.backup.gz (status.backup.lastSuccessful.object of the old resource).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9][-A-Za-z0-9._/]*$') && !self.matches('(^|/)[.][.]?(/|$)') && !self.endsWith('/')",message="object is a key or path of letters, digits, '-', '.', '_' and '/', without . or .. folders"
	Object string `json:"object"`
	// Encryption is the age key the backup was encrypted to. Without it only a clear backup is read
	// (an encrypted one is refused, and so is nothing else).
	// +optional
	Encryption *BackupEncryption `json:"encryption,omitempty"`
	// KeepSessions keeps the sign-in sessions and grants (refresh tokens) the backup holds. By default
	// the restore signs every account out everywhere, since some of them may have been ended or revoked
	// after the backup was made; set it for a disaster recovery where signing everyone out costs more
	// than it protects (docs/operator.md, "A new FormsService from a backup").
	// +optional
	KeepSessions bool `json:"keepSessions,omitempty"`
}

// Outcomes of a backup or restore Job.
const (
	JobRunning   = "Running"
	JobSucceeded = "Succeeded"
	JobFailed    = "Failed"
)

// BackupRun is one backup Job, as the operator last saw it.
type BackupRun struct {
	// Job that runs (or ran) it.
	Job string `json:"job"`
	// Object is the backup's name at the target: its key in the bucket, or its path in the volume.
	Object string `json:"object"`
	// Outcome is Running, Succeeded or Failed.
	Outcome string `json:"outcome"`
	// Request is the backup-request annotation's value that asked for it; empty for a scheduled one.
	// +optional
	Request string `json:"request,omitempty"`
	// StartTime and CompletionTime of the Job.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message says why a failed Job failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// BackupStatus reports the backups.
type BackupStatus struct {
	// CronJob runs the scheduled backups.
	// +optional
	CronJob string `json:"cronJob,omitempty"`
	// LastRequest is the last backup-request annotation value a Job was made for: a request is
	// answered once.
	// +optional
	LastRequest string `json:"lastRequest,omitempty"`
	// Last is the newest backup Job, running or done.
	// +optional
	Last *BackupRun `json:"last,omitempty"`
	// LastSuccessful is the newest backup that succeeded: the one to restore from.
	// +optional
	LastSuccessful *BackupRun `json:"lastSuccessful,omitempty"`
}
