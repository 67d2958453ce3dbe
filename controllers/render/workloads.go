package render

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/auth/publicpaths"
)

// ImageUID is the user of the formsservice image. The pods do not name it (spec.runAsUser can): the
// image's numeric user satisfies runAsNonRoot, and a platform that assigns users itself may.
const ImageUID = 65532

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
func Deployment(fs *v1alpha1.FormsService, component string, in Inputs) *appsv1ac.DeploymentApplyConfiguration {
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
	if component == Auth && in.SigningKeyIDs != "" {
		podAnnotations[SigningKeysAnnotation] = in.SigningKeyIDs
	}

	volumes := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName("config").WithConfigMap(corev1ac.ConfigMapVolumeSource().
			WithName(NamesOf(fs).ConfigMap).
			// Mounted as a folder (not subPath) so that kubelet's atomic ..data swap reaches the
			// service, which watches the folder and reloads.
			WithItems(corev1ac.KeyToPath().WithKey(ConfigKey(component)).WithPath("config.yaml"))),
		corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(resource.MustParse("64Mi"))),
	}
	mounts := []*corev1ac.VolumeMountApplyConfiguration{
		corev1ac.VolumeMount().WithName("config").WithMountPath(ConfigDir).WithReadOnly(true),
		corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"),
	}
	// Secret files are root's: only an fsGroup makes them group-readable by the service's user. Without
	// one (the default, so that the platform may pick the user), they are readable by every user of the
	// container, which runs the one service process.
	secretMode := secretFileMode(ptr.Deref(fs.Spec.RunAsUser, 0))
	for _, m := range secretMounts(fs, component) {
		src := corev1ac.SecretVolumeSource().WithSecretName(m.Secret).WithDefaultMode(secretMode)
		for _, k := range m.Keys {
			src.WithItems(corev1ac.KeyToPath().WithKey(k).WithPath(k))
		}
		name := secretVolumeName(m.Secret)
		volumes = append(volumes, corev1ac.Volume().WithName(name).WithSecret(src))
		mounts = append(mounts, corev1ac.VolumeMount().WithName(name).WithMountPath(SecretsDir+"/"+m.Secret).WithReadOnly(true))
	}

	container := corev1ac.Container().
		WithName(component).
		WithImage(Image(fs, in)).
		WithArgs(component, "-config", ConfigPath, "-drain-delay", DrainDelay).
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(HTTPPort).WithProtocol(corev1.ProtocolTCP)).
		WithResources(applyConfigOf[corev1ac.ResourceRequirementsApplyConfiguration](resources)).
		WithVolumeMounts(mounts...).
		WithStartupProbe(probe("/livez", 2, 30)).
		WithLivenessProbe(probe("/livez", 10, 3)).
		WithReadinessProbe(probe("/readyz", 5, 2)).
		WithSecurityContext(containerSecurityContext())
	if fs.Spec.ImagePullPolicy != "" {
		container.WithImagePullPolicy(fs.Spec.ImagePullPolicy)
	}
	if component == Forms {
		formFilesEnv(fs, container) // forms_declared.go
	}
	if lim, ok := resources.Limits[corev1.ResourceMemory]; ok && lim.Value() > 0 {
		// Leave the Go runtime 10% headroom under the container's memory limit.
		container.WithEnv(corev1ac.EnvVar().WithName("GOMEMLIMIT").WithValue(strconv.FormatInt(lim.Value()/10*9, 10)))
	}

	selector := SelectorLabels(fs, component)
	pod := corev1ac.PodSpec().
		WithContainers(container).
		WithVolumes(volumes...).
		// The services never call the Kubernetes API: a ServiceAccount of their own, without a token.
		WithServiceAccountName(ServiceAccountName(fs, component)).
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(podSecurityContext(ptr.Deref(fs.Spec.RunAsUser, 0))).
		WithTerminationGracePeriodSeconds(30).
		WithTopologySpreadConstraints(TopologySpread(fs, selector)...)
	schedule(pod, fs, in)

	spec := appsv1ac.DeploymentSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
		// Surge one pod at a time and never go below the desired count: with the drain delay and
		// readiness probes, a rollout drops no request.
		WithStrategy(appsv1ac.DeploymentStrategy().
			WithType(appsv1.RollingUpdateDeploymentStrategyType).
			WithRollingUpdate(appsv1ac.RollingUpdateDeployment().
				WithMaxUnavailable(intstr.FromInt32(0)).
				WithMaxSurge(intstr.FromInt32(1)))).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(Labels(fs, component)).
			WithAnnotations(podAnnotations).
			WithSpec(pod))
	// Unset when autoscaled: the HorizontalPodAutoscaler owns the replicas, and the operator's
	// server-side apply must not claim them (see controllers/replicas.go).
	if n := fixedReplicas(w); n != nil {
		spec.WithReplicas(*n)
	}
	d := appsv1ac.Deployment(WorkloadName(fs, component), fs.Namespace).WithSpec(spec)
	d.ObjectMetaApplyConfiguration = objectMeta(fs, WorkloadName(fs, component), component)
	return d
}

