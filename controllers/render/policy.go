package render

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// PodDisruptionBudget keeps all but one pod of a component running through voluntary disruptions (node
// drains, cluster upgrades). It returns nil when the component may run fewer than two replicas (fixed
// replicas, or the autoscaler's minimum), where a budget would block every drain. maxUnavailable (not
// minAvailable) keeps the budget right at whatever count the autoscaler picks.
func PodDisruptionBudget(fs *v1alpha1.FormsService, component string) *policyv1.PodDisruptionBudget {
	if MinReplicas(fs, component) < 2 {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: meta(fs, WorkloadName(fs, component), component),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: SelectorLabels(fs, component)},
		},
	}
}

// RedisNetworkPolicy lets only this FormsService's services reach the managed Redis (on clusters whose
// network plugin enforces NetworkPolicies); the password is the second lock.
func RedisNetworkPolicy(fs *v1alpha1.FormsService) *networkingv1.NetworkPolicy {
	from := []networkingv1.NetworkPolicyPeer{}
	for _, c := range Components {
		from = append(from, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels(fs, c)}})
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: meta(fs, NamesOf(fs).Redis, Redis),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: SelectorLabels(fs, Redis)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: from,
				Ports: []networkingv1.NetworkPolicyPort{{
					Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(RedisPort)),
				}},
			}},
		},
	}
}
