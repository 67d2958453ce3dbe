package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// Defaults of the managed Redis.
const (
	// DefaultRedisImage is Valkey 8.1 (BSD 3-Clause; Redis 7.4 and later are under RSALv2/SSPLv1 or
	// AGPLv3), pinned by digest so that what runs is what was tested and an admission policy that
	// requires digests admits it (docs/architecture.md, D32). --redis-image replaces it operator-wide.
	DefaultRedisImage = "docker.io/valkey/valkey:8.1.10-alpine@sha256:d2e18f3410b6f616de1417f570fa55261af2898b9c5b2cfb6781ce2373ea43d1"
	// LegacyRedisImage is what the operator ran before DefaultRedisImage (D32). Redis 7.4 writes its
	// files in RDB format 12, which Valkey 8 cannot read ("Can't handle RDB format version 12"), nor
	// RESTORE its DUMPs: a managed store that runs it, or whose claims record its format, keeps it, and
	// an image the spec or --redis-image names that cannot read it is refused (redisformat.go; D53).
	LegacyRedisImage        = "redis:7.4-alpine"
	DefaultRedisStorageSize = "1Gi"
	// DefaultRedisUID is the valkey user of DefaultRedisImage (and the redis user of the official Redis
	// images). Those images start as root and drop to it in their entrypoint, which the operator does not
	// run, so the pod names the user: runAsNonRoot alone would refuse an image whose user is root.
	DefaultRedisUID = 999

	redisSecretDir = "/etc/redis-secret"
)

// redisConf is the managed Redis's configuration: append-only persistence fsynced before Redis answers
// a write (appendfsync always: one fsync per event-loop turn covers the writes of every client together,
// group commit), which is what the forms service's "machine" durability — the managed Redis's default —
// promises; no eviction (a full store refuses writes instead of dropping waitlist entries); RESTORE
// payloads checked whole before they are loaded (sanitize-dump-payload: a restore from a crafted or
// damaged backup is refused by Redis instead of crashing it later); and the password from the mounted
// Secret.
var redisConf = fmt.Sprintf(`# Rendered by the formsservice operator.
port %d
bind * -::*
dir /data
appendonly yes
appendfsync always
maxmemory-policy noeviction
sanitize-dump-payload yes
include %s/%s
`, RedisPort, redisSecretDir, RedisRequirePassKey)

// RedisConfigMap holds redis.conf for the managed Redis.
func RedisConfigMap(fs *v1alpha1.FormsService) *corev1ac.ConfigMapApplyConfiguration {
	cm := corev1ac.ConfigMap(NamesOf(fs).RedisConfigMap, fs.Namespace).WithData(map[string]string{"redis.conf": redisConfFor(fs)})
	cm.ObjectMetaApplyConfiguration = objectMeta(fs, NamesOf(fs).RedisConfigMap, Redis)
	return cm
}

// redisConfFor is redisConf with maxmemory derived from the container's memory limit. A full Redis then
// refuses writes (the services answer 502, visibly, and the FormsServiceStoreErrors alert fires) instead
// of being OOM-killed by the kernel.
//
// The single Redis: three quarters of the limit, leaving the rest for client buffers and the
// copy-on-write of an append-only file rewrite.
//
// The highly available set (every pod, since any may be the primary): a replica's full resync makes the
// primary fork (copy-on-write of the dataset, as the rewrite does) and also hold the replica's output
// buffer, which Redis does not count against maxmemory, for each of the two replicas at once (both resync
// after a restart of theirs). With the limit L:
//
//	maxmemory                            L/2   the dataset
//	2 replicas × hard output-buffer cap  L/8   (L/16 each, and a replica over L/32 for 60 s is dropped too)
//	fork copy-on-write, process, clients 3L/8  three quarters of the dataset copied while the child runs
//
// Redis's own replica limit (256mb 64mb 60) does not fit a 512Mi container beside a dataset at all. A
// replica that outgrows its cap is disconnected and resyncs again later; the primary stays up.
func redisConfFor(fs *v1alpha1.FormsService) string {
	limit, ok := redisResources(fs).Limits[corev1.ResourceMemory]
	if !ok || limit.Value() <= 0 {
		return redisConf
	}
	l := limit.Value()
	if !RedisHA(fs) {
		return redisConf + fmt.Sprintf("maxmemory %d\n", l/4*3)
	}
	return redisConf + fmt.Sprintf("maxmemory %d\nclient-output-buffer-limit replica %d %d %d\n",
		l/2, l/redisHAReplicaBufferHardDiv, l/redisHAReplicaBufferSoftDiv, redisHAReplicaBufferSoftSeconds)
}

