package render

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The highly available managed Redis (spec.redis.managed.highAvailability, docs/architecture.md D41):
// the one Redis StatefulSet with three pods, each running Redis and a Sentinel beside it, configured at
// every start by `formsservice redis-ha-config` (services/platform/redisha) in an init container of
// the services' image, which asks the sentinels for the primary of the moment.
const (
	// RedisHAReplicas is the number of Redis pods (and sentinels): a primary, two replicas; quorum 2.
	RedisHAReplicas = 3
	// RedisHAMinAvailable is how many Redis pods serve: a primary and a replica that confirms writes.
	RedisHAMinAvailable = 2
	// RedisHAQuorum is how many sentinels must agree that the primary is down.
	RedisHAQuorum = 2
	// SentinelPort is where each pod's Sentinel listens.
	SentinelPort = 26379
	// RedisHAMasterName is the name the sentinels monitor the primary under.
	RedisHAMasterName = "formsservice"

	// RedisHAPodManagement is the set's pod management policy. It cannot change on a live StatefulSet,
	// so the operator replaces a set that has another one (controllers, replaceRedisForPodManagement).
	RedisHAPodManagement = appsv1.ParallelPodManagement
	// RedisHAUpdateStrategy leaves the pods' restarts to the operator (controllers/haroll).
	RedisHAUpdateStrategy = appsv1.OnDeleteStatefulSetStrategyType

	// redisHADir holds the written redis.conf and sentinel.conf: the pod's claim, mounted where the
	// Redis container has it, so that the sentinel.conf Sentinel keeps rewriting survives the pod and the
	// next start knows the primary of the last epoch (a whole-set restart keeps it, D41).
	redisHADir         = "/data"
	redisHAPasswordDir = "/etc/redis-password"
)

// RedisHA reports whether the operator runs the highly available Redis for fs.
func RedisHA(fs *v1alpha1.FormsService) bool {
	return ManagedRedis(fs) && fs.Spec.Redis.Managed != nil && fs.Spec.Redis.Managed.HighAvailability
}

// RedisHANodeName is the name of the i-th Redis pod, and of the headless Service that gives it a DNS
// name of its own (RedisHANodeServices).
func RedisHANodeName(fs *v1alpha1.FormsService, i int) string {
	return fmt.Sprintf("%s-%d", NamesOf(fs).Redis, i)
}

// redisHAHost is the i-th pod's stable DNS name. The StatefulSet's governing Service (NamesOf.Redis)
// has a cluster IP, which cannot change, so it gives the pods no names: each gets a headless Service of
// its own. Sentinels and replicas know each other by these names, never by a pod's address of the
// moment (which changes when it restarts and would pile up as dead sentinels and replicas).
func redisHAHost(fs *v1alpha1.FormsService, i int) string {
	return fmt.Sprintf("%s.%s.svc", RedisHANodeName(fs, i), fs.Namespace)
}

// RedisHASentinelAddrs are the sentinels' host:port, which the services are configured with.
func RedisHASentinelAddrs(fs *v1alpha1.FormsService) []string {
	out := make([]string, RedisHAReplicas)
	for i := range out {
		out[i] = fmt.Sprintf("%s:%d", redisHAHost(fs, i), SentinelPort)
	}
	return out
}

// RedisHANodeAddrs are the data nodes' host:port, in ordinal order.
func RedisHANodeAddrs(fs *v1alpha1.FormsService) []string {
	out := make([]string, RedisHAReplicas)
	for i := range out {
		out[i] = fmt.Sprintf("%s:%d", redisHAHost(fs, i), RedisPort)
	}
	return out
}

// RedisHANodeServices are the pods' headless Services: a DNS name per pod that resolves even while it
// is not ready (a replica syncing, a sentinel starting), for the sentinels, the replicas and the
// services' Sentinel client.
func RedisHANodeServices(fs *v1alpha1.FormsService) []*corev1ac.ServiceApplyConfiguration {
	var out []*corev1ac.ServiceApplyConfiguration
	for i := range RedisHAReplicas {
		name := RedisHANodeName(fs, i)
		selector := SelectorLabels(fs, Redis)
		selector["statefulset.kubernetes.io/pod-name"] = name
		s := corev1ac.Service(name, fs.Namespace).WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(selector).
			WithPorts(
				corev1ac.ServicePort().WithName("redis").WithPort(RedisPort).WithTargetPort(intstr.FromString("redis")).WithProtocol(corev1.ProtocolTCP),
				corev1ac.ServicePort().WithName("sentinel").WithPort(SentinelPort).WithTargetPort(intstr.FromString("sentinel")).WithProtocol(corev1.ProtocolTCP),
			))
		s.ObjectMetaApplyConfiguration = objectMeta(fs, name, Redis)
		out = append(out, s)
	}
	return out
}

