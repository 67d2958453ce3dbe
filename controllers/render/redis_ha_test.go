package render

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

func haBase() *v1alpha1.FormsService {
	fs := base()
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{HighAvailability: true}
	return fs
}

func TestRedisHA_StatefulSet_ThreePodsInPlaceWithInitStepAndSentinel(t *testing.T) {
	single := typed[appsv1.StatefulSet](t, RedisStatefulSet(base(), in))
	if len(single.Spec.Template.Spec.InitContainers) != 0 || len(single.Spec.Template.Spec.Containers) != 1 || *single.Spec.Replicas != 1 {
		t.Fatalf("the single Redis changed: %+v", single.Spec)
	}

	s := typed[appsv1.StatefulSet](t, RedisStatefulSet(haBase(), Inputs{Image: "img:1", SecretDigests: map[string]string{"acme-redis-password": "d1"}}))
	// In place: the single Redis's name, governing Service and claims (pod 0's data is where HA starts).
	if s.Name != single.Name || s.Spec.ServiceName != single.Spec.ServiceName || s.Spec.VolumeClaimTemplates[0].Name != "data" || *s.Spec.Replicas != 3 {
		t.Errorf("not the single Redis's set with 3 replicas: %s %s %d", s.Name, s.Spec.ServiceName, *s.Spec.Replicas)
	}
	// Lost pods come back all at once: OrderedReady deadlocked a lost primary behind a lower pod.
	if s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement || single.Spec.PodManagementPolicy != "" {
		t.Errorf("pod management: HA %q, single %q; want Parallel and the default", s.Spec.PodManagementPolicy, single.Spec.PodManagementPolicy)
	}
	// The operator restarts the pods, the primary last and handed over first (D85): OnDelete.
	if s.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || single.Spec.UpdateStrategy.Type != "" {
		t.Errorf("update strategy: HA %q, single %q; want OnDelete and the default", s.Spec.UpdateStrategy.Type, single.Spec.UpdateStrategy.Type)
	}
	pod := s.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || len(pod.Containers) != 2 {
		t.Fatalf("containers: %d init, %d", len(pod.InitContainers), len(pod.Containers))
	}
	init, redis, sentinel := pod.InitContainers[0], pod.Containers[0], pod.Containers[1]
	if init.Image != "img:1" || init.Args[0] != "redis-ha-config" {
		t.Errorf("the init step is not formsservice redis-ha-config from the services' image: %s %v", init.Image, init.Args)
	}
	args := strings.Join(init.Args, " ")
	for _, want := range []string{
		"--nodes acme-redis-0.prod.svc:6379,acme-redis-1.prod.svc:6379,acme-redis-2.prod.svc:6379",
		"--sentinels acme-redis-0.prod.svc:26379,acme-redis-1.prod.svc:26379,acme-redis-2.prod.svc:26379",
		"--self $(POD_NAME)", "--master-name formsservice", "--password-file /etc/redis-password/password",
		"--include /etc/redis/redis.conf", "--out /data", "--sentinel-dir /data",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("init args lack %q: %s", want, args)
		}
	}
	if len(init.Env) != 1 || init.Env[0].Name != "POD_NAME" || init.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("POD_NAME not from the downward API: %+v", init.Env)
	}
	if !strings.Contains(redis.Command[2], "/data/redis.conf") || !strings.Contains(sentinel.Command[2], "/data/sentinel.conf --sentinel") {
		t.Errorf("commands: %v / %v", redis.Command, sentinel.Command)
	}
	// The written files are on the claim, where the sentinel's rewritten file outlives the pod: the init
	// step and the sentinel mount it where Redis has it.
	for _, c := range []corev1.Container{init, redis, sentinel} {
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "data" && m.MountPath == "/data" }) {
			t.Errorf("%s does not mount the claim at /data: %+v", c.Name, c.VolumeMounts)
		}
	}
	if sentinel.Image != DefaultRedisImage || sentinel.Ports[0].ContainerPort != SentinelPort || sentinel.ReadinessProbe == nil {
		t.Errorf("sentinel: %+v", sentinel)
	}
	// Restricted Pod Security for every container, the init step's included.
	for _, c := range []corev1.Container{init, redis, sentinel} {
		sc := c.SecurityContext
		if sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) || !ptr.Deref(sc.RunAsNonRoot, false) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("%s: not restricted: %+v", c.Name, sc)
		}
		if c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: no memory limit", c.Name)
		}
	}
	aff := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(aff) != 1 || aff[0].PodAffinityTerm.TopologyKey != NodeTopologyKey || aff[0].PodAffinityTerm.LabelSelector.MatchLabels[LabelComponent] != Redis {
		t.Errorf("anti-affinity: %+v", pod.Affinity)
	}
	var vols []string
	for _, v := range pod.Volumes {
		vols = append(vols, v.Name)
	}
	if slices.Contains(vols, "ha") || !slices.Contains(vols, "password") || !slices.Contains(vols, "secret") || !slices.Contains(vols, "config") {
		t.Errorf("volumes %v", vols)
	}
	if s.Spec.Template.Annotations[RestartHashAnnotation] != "d1" {
		t.Errorf("the pods do not restart when the password changes: %v", s.Spec.Template.Annotations)
	}
}