// The highly available Redis's output-buffer limit for each replica, as fractions of the memory limit
// (redisConfFor).
const (
	redisHAReplicaBufferHardDiv     = 16
	redisHAReplicaBufferSoftDiv     = 32
	redisHAReplicaBufferSoftSeconds = 60
)

// redisResources are the managed Redis container's resources: the spec's, or the defaults.
func redisResources(fs *v1alpha1.FormsService) corev1.ResourceRequirements {
	if m := fs.Spec.Redis.Managed; m != nil && m.Resources != nil {
		return *m.Resources
	}
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("50m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
}

// RedisConfigHashAnnotation on the Redis pod template carries a digest of redis.conf: Redis reads it
// only at start-up, so a changed configuration rolls the pod.
const RedisConfigHashAnnotation = "platform.formsservice.io/redis-config-hash"

func redisConfHash(fs *v1alpha1.FormsService) string {
	sum := sha256.Sum256([]byte(redisConfFor(fs)))
	return hex.EncodeToString(sum[:8])
}

// RedisService is the managed Redis's ClusterIP Service (and the StatefulSet's governing Service).
func RedisService(fs *v1alpha1.FormsService) *corev1ac.ServiceApplyConfiguration {
	s := corev1ac.Service(NamesOf(fs).Redis, fs.Namespace).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(SelectorLabels(fs, Redis)).
			WithPorts(corev1ac.ServicePort().WithName("redis").WithPort(RedisPort).WithTargetPort(intstr.FromString("redis")).WithProtocol(corev1.ProtocolTCP)))
	s.ObjectMetaApplyConfiguration = objectMeta(fs, NamesOf(fs).Redis, Redis)
	return s
}

// RedisStatefulSet runs the single managed Redis with a PersistentVolumeClaim. The claim is kept when the
// StatefulSet or the FormsService is deleted: the data outlives a mistake. Redis reads its password at
// start-up, so the digest of the password Secret (from in) restarts it when the Secret changes.
func RedisStatefulSet(fs *v1alpha1.FormsService, in Inputs) *appsv1ac.StatefulSetApplyConfiguration {
	m := fs.Spec.Redis.Managed
	if m == nil {
		m = &v1alpha1.ManagedRedisSpec{}
	}
	image := RedisImage(fs, in)
	size := resource.MustParse(DefaultRedisStorageSize)
	if m.StorageSize != nil {
		size = *m.StorageSize
	}
	n := NamesOf(fs)
	exec := func(period, failures int32, script string) *corev1ac.ProbeApplyConfiguration {
		p := corev1ac.Probe().WithPeriodSeconds(period).WithTimeoutSeconds(3).WithFailureThreshold(failures)
		p.WithExec(corev1ac.ExecAction().WithCommand("sh", "-c", script))
		return p
	}
	liveness := corev1ac.Probe().WithPeriodSeconds(10).WithTimeoutSeconds(3).WithFailureThreshold(6)
	liveness.WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString("redis")))
	password := func(name string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
			WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(n.RedisPassword).WithKey(RedisPasswordKey)))
	}
	container := corev1ac.Container().
		WithName("redis").
		WithImage(image).
		// Valkey's binaries are valkey-server and valkey-cli, Redis's redis-server and redis-cli: the
		// server and the probes take whichever the image has, so --redis-image may name either.
		WithCommand("sh", "-c", `exec "$(command -v valkey-server || command -v redis-server)" /etc/redis/redis.conf`).
		WithPorts(corev1ac.ContainerPort().WithName("redis").WithContainerPort(RedisPort).WithProtocol(corev1.ProtocolTCP)).
		// The CLI in the probes reads the password from the environment (valkey-cli: VALKEYCLI_AUTH,
		// redis-cli: REDISCLI_AUTH), never from its command line.
		WithEnv(password("VALKEYCLI_AUTH"), password("REDISCLI_AUTH")).
		WithResources(applyConfigOf[corev1ac.ResourceRequirementsApplyConfiguration](redisResources(fs))).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("data").WithMountPath("/data"),
			corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/redis").WithReadOnly(true),
			corev1ac.VolumeMount().WithName("secret").WithMountPath(redisSecretDir).WithReadOnly(true),
		).
		// Loading a large append-only file can take a while: the startup probe allows five minutes.
		WithStartupProbe(exec(5, 60, redisPing)).
		WithLivenessProbe(liveness).
		WithReadinessProbe(exec(5, 2, redisPing)).
		WithSecurityContext(containerSecurityContext())
	pod := corev1ac.PodSpec().
		WithContainers(container).
		WithVolumes(
			corev1ac.Volume().WithName("config").WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(n.RedisConfigMap)),
			corev1ac.Volume().WithName("secret").WithSecret(corev1ac.SecretVolumeSource().
				WithSecretName(n.RedisPassword).
				WithItems(corev1ac.KeyToPath().WithKey(RedisRequirePassKey).WithPath(RedisRequirePassKey)).
				WithDefaultMode(secretFileMode(redisRunAsUser(fs, in)))),
		).
		WithServiceAccountName(ServiceAccountName(fs, Redis)).
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(podSecurityContext(redisRunAsUser(fs, in))).
		WithTerminationGracePeriodSeconds(30)
	schedule(pod, fs, in)

	claim := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteOnce).
		WithResources(corev1ac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: size}))
	if m.StorageClassName != nil {
		claim.WithStorageClassName(*m.StorageClassName)
	}
	s := appsv1ac.StatefulSet(n.Redis, fs.Namespace).WithSpec(appsv1ac.StatefulSetSpec().
		WithReplicas(1).
		WithServiceName(n.Redis).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(fs, Redis))).
		WithPersistentVolumeClaimRetentionPolicy(appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
			WithWhenDeleted(appsv1.RetainPersistentVolumeClaimRetentionPolicyType).
			WithWhenScaled(appsv1.RetainPersistentVolumeClaimRetentionPolicyType)).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(Labels(fs, Redis)).
			WithAnnotations(map[string]string{RestartHashAnnotation: in.SecretDigests[n.RedisPassword], RedisConfigHashAnnotation: redisConfHash(fs)}).
			WithSpec(pod)).
		WithVolumeClaimTemplates((&corev1ac.PersistentVolumeClaimApplyConfiguration{}).
			WithName("data").
			WithLabels(Labels(fs, Redis)).
			WithSpec(claim)))
	s.ObjectMetaApplyConfiguration = objectMeta(fs, n.Redis, Redis)
	if RedisHA(fs) {
		redisHAStatefulSet(s, fs, in) // redis_ha.go
	}
	return s
}

