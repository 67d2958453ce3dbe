package render

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// PodDisruptionBudget keeps all but one pod of a component running through voluntary disruptions (node
// drains, cluster upgrades). It returns nil when the component may run fewer than two replicas (fixed
// replicas, or the autoscaler's minimum), where a budget would block every drain. maxUnavailable (not
// minAvailable) keeps the budget right at whatever count the autoscaler picks.
func PodDisruptionBudget(fs *v1alpha1.FormsService, component string) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	if MinReplicas(fs, component) < 2 {
		return nil
	}
	p := policyv1ac.PodDisruptionBudget(WorkloadName(fs, component), fs.Namespace).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(fs, component))))
	p.ObjectMetaApplyConfiguration = objectMeta(fs, WorkloadName(fs, component), component)
	return p
}

// RedisNetworkPolicy lets only this FormsService's services reach the managed Redis (on clusters whose
// network plugin enforces NetworkPolicies); the password is the second lock.
func RedisNetworkPolicy(fs *v1alpha1.FormsService, in Inputs) *networkingv1ac.NetworkPolicyApplyConfiguration {
	rule := networkingv1ac.NetworkPolicyIngressRule().
		WithPorts(networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt32(RedisPort)))
	for _, c := range Components {
		rule.WithFrom(podsOf(fs, c))
	}
	rule.WithFrom(dataJobPeers(fs)...) // backup.go
	np := networkingv1ac.NetworkPolicy(NamesOf(fs).Redis, fs.Namespace).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(fs, Redis))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress).
			WithIngress(rule))
	np.ObjectMetaApplyConfiguration = objectMeta(fs, NamesOf(fs).Redis, Redis)
	if RedisHA(fs) {
		redisHANetworkPolicy(np, fs, in) // redis_ha.go
	}
	return np
}

// podsOf is a NetworkPolicy peer selecting a component's pods of this FormsService.
func podsOf(fs *v1alpha1.FormsService, component string) *networkingv1ac.NetworkPolicyPeerApplyConfiguration {
	return networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(fs, component)))
}
