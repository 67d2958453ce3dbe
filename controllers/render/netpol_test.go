package render

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

var (
	ingressNS  = networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"}}}
	prometheus = networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "prometheus"}},
	}
)

// summary is a NetworkPolicy's rules in a form a table can hold: for each rule, its peers (by what they
// select) and ports.
type ruleSummary struct {
	peers []string
	ports []string
}

func peerName(p networkingv1.NetworkPolicyPeer) string {
	switch {
	case p.IPBlock != nil:
		return "ip:" + p.IPBlock.CIDR
	case p.NamespaceSelector != nil && p.PodSelector != nil:
		return "ns+pods:" + p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
	case p.NamespaceSelector != nil:
		return "ns:" + p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
	default:
		return "pods:" + p.PodSelector.MatchLabels[LabelInstance] + "-" + p.PodSelector.MatchLabels[LabelComponent]
	}
}

func summarize(peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) ruleSummary {
	s := ruleSummary{peers: []string{}, ports: []string{}}
	for _, p := range peers {
		s.peers = append(s.peers, peerName(p))
	}
	for _, p := range ports {
		s.ports = append(s.ports, string(*p.Protocol)+"/"+p.Port.String())
	}
	return s
}

func TestServiceNetworkPolicy(t *testing.T) {
	dns := ruleSummary{peers: []string{}, ports: []string{"UDP/53", "TCP/53"}}
	managedRedis := ruleSummary{peers: []string{"pods:acme-redis"}, ports: []string{"TCP/6379"}}
	fromIngress := ruleSummary{peers: []string{"ns:ingress-nginx"}, ports: []string{"TCP/8080"}}
	fromPrometheus := ruleSummary{peers: []string{"ns+pods:monitoring"}, ports: []string{"TCP/8080"}}
	fromHealth := ruleSummary{peers: []string{"pods:acme-health"}, ports: []string{"TCP/8080"}}

	for _, tc := range []struct {
		name        string
		mutate      func(fs *v1alpha1.FormsService)
		component   string
		wantNil     bool
		wantIngress []ruleSummary
		wantEgress  []ruleSummary
	}{
		{name: "no spec.networkPolicy: none", mutate: func(fs *v1alpha1.FormsService) { fs.Spec.NetworkPolicy = nil }, component: Forms, wantNil: true},
		{name: "switched off", mutate: func(fs *v1alpha1.FormsService) { fs.Spec.NetworkPolicy.Enabled = ptr.To(false) }, component: Auth, wantNil: true},
		{name: "forms without delivery", component: Forms,
			wantIngress: []ruleSummary{fromIngress, fromPrometheus, fromHealth}, wantEgress: []ruleSummary{dns, managedRedis}},
		{name: "auth", component: Auth,
			wantIngress: []ruleSummary{fromIngress, fromPrometheus, fromHealth}, wantEgress: []ruleSummary{dns, managedRedis}},
		{name: "health reaches forms and auth, and only the ingress and Prometheus reach it", component: Health,
			wantIngress: []ruleSummary{fromIngress, fromPrometheus},
			wantEgress:  []ruleSummary{dns, managedRedis, {peers: []string{"pods:acme-forms", "pods:acme-auth"}, ports: []string{"TCP/8080"}}}},
		{name: "no metricsFrom: no metrics rule", component: Auth, mutate: func(fs *v1alpha1.FormsService) { fs.Spec.NetworkPolicy.MetricsFrom = nil },
			wantIngress: []ruleSummary{fromIngress, fromHealth}, wantEgress: []ruleSummary{dns, managedRedis}},
		{name: "forms delivers by SMTP and a webhook in a Secret", component: Forms, mutate: func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{
				SMTP:    &v1alpha1.SMTPDelivery{Address: "smtp.example:587", From: "a@b.example", To: []string{"c@d.example"}},
				Webhook: &v1alpha1.WebhookDelivery{URLSecretRef: &v1alpha1.SecretKeySelector{Name: "hook", Key: "url"}},
			}
		}, wantIngress: []ruleSummary{fromIngress, fromPrometheus, fromHealth},
			wantEgress: []ruleSummary{dns, managedRedis, {peers: []string{}, ports: []string{"TCP/587", "TCP/443", "TCP/80"}}}},
		{name: "a plain webhook URL gives its own port", component: Forms, mutate: func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{Webhook: &v1alpha1.WebhookDelivery{URL: "https://hooks.example:8443/x"}}
		}, wantIngress: []ruleSummary{fromIngress, fromPrometheus, fromHealth},
			wantEgress: []ruleSummary{dns, managedRedis, {peers: []string{}, ports: []string{"TCP/8443"}}}},
		{name: "deliveryEgress narrows delivery to named addresses", component: Forms, mutate: func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{SMTP: &v1alpha1.SMTPDelivery{Address: "smtp.example:25", From: "a@b.example", To: []string{"c@d.example"}}}
			fs.Spec.NetworkPolicy.DeliveryEgress = []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "192.0.2.10/32"}}}, Ports: []networkingv1.NetworkPolicyPort{tcpPort(25)},
			}}
		}, wantIngress: []ruleSummary{fromIngress, fromPrometheus, fromHealth},
			wantEgress: []ruleSummary{dns, managedRedis, {peers: []string{"ip:192.0.2.10/32"}, ports: []string{"TCP/25"}}}},
		{name: "auth reaches the forms' SMTP relay, which it mails through, and not the webhook", component: Auth, mutate: func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{
				SMTP:    &v1alpha1.SMTPDelivery{Address: "smtp.example:587", StartTLS: true, From: "a@b.example", To: []string{"c@d.example"}},
				Webhook: &v1alpha1.WebhookDelivery{URL: "https://hooks.example:8443/x"},
			}
		}, wantIngress: []ruleSummary{fromIngress, fromPrometheus, fromHealth},
			wantEgress: []ruleSummary{dns, managedRedis, {peers: []string{}, ports: []string{"TCP/587"}}}},
		{name: "auth reaches a relay without startTLS too: off loopback it is STARTTLS whatever the setting", component: Auth, mutate: func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{SMTP: &v1alpha1.SMTPDelivery{Address: "smtp.example:25", From: "a@b.example", To: []string{"c@d.example"}}}
		}, wantIngress: []ruleSummary{fromIngress, fromPrometheus, fromHealth},
			wantEgress: []ruleSummary{dns, managedRedis, {peers: []string{}, ports: []string{"TCP/25"}}}},
		{name: "deliveryEgress names auth's relay too", component: Auth, mutate: func(fs *v1alpha1.FormsService) {
			fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{SMTP: &v1alpha1.SMTPDelivery{Address: "smtp.example:25", StartTLS: true, From: "a@b.example", To: []string{"c@d.example"}}}
			fs.Spec.NetworkPolicy.DeliveryEgress = []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "192.0.2.10/32"}}}, Ports: []networkingv1.NetworkPolicyPort{tcpPort(25)},
			}}
		}, wantIngress: []ruleSummary{fromIngress, fromPrometheus, fromHealth},
			wantEgress: []ruleSummary{dns, managedRedis, {peers: []string{"ip:192.0.2.10/32"}, ports: []string{"TCP/25"}}}},
		{name: "external Sentinel Redis: its ports and the masters' 6379", component: Auth, mutate: func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis = v1alpha1.RedisSpec{Mode: v1alpha1.RedisSentinel, MasterName: "m", Addresses: []v1alpha1.HostPort{"s1.example:26379", "s2.example:26379"}}
		}, wantIngress: []ruleSummary{fromIngress, fromPrometheus, fromHealth},
			wantEgress: []ruleSummary{dns, {peers: []string{}, ports: []string{"TCP/26379", "TCP/6379"}}}},
		{name: "redisEgress narrows an external Redis", component: Auth, mutate: func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"redis.example:6380"}}
			fs.Spec.NetworkPolicy.RedisEgress = []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.1.0.0/16"}}}, Ports: []networkingv1.NetworkPolicyPort{tcpPort(6380)},
			}}
		}, wantIngress: []ruleSummary{fromIngress, fromPrometheus, fromHealth},
			wantEgress: []ruleSummary{dns, {peers: []string{"ip:10.1.0.0/16"}, ports: []string{"TCP/6380"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := base()
			fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{
				IngressFrom: []networkingv1.NetworkPolicyPeer{ingressNS},
				MetricsFrom: []networkingv1.NetworkPolicyPeer{prometheus},
			}
			if tc.mutate != nil {
				tc.mutate(fs)
			}
			np := typed[networkingv1.NetworkPolicy](t, ServiceNetworkPolicy(fs, tc.component))
			if tc.wantNil {
				if np != nil {
					t.Fatalf("policy = %+v, want none", np.Spec)
				}
				return
			}
			if np.Name != "acme-"+tc.component || np.Spec.PodSelector.MatchLabels[LabelComponent] != tc.component ||
				!slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
				t.Errorf("name %s, selector %v, types %v", np.Name, np.Spec.PodSelector.MatchLabels, np.Spec.PolicyTypes)
			}
			var ingress, egress []ruleSummary
			for _, r := range np.Spec.Ingress {
				ingress = append(ingress, summarize(r.From, r.Ports))
			}
			for _, r := range np.Spec.Egress {
				egress = append(egress, summarize(r.To, r.Ports))
			}
			same := func(a, b []ruleSummary) bool {
				return slices.EqualFunc(a, b, func(x, y ruleSummary) bool {
					return slices.Equal(x.peers, y.peers) && slices.Equal(x.ports, y.ports)
				})
			}
			if !same(ingress, tc.wantIngress) {
				t.Errorf("ingress = %v, want %v", ingress, tc.wantIngress)
			}
			if !same(egress, tc.wantEgress) {
				t.Errorf("egress = %v, want %v", egress, tc.wantEgress)
			}
		})
	}
}

func tcpPort(p int) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt(p))}
}

// A peer of the spec is applied exactly as written: an empty namespaceSelector selects every namespace,
// and must reach the API server as {} (dropping it would narrow the rule to this namespace, and a peer
// left with nothing at all is refused).
func TestServiceNetworkPolicy_PeersAsWritten_EmptyNamespaceSelectorKept(t *testing.T) {
	fs := base()
	anyNamespace := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}}
	promAnywhere := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{},
		PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "prometheus"}}}
	fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{
		IngressFrom: []networkingv1.NetworkPolicyPeer{anyNamespace},
		MetricsFrom: []networkingv1.NetworkPolicyPeer{promAnywhere},
	}
	b, err := json.Marshal(ServiceNetworkPolicy(fs, Forms))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"from":[{"namespaceSelector":{}}]`,
		`"from":[{"podSelector":{"matchLabels":{"app.kubernetes.io/name":"prometheus"}},"namespaceSelector":{}}]`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the apply request lacks %s:\n%s", want, b)
		}
	}
}