func TestRedisHA_ServicesConnectThroughTheSentinels_FormsAtDurabilityPrimary(t *testing.T) {
	fs := haBase()
	c := ServiceConfig(fs, Forms, in)
	pw := SecretsDir + "/acme-redis-password/password"
	if !slices.Equal(c.Redis.Addrs, RedisHASentinelAddrs(fs)) || c.Redis.MasterName != RedisHAMasterName ||
		c.Redis.PasswordFile != pw || c.Redis.SentinelPasswordFile != pw {
		t.Errorf("redis = %+v", c.Redis)
	}
	if c.Forms.Durability != config.DurabilityPrimary {
		t.Errorf("forms durability %q, want primary by default with the highly available Redis", c.Forms.Durability)
	}
	fs.Spec.Forms.DataPolicy = &v1alpha1.FormsDataPolicy{Durability: "machine"}
	if c := ServiceConfig(fs, Forms, in); c.Forms.Durability != config.DurabilityMachine {
		t.Errorf("the spec's durability must win: %q", c.Forms.Durability)
	}
	if c := ServiceConfig(base(), Forms, in); c.Forms.Durability != config.DurabilityMachine || c.Redis.MasterName != "" {
		t.Errorf("the single Redis changed: %+v %q", c.Redis, c.Forms.Durability)
	}
	// The rendered files load in the services (Validate: sentinelPasswordFile needs masterName).
	for _, comp := range Components {
		if _, err := RenderConfig(fs, comp, in); err != nil {
			t.Errorf("%s: %v", comp, err)
		}
	}
}

func TestRedisHA_NodeServices_HeadlessPerPodEvenWhileNotReady(t *testing.T) {
	svcs := RedisHANodeServices(haBase())
	if len(svcs) != RedisHAReplicas {
		t.Fatalf("%d Services", len(svcs))
	}
	for i, ac := range svcs {
		s := typed[corev1.Service](t, ac)
		name := "acme-redis-" + string(rune('0'+i))
		if s.Name != name || s.Spec.ClusterIP != corev1.ClusterIPNone || !s.Spec.PublishNotReadyAddresses ||
			s.Spec.Selector["statefulset.kubernetes.io/pod-name"] != name || s.Spec.Selector[LabelInstance] != "acme" {
			t.Errorf("Service %d: %+v", i, s)
		}
		if len(s.Spec.Ports) != 2 || s.Spec.Ports[0].Port != RedisPort || s.Spec.Ports[1].Port != SentinelPort {
			t.Errorf("Service %d ports %+v", i, s.Spec.Ports)
		}
		if len(s.OwnerReferences) != 1 {
			t.Errorf("Service %d not owned", i)
		}
	}
}