// RedisHAPodDisruptionBudget lets a drain take one Redis pod at a time: two sentinels of three still
// make the quorum, and the primary (or a promoted replica) keeps a replica for durability primary.
func RedisHAPodDisruptionBudget(fs *v1alpha1.FormsService) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	n := NamesOf(fs).Redis
	p := policyv1ac.PodDisruptionBudget(n, fs.Namespace).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(fs, Redis))))
	p.ObjectMetaApplyConfiguration = objectMeta(fs, n, Redis)
	return p
}

// redisHAStatefulSet turns the single Redis's StatefulSet into the highly available one, in place: the
// same name, claims and pod 0 (whose data the set starts from), three replicas, the init step, the
// Sentinel beside Redis, and pods spread over nodes and zones.
func redisHAStatefulSet(s *appsv1ac.StatefulSetApplyConfiguration, fs *v1alpha1.FormsService, in Inputs) {
	spec := s.Spec
	spec.WithReplicas(RedisHAReplicas)
	// Every missing pod is created at once. With OrderedReady, a lost primary at a higher ordinal than
	// another lost pod was never re-created: the lower pod's init step waits for the primary's name to
	// resolve, which needs that pod, which waits for the lower one to be Ready.
	spec.WithPodManagementPolicy(RedisHAPodManagement)
	// The operator restarts the pods itself, in its order (controllers/haroll, D85): the replicas one at
	// a time, then the primary once it handed over to a replica. The StatefulSet's own rolling update
	// would restart the primary without a hand-over, and its replicas without waiting for their sync.
	spec.WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType(RedisHAUpdateStrategy))
	pod := spec.Template.Spec
	image := RedisImage(fs, in)
	n := NamesOf(fs)

	haMount := corev1ac.VolumeMount().WithName("data").WithMountPath(redisHADir)
	// Redis runs from the written redis.conf (which includes the rendered one); Sentinel rewrites its
	// file as it learns. Both are on the claim (the Redis container mounts it there already): written
	// afresh at each start of the pod, the sentinel's from what the last one knew.
	redis := &pod.Containers[0]
	redis.Command = []string{"sh", "-c", fmt.Sprintf(`exec "$(command -v valkey-server || command -v redis-server)" %s/redis.conf`, redisHADir)}

	tcpProbe := func(period, failures int32) *corev1ac.ProbeApplyConfiguration {
		p := corev1ac.Probe().WithPeriodSeconds(period).WithTimeoutSeconds(3).WithFailureThreshold(failures)
		p.WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString("sentinel")))
		return p
	}
	sentinel := corev1ac.Container().
		WithName("sentinel").
		WithImage(image).
		WithCommand("sh", "-c", fmt.Sprintf(`exec "$(command -v valkey-server || command -v redis-server)" %s/sentinel.conf --sentinel`, redisHADir)).
		WithPorts(corev1ac.ContainerPort().WithName("sentinel").WithContainerPort(SentinelPort).WithProtocol(corev1.ProtocolTCP)).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}).
			WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")})).
		WithVolumeMounts(haMount).
		WithReadinessProbe(tcpProbe(5, 2)).
		WithLivenessProbe(tcpProbe(10, 6)).
		WithSecurityContext(containerSecurityContext())

	init := corev1ac.Container().
		WithName("redis-ha-config").
		WithImage(Image(fs, in)).
		WithArgs("redis-ha-config",
			"--nodes", strings.Join(RedisHANodeAddrs(fs), ","),
			"--sentinels", strings.Join(RedisHASentinelAddrs(fs), ","),
			"--self", "$(POD_NAME)",
			"--master-name", RedisHAMasterName,
			"--password-file", redisHAPasswordDir+"/"+RedisPasswordKey,
			"--include", "/etc/redis/redis.conf",
			"--sentinel-dir", redisHADir,
			"--out", redisHADir).
		WithEnv(corev1ac.EnvVar().WithName("POD_NAME").WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name")))).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}).
			WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")})).
		WithVolumeMounts(haMount, corev1ac.VolumeMount().WithName("password").WithMountPath(redisHAPasswordDir).WithReadOnly(true)).
		WithSecurityContext(containerSecurityContext())
	if fs.Spec.ImagePullPolicy != "" {
		init.WithImagePullPolicy(fs.Spec.ImagePullPolicy)
	}

	pod.WithInitContainers(init).
		WithContainers(sentinel).
		WithVolumes(
			corev1ac.Volume().WithName("password").WithSecret(corev1ac.SecretVolumeSource().
				WithSecretName(n.RedisPassword).
				WithItems(corev1ac.KeyToPath().WithKey(RedisPasswordKey).WithPath(RedisPasswordKey)).
				WithDefaultMode(secretFileMode(redisRunAsUser(fs, in)))),
		).
		WithAffinity(corev1ac.Affinity().WithPodAntiAffinity(redisHAAntiAffinity(fs))).
		WithTopologySpreadConstraints(redisHAZoneSpread(fs)...)
}

