package render

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// Defaults of spec.<service>.autoscaling (the CRD sets them too).
const (
	DefaultMinReplicas      = 2
	DefaultTargetCPUPercent = 75
	defaultFixedReplicas    = 2
)

// Autoscaled reports whether a component's replicas belong to a HorizontalPodAutoscaler.
func Autoscaled(fs *v1alpha1.FormsService, component string) bool {
	return workload(fs, component).Autoscaling != nil
}

// MinReplicas is the fewest replicas a component runs outside a rollout: the autoscaler's minimum, or
// the fixed replicas.
func MinReplicas(fs *v1alpha1.FormsService, component string) int32 {
	w := workload(fs, component)
	if w.Autoscaling != nil {
		return ptr.Deref(w.Autoscaling.MinReplicas, DefaultMinReplicas)
	}
	return ptr.Deref(w.Replicas, defaultFixedReplicas)
}

// HorizontalPodAutoscaler scales a component's Deployment on CPU use between its autoscaling bounds. It
// returns nil when the component has fixed replicas.
func HorizontalPodAutoscaler(fs *v1alpha1.FormsService, component string) *autoscalingv2.HorizontalPodAutoscaler {
	a := workload(fs, component).Autoscaling
	if a == nil {
		return nil
	}
	minReplicas := ptr.Deref(a.MinReplicas, DefaultMinReplicas)
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: meta(fs, WorkloadName(fs, component), component),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: "apps/v1", Kind: "Deployment", Name: WorkloadName(fs, component),
			},
			MinReplicas: ptr.To(minReplicas),
			MaxReplicas: max(a.MaxReplicas, minReplicas),
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{
						Type:               autoscalingv2.UtilizationMetricType,
						AverageUtilization: ptr.To(ptr.Deref(a.TargetCPUUtilizationPercentage, DefaultTargetCPUPercent)),
					},
				},
			}},
		},
	}
}