func TestRedisHA_PodDisruptionBudget_OnePodAtATime(t *testing.T) {
	p := typed[policyv1.PodDisruptionBudget](t, RedisHAPodDisruptionBudget(haBase()))
	if p.Name != "acme-redis" || p.Spec.MaxUnavailable.IntValue() != 1 || p.Spec.Selector.MatchLabels[LabelComponent] != Redis {
		t.Errorf("PDB %+v", p)
	}
}

func TestRedisHA_NetworkPolicies_TheSetTalksToItselfAndTheServicesReachTheSentinels(t *testing.T) {
	fs := haBase()
	np := typed[networkingv1.NetworkPolicy](t, RedisNetworkPolicy(fs, Inputs{}))
	if len(np.Spec.Ingress) != 1 {
		t.Fatalf("ingress %+v", np.Spec.Ingress)
	}
	var from []string
	for _, p := range np.Spec.Ingress[0].From {
		if p.PodSelector.MatchLabels[LabelInstance] != "acme" || p.NamespaceSelector != nil {
			t.Errorf("peer %+v is not a pod of this FormsService", p)
		}
		from = append(from, p.PodSelector.MatchLabels[LabelComponent])
	}
	var ports []int
	for _, p := range np.Spec.Ingress[0].Ports {
		ports = append(ports, p.Port.IntValue())
	}
	if !slices.Equal(from, append([]string{Redis}, Components...)) || !slices.Equal(ports, []int{RedisPort, SentinelPort}) {
		t.Errorf("from %v ports %v", from, ports)
	}

	// The backup and restore Jobs read the store through the sentinels as the services do.
	fs.Spec.Backup = &v1alpha1.BackupSpec{Schedule: "0 3 * * *", Volume: &v1alpha1.VolumeLocation{ClaimName: "backups"}}
	np = typed[networkingv1.NetworkPolicy](t, RedisNetworkPolicy(fs, Inputs{}))
	if peers := np.Spec.Ingress[0].From; len(peers) != 1+len(Components)+2 || peers[len(peers)-1].PodSelector.MatchLabels[LabelComponent] != Restore {
		t.Errorf("the data Jobs are not admitted to the highly available Redis: %+v", peers)
	}

	// The operator's pods, named by the manager's flags, reach both ports: its roll asks the nodes and
	// sentinels (D85). Without the flags, no such rule.
	op := OperatorPeer{Namespace: "formsservice-system", PodLabels: map[string]string{"app.kubernetes.io/name": "formsservice-operator"}}
	np = typed[networkingv1.NetworkPolicy](t, RedisNetworkPolicy(fs, Inputs{Operator: op}))
	if len(np.Spec.Ingress) != 2 {
		t.Fatalf("ingress with the operator: %+v", np.Spec.Ingress)
	}
	rule := np.Spec.Ingress[1]
	if len(rule.From) != 1 || rule.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "formsservice-system" ||
		rule.From[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "formsservice-operator" || len(rule.Ports) != 2 {
		t.Errorf("the operator's rule: %+v", rule)
	}
	if single := typed[networkingv1.NetworkPolicy](t, RedisNetworkPolicy(base(), Inputs{Operator: op})); len(single.Spec.Ingress) != 1 {
		t.Errorf("the single Redis admits the operator, which never asks it: %+v", single.Spec.Ingress)
	}

	fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{IngressFrom: []networkingv1.NetworkPolicyPeer{{}}}
	svc := typed[networkingv1.NetworkPolicy](t, ServiceNetworkPolicy(fs, Forms))
	found := false
	for _, e := range svc.Spec.Egress {
		if len(e.To) == 1 && e.To[0].PodSelector != nil && e.To[0].PodSelector.MatchLabels[LabelComponent] == Redis {
			found = len(e.Ports) == 2 && e.Ports[0].Port.IntValue() == RedisPort && e.Ports[1].Port.IntValue() == SentinelPort
		}
	}
	if !found {
		t.Errorf("forms may not reach the sentinels: %+v", svc.Spec.Egress)
	}
}

// A replica's full resync makes the primary fork and hold the replica's output buffer on top of the
// dataset: with the highly available Redis, maxmemory is half the limit and each replica's buffer is
// capped at a sixteenth (both replicas together an eighth), so a primary at maxmemory that serves two
// resyncs still has three eighths of its limit for the copy-on-write. The single Redis keeps three
// quarters and Redis's own buffer limits.
func TestRedisHA_MaxmemoryAndReplicaBuffersLeaveRoomForAFullResync(t *testing.T) {
	conf := func(fs *v1alpha1.FormsService) string {
		return typed[corev1.ConfigMap](t, RedisConfigMap(fs)).Data["redis.conf"]
	}
	ha := conf(haBase())
	const mi = 1 << 20
	for _, want := range []string{
		fmt.Sprintf("\nmaxmemory %d\n", 256*mi),                                      // 1/2 of the default 512Mi
		fmt.Sprintf("\nclient-output-buffer-limit replica %d %d 60\n", 32*mi, 16*mi), // 1/16, 1/32
	} {
		if !strings.Contains(ha, want) {
			t.Errorf("the highly available redis.conf lacks %q:\n%s", want, ha)
		}
	}
	// The budget, from what is rendered: the dataset, both replicas at their hard cap at once, and what
	// is left for the fork's copy-on-write (and the process, and the clients).
	var dataset, hard, soft, secs int64
	for _, line := range strings.Split(ha, "\n") {
		fmt.Sscanf(line, "maxmemory %d", &dataset)
		fmt.Sscanf(line, "client-output-buffer-limit replica %d %d %d", &hard, &soft, &secs)
	}
	limit := int64(512 * mi)
	if rest := limit - dataset - int64(RedisHAReplicas-1)*hard; dataset == 0 || hard == 0 || soft > hard || rest*4 < dataset*3 {
		t.Errorf("maxmemory %d, replica buffers %d/%d: %d of %d left for the fork, want three quarters of the dataset", dataset, hard, soft, rest, limit)
	}
	single := conf(base())
	if !strings.Contains(single, fmt.Sprintf("\nmaxmemory %d\n", 384*mi)) || strings.Contains(single, "client-output-buffer-limit") {
		t.Errorf("the single Redis changed:\n%s", single)
	}

	// From the spec's limit, and a change rolls the pods (the config-hash annotation).
	fs := haBase()
	before := typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Annotations[RedisConfigHashAnnotation]
	fs.Spec.Redis.Managed.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}
	if got := conf(fs); !strings.Contains(got, fmt.Sprintf("\nmaxmemory %d\nclient-output-buffer-limit replica %d %d 60\n", 1024*mi, 128*mi, 64*mi)) {
		t.Errorf("redis.conf for a 2Gi limit:\n%s", got)
	}
	if after := typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Annotations[RedisConfigHashAnnotation]; after == before {
		t.Error("a changed redis.conf must roll the Redis pods")
	}
	if single := typed[appsv1.StatefulSet](t, RedisStatefulSet(base(), in)).Spec.Template.Annotations[RedisConfigHashAnnotation]; single == before {
		t.Error("the highly available set has the single Redis's redis.conf")
	}
	// No limit: no maxmemory, and Redis's own buffer limits.
	fs.Spec.Redis.Managed.Resources = &corev1.ResourceRequirements{}
	if got := conf(fs); strings.Contains(got, "maxmemory ") || strings.Contains(got, "client-output-buffer-limit") {
		t.Errorf("limits without a memory limit:\n%s", got)
	}
}