// redisPing is the probes' check: the server answers PONG to the CLI the image has.
const redisPing = `[ "$("$(command -v valkey-cli || command -v redis-cli)" ping)" = PONG ]`

// RedisImage is the managed Redis's image: spec.redis.managed.image, else the operator's --redis-image,
// else DefaultRedisImage — except that a store running LegacyRedisImage, or whose claims record a format
// only LegacyRedisImage reads (Inputs.StoreRDBFormat), keeps it while neither names another (switching it
// to Valkey would leave the data unreadable and the store down). An image named that cannot read the
// store is refused by the reconciler (IncompatibleRedisImage), never applied. A store whose FormsService's
// operator upgrade waits, or that pins spec.image, keeps the image it runs unless the spec names one
// (Inputs.KeepRunningRedisImage, D92).
func RedisImage(fs *v1alpha1.FormsService, in Inputs) string {
	if m := fs.Spec.Redis.Managed; m != nil && m.Image != "" {
		return m.Image
	}
	if in.KeepRunningRedisImage && in.RunningRedisImage != "" {
		return in.RunningRedisImage // the operator's Redis image arrives with the upgrade, not before (D92)
	}
	if in.RedisImage != "" && in.RedisImage != DefaultRedisImage {
		return in.RedisImage
	}
	if in.RunningRedisImage == LegacyRedisImage || needsLegacy(in.StoreRDBFormat) {
		return LegacyRedisImage
	}
	return DefaultRedisImage
}

// needsLegacy: the default image cannot read a store of this format, and the legacy one can.
func needsLegacy(format int) bool {
	if format == 0 {
		return false
	}
	def, _ := ImageRDBFormat(DefaultRedisImage)
	legacy, _ := ImageRDBFormat(LegacyRedisImage)
	return !def.Reads(format) && legacy.Reads(format)
}

// redisRunAsUser is the managed Redis's user: spec.redis.managed.runAsUser, else the operator's; 0 is none.
func redisRunAsUser(fs *v1alpha1.FormsService, in Inputs) int64 {
	if m := fs.Spec.Redis.Managed; m != nil && m.RunAsUser != nil {
		return *m.RunAsUser
	}
	if in.RedisRunAsUser != nil {
		return *in.RedisRunAsUser
	}
	return 0
}
