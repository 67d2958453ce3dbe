package render

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// NonRootUID is the user every formsservice container runs as (the image's user).
const NonRootUID = 65532

// workload returns the spec of a component's Deployment.
func workload(fs *v1alpha1.FormsService, component string) v1alpha1.Workload {
	switch component {
	case Forms:
		return fs.Spec.Forms.Workload
	case Auth:
		return fs.Spec.Auth.Workload
	default:
		return fs.Spec.Health.Workload
	}
}

// DefaultResources are used when a component's resources are not set. Auth needs more memory: argon2id
// password hashing uses 64 MiB per sign-in in flight.
func DefaultResources(component string) corev1.ResourceRequirements {
	req, limit := "64Mi", "256Mi"
	if component == Auth {
		req, limit = "128Mi", "512Mi"
	}
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("50m"),
			corev1.ResourceMemory: resource.MustParse(req),
		},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)},
	}
}

// Image is the image the services run.
func Image(fs *v1alpha1.FormsService, in Inputs) string {
	if fs.Spec.Image != "" {
		return fs.Spec.Image
	}
	return in.Image
}

// Deployment runs one component: `formsservice <component> -config /etc/formsservice/config.yaml`, as a
// non-root user with a read-only root filesystem, probed on /livez and /readyz, scraped on /metrics.
func Deployment(fs *v1alpha1.FormsService, component string, in Inputs) *appsv1.Deployment {
	w := workload(fs, component)
	resources := DefaultResources(component)
	if w.Resources != nil {
		resources = *w.Resources
	}
	podAnnotations := map[string]string{
		"prometheus.io/scrape": "true",
		"prometheus.io/port":   strconv.Itoa(HTTPPort),
		"prometheus.io/path":   "/metrics",
	}
	for k, v := range w.PodAnnotations {
		podAnnotations[k] = v
	}
	podAnnotations[RestartHashAnnotation] = RestartHash(fs, component, in)

	volumes := []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: NamesOf(fs).ConfigMap},
			// Mounted as a folder (not subPath) so that kubelet's atomic ..data swap reaches the
			// service, which watches the folder and reloads.
			Items: []corev1.KeyToPath{{Key: ConfigKey(component), Path: "config.yaml"}},
		}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			SizeLimit: ptr.To(resource.MustParse("64Mi")),
		}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "config", MountPath: ConfigDir, ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
	}
	for _, m := range secretMounts(fs, component) {
		src := &corev1.SecretVolumeSource{SecretName: m.Secret, DefaultMode: ptr.To[int32](0o440)}
		for _, k := range m.Keys {
			src.Items = append(src.Items, corev1.KeyToPath{Key: k, Path: k})
		}
		name := secretVolumeName(m.Secret)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: src}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: SecretsDir + "/" + m.Secret, ReadOnly: true})
	}

	var env []corev1.EnvVar
	if lim, ok := resources.Limits[corev1.ResourceMemory]; ok && lim.Value() > 0 {
		// Leave the Go runtime 10% headroom under the container's memory limit.
		env = append(env, corev1.EnvVar{Name: "GOMEMLIMIT", Value: strconv.FormatInt(lim.Value()/10*9, 10)})
	}

	container := corev1.Container{
		Name:            component,
		Image:           Image(fs, in),
		ImagePullPolicy: fs.Spec.ImagePullPolicy,
		Args:            []string{component, "-config", ConfigPath, "-drain-delay", DrainDelay},
		Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: HTTPPort, Protocol: corev1.ProtocolTCP}},
		Env:             env,
		Resources:       resources,
		VolumeMounts:    mounts,
		StartupProbe:    probe("/livez", 2, 30),
		LivenessProbe:   probe("/livez", 10, 3),
		ReadinessProbe:  probe("/readyz", 5, 2),
		SecurityContext: containerSecurityContext(),
	}

	selector := SelectorLabels(fs, component)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(fs, WorkloadName(fs, component), component),
		Spec: appsv1.DeploymentSpec{
			// Nil when autoscaled: the HorizontalPodAutoscaler owns the replicas, and the operator's
			// server-side apply must not claim them (see controllers/replicas.go).
			Replicas: fixedReplicas(w),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			// Surge one pod at a time and never go below the desired count: with the drain delay and
			// readiness probes, a rollout drops no request.
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					MaxSurge:       ptr.To(intstr.FromInt32(1)),
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels(fs, component), Annotations: podAnnotations},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{container},
					Volumes:    volumes,
					// The services never call the Kubernetes API.
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
					SecurityContext:               podSecurityContext(NonRootUID),
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					ImagePullSecrets:              fs.Spec.ImagePullSecrets,
					NodeSelector:                  fs.Spec.NodeSelector,
					Tolerations:                   fs.Spec.Tolerations,
					TopologySpreadConstraints:     TopologySpread(fs, selector),
				},
			},
		},
	}
	return d
}

// fixedReplicas is the Deployment's replicas: nil when a HorizontalPodAutoscaler owns them.
func fixedReplicas(w v1alpha1.Workload) *int32 {
	if w.Autoscaling != nil {
		return nil
	}
	return ptr.To(ptr.Deref(w.Replicas, defaultFixedReplicas))
}

