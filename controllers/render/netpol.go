package render

import (
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// NetworkPoliciesEnabled reports whether fs asks for NetworkPolicies around its services.
func NetworkPoliciesEnabled(fs *v1alpha1.FormsService) bool {
	np := fs.Spec.NetworkPolicy
	return np != nil && ptr.Deref(np.Enabled, true)
}

// ServiceNetworkPolicy fences one service's pods, on clusters whose network plugin enforces policies:
//
//   - ingress on the HTTP port (which serves the public routes and /metrics) only from
//     spec.networkPolicy.ingressFrom (the ingress controller or Gateway), metricsFrom (Prometheus) and,
//     for forms and auth, the health service, which checks them;
//   - egress only to DNS (port 53), Redis, and for forms the delivery targets and the sites' bot-check
//     providers, for health forms and auth.
//
// The peers and rules of the spec are applied exactly as written: a peer `{namespaceSelector: {}}` (every
// namespace) stays that, it does not shrink to this namespace. It returns nil when spec.networkPolicy is
// unset or disabled.
func ServiceNetworkPolicy(fs *v1alpha1.FormsService, component string) *networkingv1ac.NetworkPolicyApplyConfiguration {
	if !NetworkPoliciesEnabled(fs) {
		return nil
	}
	spec := fs.Spec.NetworkPolicy
	ingressRule := func(from ...*networkingv1ac.NetworkPolicyPeerApplyConfiguration) *networkingv1ac.NetworkPolicyIngressRuleApplyConfiguration {
		return networkingv1ac.NetworkPolicyIngressRule().WithFrom(from...).WithPorts(tcp(HTTPPort))
	}

	// A rule without peers would admit everyone: a rule is written only for peers that were given (the
	// CRD requires ingressFrom).
	var ingress []*networkingv1ac.NetworkPolicyIngressRuleApplyConfiguration
	if len(spec.IngressFrom) > 0 {
		ingress = append(ingress, ingressRule(peers(spec.IngressFrom)...))
	}
	if len(spec.MetricsFrom) > 0 {
		ingress = append(ingress, ingressRule(peers(spec.MetricsFrom)...))
	}
	if component != Health {
		ingress = append(ingress, ingressRule(podsOf(fs, Health)))
	}

	egress := []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration{networkingv1ac.NetworkPolicyEgressRule().WithPorts(
		networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolUDP).WithPort(intstr.FromInt32(53)),
		networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt32(53)),
	)}
	egress = append(egress, redisEgress(fs)...)
	switch component {
	case Forms:
		egress = append(egress, deliveryEgress(fs)...)
		egress = append(egress, botCheckEgress(fs)...)
	case Auth:
		egress = append(egress, authMailEgress(fs)...)
	case Health:
		egress = append(egress, networkingv1ac.NetworkPolicyEgressRule().WithTo(podsOf(fs, Forms), podsOf(fs, Auth)).WithPorts(tcp(HTTPPort)))
	}

	np := networkingv1ac.NetworkPolicy(WorkloadName(fs, component), fs.Namespace).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(fs, component))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress).
			WithIngress(ingress...).
			WithEgress(egress...))
	np.ObjectMetaApplyConfiguration = objectMeta(fs, WorkloadName(fs, component), component)
	return np
}

// peers are the spec's NetworkPolicy peers, as written.
func peers(ps []networkingv1.NetworkPolicyPeer) []*networkingv1ac.NetworkPolicyPeerApplyConfiguration {
	return applyConfigsOf[networkingv1ac.NetworkPolicyPeerApplyConfiguration](ps)
}

func tcp(port int) *networkingv1ac.NetworkPolicyPortApplyConfiguration {
	return networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt(port))
}

