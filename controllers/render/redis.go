package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

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
func RedisConfigMap(fs *v1alpha1.FormsService) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(fs, NamesOf(fs).RedisConfigMap, Redis),
		Data:       map[string]string{"redis.conf": redisConfFor(fs)},
	}
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
func RedisService(fs *v1alpha1.FormsService) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(fs, NamesOf(fs).Redis, Redis),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: SelectorLabels(fs, Redis),
			Ports: []corev1.ServicePort{{
				Name: "redis", Port: RedisPort, TargetPort: intstr.FromString("redis"), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}

// RedisStatefulSet runs the single managed Redis with a PersistentVolumeClaim. The claim is kept when the
// StatefulSet or the FormsService is deleted: the data outlives a mistake. Redis reads its password at
// start-up, so the digest of the password Secret (from in) restarts it when the Secret changes.
func RedisStatefulSet(fs *v1alpha1.FormsService, in Inputs) *appsv1.StatefulSet {
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
	resources := redisResources(fs)
	n := NamesOf(fs)
	exec := func(period, failures int32, script string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", script}}},
			PeriodSeconds:    period,
			TimeoutSeconds:   3,
			FailureThreshold: failures,
		}
	}
	selector := SelectorLabels(fs, Redis)
	container := corev1.Container{
		Name:    "redis",
		Image:   image,
		Command: []string{"redis-server", "/etc/redis/redis.conf"},
		Ports:   []corev1.ContainerPort{{Name: "redis", ContainerPort: RedisPort, Protocol: corev1.ProtocolTCP}},
		// redis-cli in the probes reads the password from REDISCLI_AUTH.
		Env: []corev1.EnvVar{{Name: "REDISCLI_AUTH", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: n.RedisPassword}, Key: RedisPasswordKey,
		}}}},
		Resources: resources,
		VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: "/data"},
			{Name: "config", MountPath: "/etc/redis", ReadOnly: true},
			{Name: "secret", MountPath: redisSecretDir, ReadOnly: true},
		},
		// Loading a large append-only file can take a while: the startup probe allows five minutes.
		StartupProbe:    exec(5, 60, `[ "$(redis-cli ping)" = PONG ]`),
		LivenessProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("redis")}}, PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 6},
		ReadinessProbe:  exec(5, 2, `[ "$(redis-cli ping)" = PONG ]`),
		SecurityContext: containerSecurityContext(),
	}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: meta(fs, n.Redis, Redis),
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: n.Redis,
			Selector:    &metav1.LabelSelector{MatchLabels: selector},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      Labels(fs, Redis),
					Annotations: map[string]string{RestartHashAnnotation: in.SecretDigests[n.RedisPassword], RedisConfigHashAnnotation: redisConfHash(fs)},
				},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{container},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: n.RedisConfigMap},
						}}},
						{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName:  n.RedisPassword,
							Items:       []corev1.KeyToPath{{Key: RedisRequirePassKey, Path: RedisRequirePassKey}},
							DefaultMode: ptr.To[int32](0o440),
						}}},
					},
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
					SecurityContext:               podSecurityContext(RedisUID),
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					ImagePullSecrets:              fs.Spec.ImagePullSecrets,
					NodeSelector:                  fs.Spec.NodeSelector,
					Tolerations:                   fs.Spec.Tolerations,
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: Labels(fs, Redis)},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: m.StorageClassName,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
				},
			}},
		},
	}
}
