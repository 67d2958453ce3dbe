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
	DefaultRedisImage       = "redis:7.4-alpine"
	DefaultRedisStorageSize = "1Gi"
	// RedisUID is the redis user of the official image.
	RedisUID = 999

	redisSecretDir = "/etc/redis-secret"
)

// redisConf is the managed Redis's configuration: append-only persistence fsynced before Redis answers
// a write (appendfsync always: one fsync per event-loop turn covers the writes of every client together,
// group commit), which is what the forms service's "machine" durability — the managed Redis's default —
// promises; no eviction (a full store refuses writes instead of dropping waitlist entries); and the
// password from the mounted Secret.
var redisConf = fmt.Sprintf(`# Rendered by the formsservice operator.
port %d
bind * -::*
dir /data
appendonly yes
appendfsync always
maxmemory-policy noeviction
include %s/%s
`, RedisPort, redisSecretDir, RedisRequirePassKey)

// RedisConfigMap holds redis.conf for the managed Redis.
func RedisConfigMap(fs *v1alpha1.FormsService) *corev1ac.ConfigMapApplyConfiguration {
	cm := corev1ac.ConfigMap(NamesOf(fs).RedisConfigMap, fs.Namespace).WithData(map[string]string{"redis.conf": redisConfFor(fs)})
	cm.ObjectMetaApplyConfiguration = objectMeta(fs, NamesOf(fs).RedisConfigMap, Redis)
	return cm
}

// redisConfFor is redisConf with maxmemory derived from the container's memory limit: three quarters of
// it, leaving the rest for client buffers, replication and the copy-on-write of an append-only file
// rewrite. A full Redis then refuses writes (the services answer 502, visibly, and the
// FormsServiceStoreErrors alert fires) instead of being OOM-killed by the kernel.
func redisConfFor(fs *v1alpha1.FormsService) string {
	limit, ok := redisResources(fs).Limits[corev1.ResourceMemory]
	if !ok || limit.Value() <= 0 {
		return redisConf
	}
	return redisConf + fmt.Sprintf("maxmemory %d\n", limit.Value()/4*3)
}

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
	image := m.Image
	if image == "" {
		image = DefaultRedisImage
	}
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
	container := corev1ac.Container().
		WithName("redis").
		WithImage(image).
		WithCommand("redis-server", "/etc/redis/redis.conf").
		WithPorts(corev1ac.ContainerPort().WithName("redis").WithContainerPort(RedisPort).WithProtocol(corev1.ProtocolTCP)).
		// redis-cli in the probes reads the password from REDISCLI_AUTH.
		WithEnv(corev1ac.EnvVar().WithName("REDISCLI_AUTH").WithValueFrom(corev1ac.EnvVarSource().
			WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(n.RedisPassword).WithKey(RedisPasswordKey)))).
		WithResources(applyConfigOf[corev1ac.ResourceRequirementsApplyConfiguration](redisResources(fs))).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("data").WithMountPath("/data"),
			corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/redis").WithReadOnly(true),
			corev1ac.VolumeMount().WithName("secret").WithMountPath(redisSecretDir).WithReadOnly(true),
		).
		// Loading a large append-only file can take a while: the startup probe allows five minutes.
		WithStartupProbe(exec(5, 60, `[ "$(redis-cli ping)" = PONG ]`)).
		WithLivenessProbe(liveness).
		WithReadinessProbe(exec(5, 2, `[ "$(redis-cli ping)" = PONG ]`)).
		WithSecurityContext(containerSecurityContext())
	pod := corev1ac.PodSpec().
		WithContainers(container).
		WithVolumes(
			corev1ac.Volume().WithName("config").WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(n.RedisConfigMap)),
			corev1ac.Volume().WithName("secret").WithSecret(corev1ac.SecretVolumeSource().
				WithSecretName(n.RedisPassword).
				WithItems(corev1ac.KeyToPath().WithKey(RedisRequirePassKey).WithPath(RedisRequirePassKey)).
				WithDefaultMode(0o440)),
		).
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(podSecurityContext(RedisUID)).
		WithTerminationGracePeriodSeconds(30)
	schedule(pod, fs)

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
	return s
}