// redisEgress reaches the managed Redis by its pods' labels. An external Redis is named by host names a
// NetworkPolicy cannot select, so without spec.networkPolicy.redisEgress the rule allows any address on
// the ports of spec.redis.addresses (and 6379, where the masters behind Sentinels usually listen).
func redisEgress(fs *v1alpha1.FormsService) []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration {
	if RedisHA(fs) {
		return redisHAEgress(fs) // redis_ha.go
	}
	if ManagedRedis(fs) {
		return []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration{
			networkingv1ac.NetworkPolicyEgressRule().WithTo(podsOf(fs, Redis)).WithPorts(tcp(RedisPort)),
		}
	}
	if r := fs.Spec.NetworkPolicy.RedisEgress; len(r) > 0 {
		return applyConfigsOf[networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration](r)
	}
	var ports []int
	for _, a := range fs.Spec.Redis.Addresses {
		ports = appendPort(ports, hostPortPort(string(a)))
	}
	if fs.Spec.Redis.Mode == v1alpha1.RedisSentinel {
		ports = appendPort(ports, RedisPort)
	}
	return anyAddressOn(ports)
}

// deliveryEgress reaches the mail relay and the webhook: spec.networkPolicy.deliveryEgress when set,
// else any address on the relay's port and the webhook's (443 and 80 when its URL is in a Secret).
func deliveryEgress(fs *v1alpha1.FormsService) []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration {
	d := fs.Spec.Forms.Delivery
	if d == nil || (d.SMTP == nil && d.Webhook == nil) {
		return nil
	}
	if r := fs.Spec.NetworkPolicy.DeliveryEgress; len(r) > 0 {
		return applyConfigsOf[networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration](r)
	}
	var ports []int
	if d.SMTP != nil {
		ports = appendPort(ports, hostPortPort(string(d.SMTP.Address)))
	}
	if w := d.Webhook; w != nil {
		if w.URLSecretRef == nil && w.URL != "" {
			ports = appendPort(ports, urlPort(w.URL))
		} else {
			ports = appendPort(appendPort(ports, 443), 80)
		}
	}
	return anyAddressOn(ports)
}

// authMailEgress reaches the forms' SMTP relay when auth mails through it too (render.authMail): the
// rules of networkPolicy.deliveryEgress when given (they name the relay), else any address on its port.
func authMailEgress(fs *v1alpha1.FormsService) []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration {
	if !authMails(fs) {
		return nil
	}
	d := fs.Spec.Forms.Delivery
	if r := fs.Spec.NetworkPolicy.DeliveryEgress; len(r) > 0 {
		return applyConfigsOf[networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration](r)
	}
	return anyAddressOn(appendPort(nil, hostPortPort(string(d.SMTP.Address))))
}

// botCheckEgress reaches the sites' and the declared forms' CAPTCHA providers: any address on their
// verify URLs' ports (443 for the providers' own); their addresses are not ours to list.
func botCheckEgress(fs *v1alpha1.FormsService) []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration {
	checks := make([]*v1alpha1.BotCheckSpec, 0, len(fs.Spec.Forms.Sites))
	for _, st := range fs.Spec.Forms.Sites {
		checks = append(checks, st.BotCheck)
	}
	for _, f := range fs.Spec.Forms.Declared {
		checks = append(checks, f.BotCheck)
	}
	var ports []int
	for _, b := range checks {
		if b != nil {
			p := 443
			if b.VerifyURL != "" {
				p = urlPort(b.VerifyURL)
			}
			ports = appendPort(ports, p)
		}
	}
	return anyAddressOn(ports)
}

func hostPortPort(hp string) int {
	_, p, err := net.SplitHostPort(hp)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

func urlPort(raw string) int {
	u, err := url.Parse(raw)
	if err != nil {
		return 443
	}
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}

func appendPort(ports []int, p int) []int {
	if p <= 0 || p > 65535 {
		return ports
	}
	for _, q := range ports {
		if q == p {
			return ports
		}
	}
	return append(ports, p)
}

// anyAddressOn is one egress rule to any address on the ports; none for no ports (a rule without ports
// would allow every port).
func anyAddressOn(ports []int) []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration {
	if len(ports) == 0 {
		return nil
	}
	rule := networkingv1ac.NetworkPolicyEgressRule()
	for _, p := range ports {
		rule.WithPorts(tcp(p))
	}
	return []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration{rule}
}