// Well-known topology keys.
const (
	ZoneTopologyKey = "topology.kubernetes.io/zone"
	NodeTopologyKey = "kubernetes.io/hostname"
)

// TopologySpread spreads the pods that selector selects across zones, then nodes, as
// spec.topologySpread asks (default: both ScheduleAnyway, maxSkew 1). matchLabelKeys pod-template-hash
// counts only the pods of the current ReplicaSet, so a rollout is not skewed by the pods it replaces.
func TopologySpread(fs *v1alpha1.FormsService, selector map[string]string) []corev1.TopologySpreadConstraint {
	zones, nodes, skew := v1alpha1.SpreadScheduleAnyway, v1alpha1.SpreadScheduleAnyway, int32(1)
	if t := fs.Spec.TopologySpread; t != nil {
		if t.Zones != "" {
			zones = t.Zones
		}
		if t.Nodes != "" {
			nodes = t.Nodes
		}
		skew = ptr.Deref(t.MaxSkew, 1)
	}
	var out []corev1.TopologySpreadConstraint
	for _, d := range []struct {
		key    string
		policy v1alpha1.SpreadPolicy
	}{{ZoneTopologyKey, zones}, {NodeTopologyKey, nodes}} {
		if d.policy == v1alpha1.SpreadOff {
			continue
		}
		out = append(out, corev1.TopologySpreadConstraint{
			MaxSkew:           skew,
			TopologyKey:       d.key,
			WhenUnsatisfiable: corev1.UnsatisfiableConstraintAction(d.policy),
			LabelSelector:     &metav1.LabelSelector{MatchLabels: selector},
			MatchLabelKeys:    []string{"pod-template-hash"},
		})
	}
	return out
}

func probe(path string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP,
		}},
		PeriodSeconds:    period,
		TimeoutSeconds:   2,
		FailureThreshold: failures,
	}
}

func podSecurityContext(uid int64) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(uid),
		RunAsGroup:     ptr.To(uid),
		FSGroup:        ptr.To(uid),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// Service exposes a component inside the cluster: port 80 ("http", the ingress backend) and port 8080
// ("metrics", for a ServiceMonitor), both reaching the container's http port, which serves /metrics too.
func Service(fs *v1alpha1.FormsService, component string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(fs, WorkloadName(fs, component), component),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: SelectorLabels(fs, component),
			Ports: []corev1.ServicePort{
				{Name: "http", Port: ServicePort, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
				{Name: "metrics", Port: HTTPPort, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
			},
		},
	}
}

// optInPaths are the double opt-in's link paths, routed to the forms when spec.forms.doubleOptIn is set
// (services/forms/optin's ConfirmPath and UnsubscribePath; render_test holds them equal).
var optInPaths = []string{"/waitlist/confirm", "/waitlist/unsubscribe"}

// Ingress routes the public paths: /contact and /waitlist to forms (on the forms host when it differs),
// /oauth2 and /.well-known to auth, /health to health. Nothing else (not /metrics) is exposed.
// It returns nil when spec.ingress is not set.
func Ingress(fs *v1alpha1.FormsService) *networkingv1.Ingress {
	spec := fs.Spec.Ingress
	if spec == nil {
		return nil
	}
	backend := func(component string) networkingv1.IngressBackend {
		return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: WorkloadName(fs, component), Port: networkingv1.ServiceBackendPort{Name: "http"},
		}}
	}
	path := func(p string, t networkingv1.PathType, component string) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{Path: p, PathType: ptr.To(t), Backend: backend(component)}
	}
	formsPaths := []networkingv1.HTTPIngressPath{
		path("/contact", networkingv1.PathTypeExact, Forms),
		path("/waitlist", networkingv1.PathTypeExact, Forms),
	}
	if fs.Spec.Forms.DoubleOptIn != nil { // the confirmation and unsubscribe links
		for _, p := range optInPaths {
			formsPaths = append(formsPaths, path(p, networkingv1.PathTypeExact, Forms))
		}
	}
	mainPaths := []networkingv1.HTTPIngressPath{
		path("/oauth2", networkingv1.PathTypePrefix, Auth),
		path("/.well-known", networkingv1.PathTypePrefix, Auth),
		path("/health", networkingv1.PathTypeExact, Health),
	}
	rule := func(host string, paths []networkingv1.HTTPIngressPath) networkingv1.IngressRule {
		return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths},
		}}
	}
	var rules []networkingv1.IngressRule
	hosts := []string{spec.Host}
	if spec.FormsHost != "" && spec.FormsHost != spec.Host {
		rules = []networkingv1.IngressRule{rule(spec.Host, mainPaths), rule(spec.FormsHost, formsPaths)}
		hosts = append(hosts, spec.FormsHost)
	} else {
		rules = []networkingv1.IngressRule{rule(spec.Host, append(formsPaths, mainPaths...))}
	}
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: meta(fs, NamesOf(fs).Ingress, "ingress"),
		Spec: networkingv1.IngressSpec{
			IngressClassName: spec.ClassName,
			Rules:            rules,
		},
	}
	if len(spec.Annotations) > 0 {
		ing.Annotations = spec.Annotations
	}
	if spec.TLSSecretName != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: hosts, SecretName: spec.TLSSecretName}}
	}
	return ing
}