// redisHAAntiAffinity keeps the pods on different nodes: preferred, or required
// (spec.redis.managed.podAntiAffinity), when a pod had better stay Pending than share a node.
func redisHAAntiAffinity(fs *v1alpha1.FormsService) *corev1ac.PodAntiAffinityApplyConfiguration {
	term := corev1ac.PodAffinityTerm().
		WithTopologyKey(NodeTopologyKey).
		WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(fs, Redis)))
	a := corev1ac.PodAntiAffinity()
	if m := fs.Spec.Redis.Managed; m != nil && m.PodAntiAffinity == v1alpha1.RedisAntiAffinityRequired {
		return a.WithRequiredDuringSchedulingIgnoredDuringExecution(term)
	}
	return a.WithPreferredDuringSchedulingIgnoredDuringExecution(corev1ac.WeightedPodAffinityTerm().WithWeight(100).WithPodAffinityTerm(term))
}

// redisHAZoneSpread spreads the pods over zones as spec.topologySpread.zones says for the services
// (default ScheduleAnyway, Off: none), one per zone where there are three: maxSkew 1 whatever the
// services' maxSkew, since two of three pods in one zone is the loss of the store with that zone. The
// nodes are the anti-affinity's. No matchLabelKeys pod-template-hash: a StatefulSet's pods have none
// (they carry controller-revision-hash, which would count only the pods of one revision mid-rollout).
func redisHAZoneSpread(fs *v1alpha1.FormsService) []*corev1ac.TopologySpreadConstraintApplyConfiguration {
	policy := v1alpha1.SpreadScheduleAnyway
	if t := fs.Spec.TopologySpread; t != nil && t.Zones != "" {
		policy = t.Zones
	}
	if policy == v1alpha1.SpreadOff {
		return nil
	}
	return []*corev1ac.TopologySpreadConstraintApplyConfiguration{corev1ac.TopologySpreadConstraint().
		WithMaxSkew(1).
		WithTopologyKey(ZoneTopologyKey).
		WithWhenUnsatisfiable(corev1.UnsatisfiableConstraintAction(policy)).
		WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(fs, Redis)))}
}

// redisHANetworkPolicy opens the managed Redis's policy to the set itself (replication, the sentinels
// talking to each other and to every node, the init step asking them) and the services and data Jobs
// to the sentinels.
func redisHANetworkPolicy(np *networkingv1ac.NetworkPolicyApplyConfiguration, fs *v1alpha1.FormsService, in Inputs) {
	rule := networkingv1ac.NetworkPolicyIngressRule().WithPorts(redisHAPorts()...).WithFrom(podsOf(fs, Redis))
	for _, c := range Components {
		rule.WithFrom(podsOf(fs, c))
	}
	// The backup and restore Jobs reach the store through the sentinels too (backup.go).
	rule.WithFrom(dataJobPeers(fs)...)
	// The single Redis's rule (the data port, from the services and Jobs) is part of this one.
	np.Spec.Ingress = nil
	np.Spec.WithIngress(rule)
	// The operator asks the nodes and sentinels who the primary is, and hands it over, when it rolls
	// the pods (controllers/haroll, D85).
	if o := in.Operator; o.Namespace != "" && len(o.PodLabels) > 0 {
		np.Spec.WithIngress(networkingv1ac.NetworkPolicyIngressRule().WithPorts(redisHAPorts()...).WithFrom(
			networkingv1ac.NetworkPolicyPeer().
				WithNamespaceSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"kubernetes.io/metadata.name": o.Namespace})).
				WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(o.PodLabels))))
	}
}

// redisHAPorts are the data and the Sentinel ports.
func redisHAPorts() []*networkingv1ac.NetworkPolicyPortApplyConfiguration {
	return []*networkingv1ac.NetworkPolicyPortApplyConfiguration{
		networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt32(RedisPort)),
		networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt32(SentinelPort)),
	}
}

// redisHAEgress is the services' egress to the highly available Redis: its pods on both ports.
func redisHAEgress(fs *v1alpha1.FormsService) []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration {
	return []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration{
		networkingv1ac.NetworkPolicyEgressRule().WithTo(podsOf(fs, Redis)).WithPorts(redisHAPorts()...),
	}
}

// redisHAConfig is the services' Redis section: the sentinels, which name the primary of the moment,
// and the one generated password for the nodes and the sentinels alike.
func redisHAConfig(fs *v1alpha1.FormsService) config.Redis {
	pw := SecretPath(NamesOf(fs).RedisPassword, RedisPasswordKey)
	return config.Redis{
		Addrs:                RedisHASentinelAddrs(fs),
		MasterName:           RedisHAMasterName,
		PasswordFile:         pw,
		SentinelPasswordFile: pw,
	}
}