func TestRedisHA_PodAntiAffinity_PreferredByDefault_RequiredOnRequest(t *testing.T) {
	selects := func(t *testing.T, term corev1.PodAffinityTerm) {
		t.Helper()
		if term.TopologyKey != NodeTopologyKey || term.LabelSelector.MatchLabels[LabelComponent] != Redis || term.LabelSelector.MatchLabels[LabelInstance] != "acme" {
			t.Errorf("term %+v: not the Redis pods of acme by node", term)
		}
	}
	for _, p := range []v1alpha1.RedisPodAntiAffinity{"", v1alpha1.RedisAntiAffinityPreferred} {
		fs := haBase()
		fs.Spec.Redis.Managed.PodAntiAffinity = p
		aa := typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Spec.Affinity.PodAntiAffinity
		if len(aa.PreferredDuringSchedulingIgnoredDuringExecution) != 1 || len(aa.RequiredDuringSchedulingIgnoredDuringExecution) != 0 {
			t.Fatalf("%q: %+v", p, aa)
		}
		selects(t, aa.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm)
	}
	fs := haBase()
	fs.Spec.Redis.Managed.PodAntiAffinity = v1alpha1.RedisAntiAffinityRequired
	aa := typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Spec.Affinity.PodAntiAffinity
	if len(aa.RequiredDuringSchedulingIgnoredDuringExecution) != 1 || len(aa.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Fatalf("Required: %+v", aa)
	}
	selects(t, aa.RequiredDuringSchedulingIgnoredDuringExecution[0])
	// The single Redis has one pod: nothing to keep apart.
	fs = base()
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{PodAntiAffinity: v1alpha1.RedisAntiAffinityRequired}
	if a := typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Spec.Affinity; a != nil {
		t.Errorf("the single Redis got an affinity: %+v", a)
	}
}