// schedule sets what the spec (and the operator's flags) say about where and how the pods of fs are
// pulled and scheduled.
func schedule(pod *corev1ac.PodSpecApplyConfiguration, fs *v1alpha1.FormsService, in Inputs) {
	seen := map[string]bool{}
	for _, s := range in.ImagePullSecrets {
		if !seen[s] {
			seen[s] = true
			pod.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(s))
		}
	}
	for _, s := range fs.Spec.ImagePullSecrets {
		if !seen[s.Name] {
			seen[s.Name] = true
			pod.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(s.Name))
		}
	}
	if len(fs.Spec.NodeSelector) > 0 {
		pod.WithNodeSelector(fs.Spec.NodeSelector)
	}
	pod.WithTolerations(applyConfigsOf[corev1ac.TolerationApplyConfiguration](fs.Spec.Tolerations)...)
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
func TopologySpread(fs *v1alpha1.FormsService, selector map[string]string) []*corev1ac.TopologySpreadConstraintApplyConfiguration {
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
	var out []*corev1ac.TopologySpreadConstraintApplyConfiguration
	for _, d := range []struct {
		key    string
		policy v1alpha1.SpreadPolicy
	}{{ZoneTopologyKey, zones}, {NodeTopologyKey, nodes}} {
		if d.policy == v1alpha1.SpreadOff {
			continue
		}
		out = append(out, corev1ac.TopologySpreadConstraint().
			WithMaxSkew(skew).
			WithTopologyKey(d.key).
			WithWhenUnsatisfiable(corev1.UnsatisfiableConstraintAction(d.policy)).
			WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithMatchLabelKeys("pod-template-hash"))
	}
	return out
}

func probe(path string, period, failures int32) *corev1ac.ProbeApplyConfiguration {
	p := corev1ac.Probe().
		WithPeriodSeconds(period).
		WithTimeoutSeconds(2).
		WithFailureThreshold(failures)
	p.WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString("http")).WithScheme(corev1.URISchemeHTTP))
	return p
}

// podSecurityContext is the restricted Pod Security Standard's pod part. uid 0 names no user: the image's
// (which must be numeric and not root) or the one the platform assigns; another uid is also the group
// and the fsGroup, so that mounted Secrets and volumes are the user's.
func podSecurityContext(uid int64) *corev1ac.PodSecurityContextApplyConfiguration {
	sc := corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
	if uid > 0 {
		sc.WithRunAsUser(uid).WithRunAsGroup(uid).WithFSGroup(uid)
	}
	return sc
}

// secretFileMode is the mode of mounted Secret files: readable by the pod's group (its fsGroup) when
// it names a user, else by every user of the container (kubelet makes them root's).
func secretFileMode(uid int64) int32 {
	if uid > 0 {
		return 0o440
	}
	return 0o444
}

// ServiceAccountName is the ServiceAccount of a component's pods (forms, auth, health, redis).
func ServiceAccountName(fs *v1alpha1.FormsService, component string) string {
	return fs.Name + "-" + component
}

// ServiceAccount gives a component's pods an identity of their own instead of the namespace's default
// one (which other workloads share and RBAC may have been granted to), without a token: no pod of a
// FormsService calls the Kubernetes API.
func ServiceAccount(fs *v1alpha1.FormsService, component string) *corev1ac.ServiceAccountApplyConfiguration {
	sa := corev1ac.ServiceAccount(ServiceAccountName(fs, component), fs.Namespace).WithAutomountServiceAccountToken(false)
	sa.ObjectMetaApplyConfiguration = objectMeta(fs, ServiceAccountName(fs, component), component)
	return sa
}

func containerSecurityContext() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}