func TestRedisHA_ZoneSpread_FollowsTopologySpreadZones(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spread *v1alpha1.TopologySpreadSpec
		want   corev1.UnsatisfiableConstraintAction // "": none
	}{
		{"default: softly", nil, corev1.ScheduleAnyway},
		{"zones unset", &v1alpha1.TopologySpreadSpec{Nodes: v1alpha1.SpreadDoNotSchedule}, corev1.ScheduleAnyway},
		// maxSkew is the services': the three Redis pods are one per zone wherever they can be.
		{"hard zones", &v1alpha1.TopologySpreadSpec{Zones: v1alpha1.SpreadDoNotSchedule, MaxSkew: ptr.To[int32](3)}, corev1.DoNotSchedule},
		{"zones off", &v1alpha1.TopologySpreadSpec{Zones: v1alpha1.SpreadOff, Nodes: v1alpha1.SpreadDoNotSchedule}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := haBase()
			fs.Spec.TopologySpread = tc.spread
			got := typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Spec.TopologySpreadConstraints
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("constraints %+v, want none", got)
				}
				return
			}
			// Zones only: the nodes are the anti-affinity's.
			if len(got) != 1 {
				t.Fatalf("constraints %+v, want one over zones", got)
			}
			c := got[0]
			if c.TopologyKey != ZoneTopologyKey || c.WhenUnsatisfiable != tc.want || c.MaxSkew != 1 ||
				c.LabelSelector.MatchLabels[LabelComponent] != Redis || c.LabelSelector.MatchLabels[LabelInstance] != "acme" {
				t.Errorf("constraint %+v, want zones %s maxSkew 1 over acme's Redis pods", c, tc.want)
			}
			// A StatefulSet's pods have no pod-template-hash: such a key would make the constraint count none.
			if len(c.MatchLabelKeys) != 0 {
				t.Errorf("matchLabelKeys %v on a StatefulSet's pods", c.MatchLabelKeys)
			}
		})
	}
	if got := typed[appsv1.StatefulSet](t, RedisStatefulSet(base(), in)).Spec.Template.Spec.TopologySpreadConstraints; len(got) != 0 {
		t.Errorf("the single Redis got a spread: %+v", got)
	}
}