// Service exposes a component inside the cluster: port 80 ("http", the ingress backend) and port 8080
// ("metrics", for a ServiceMonitor), both reaching the container's http port, which serves /metrics too.
func Service(fs *v1alpha1.FormsService, component string) *corev1ac.ServiceApplyConfiguration {
	s := corev1ac.Service(WorkloadName(fs, component), fs.Namespace).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(SelectorLabels(fs, component)).
			WithPorts(
				corev1ac.ServicePort().WithName("http").WithPort(ServicePort).WithTargetPort(intstr.FromString("http")).WithProtocol(corev1.ProtocolTCP),
				corev1ac.ServicePort().WithName("metrics").WithPort(HTTPPort).WithTargetPort(intstr.FromString("http")).WithProtocol(corev1.ProtocolTCP),
			))
	s.ObjectMetaApplyConfiguration = objectMeta(fs, WorkloadName(fs, component), component)
	return s
}

// optInPaths are the double opt-in's link paths, routed to the forms when spec.forms.doubleOptIn is set
// (services/forms/optin's ConfirmPath and UnsubscribePath; render_test holds them equal).
var optInPaths = []string{"/waitlist/confirm", "/waitlist/unsubscribe"}

// Ingress routes the public paths: /contact and /waitlist (and /f/, with declared forms) to forms (on the
// forms host when it differs),
// the provider's publicpaths.Prefixes (/oauth2, /.well-known, /account, /admin) to auth, /health to health.
// Nothing else (not /metrics) is exposed.
// It returns nil when spec.ingress is not set.
func Ingress(fs *v1alpha1.FormsService) *networkingv1ac.IngressApplyConfiguration {
	spec := fs.Spec.Ingress
	if spec == nil {
		return nil
	}
	path := func(p string, t networkingv1.PathType, component string) *networkingv1ac.HTTPIngressPathApplyConfiguration {
		return networkingv1ac.HTTPIngressPath().WithPath(p).WithPathType(t).
			WithBackend(networkingv1ac.IngressBackend().WithService(networkingv1ac.IngressServiceBackend().
				WithName(WorkloadName(fs, component)).
				WithPort(networkingv1ac.ServiceBackendPort().WithName("http"))))
	}
	formsPaths := []*networkingv1ac.HTTPIngressPathApplyConfiguration{
		path("/contact", networkingv1.PathTypeExact, Forms),
		path("/waitlist", networkingv1.PathTypeExact, Forms),
	}
	if fs.Spec.Forms.DoubleOptIn != nil { // the confirmation and unsubscribe links
		for _, p := range optInPaths {
			formsPaths = append(formsPaths, path(p, networkingv1.PathTypeExact, Forms))
		}
	}
	if hasDeclaredForms(fs) { // POST /f/<id>
		formsPaths = append(formsPaths, path(DeclaredFormsPrefix, networkingv1.PathTypePrefix, Forms))
	}
	var mainPaths []*networkingv1ac.HTTPIngressPathApplyConfiguration
	for _, p := range publicpaths.Prefixes {
		mainPaths = append(mainPaths, path(p, networkingv1.PathTypePrefix, Auth))
	}
	mainPaths = append(mainPaths, path("/health", networkingv1.PathTypeExact, Health))
	rule := func(host string, paths []*networkingv1ac.HTTPIngressPathApplyConfiguration) *networkingv1ac.IngressRuleApplyConfiguration {
		return networkingv1ac.IngressRule().WithHost(host).WithHTTP(networkingv1ac.HTTPIngressRuleValue().WithPaths(paths...))
	}
	ingSpec := networkingv1ac.IngressSpec()
	if spec.ClassName != nil {
		ingSpec.WithIngressClassName(*spec.ClassName)
	}
	hosts := []string{spec.Host}
	if spec.FormsHost != "" && spec.FormsHost != spec.Host {
		ingSpec.WithRules(rule(spec.Host, mainPaths), rule(spec.FormsHost, formsPaths))
		hosts = append(hosts, spec.FormsHost)
	} else {
		ingSpec.WithRules(rule(spec.Host, append(formsPaths, mainPaths...)))
	}
	if spec.TLSSecretName != "" {
		ingSpec.WithTLS(networkingv1ac.IngressTLS().WithHosts(hosts...).WithSecretName(spec.TLSSecretName))
	}
	ing := networkingv1ac.Ingress(NamesOf(fs).Ingress, fs.Namespace).WithSpec(ingSpec)
	ing.ObjectMetaApplyConfiguration = objectMeta(fs, NamesOf(fs).Ingress, "ingress")
	if len(spec.Annotations) > 0 {
		ing.WithAnnotations(spec.Annotations)
	}
	return ing
}
