package render

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	autoscalingv2ac "k8s.io/client-go/applyconfigurations/autoscaling/v2"
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
func HorizontalPodAutoscaler(fs *v1alpha1.FormsService, component string) *autoscalingv2ac.HorizontalPodAutoscalerApplyConfiguration {
	a := workload(fs, component).Autoscaling
	if a == nil {
		return nil
	}
	minReplicas := ptr.Deref(a.MinReplicas, DefaultMinReplicas)
	h := autoscalingv2ac.HorizontalPodAutoscaler(WorkloadName(fs, component), fs.Namespace).
		WithSpec(autoscalingv2ac.HorizontalPodAutoscalerSpec().
			WithScaleTargetRef(autoscalingv2ac.CrossVersionObjectReference().
				WithAPIVersion("apps/v1").WithKind("Deployment").WithName(WorkloadName(fs, component))).
			WithMinReplicas(minReplicas).
			WithMaxReplicas(max(a.MaxReplicas, minReplicas)).
			WithMetrics(autoscalingv2ac.MetricSpec().
				WithType(autoscalingv2.ResourceMetricSourceType).
				WithResource(autoscalingv2ac.ResourceMetricSource().
					WithName(corev1.ResourceCPU).
					WithTarget(autoscalingv2ac.MetricTarget().
						WithType(autoscalingv2.UtilizationMetricType).
						WithAverageUtilization(ptr.Deref(a.TargetCPUUtilizationPercentage, DefaultTargetCPUPercent))))))
	h.ObjectMetaApplyConfiguration = objectMeta(fs, WorkloadName(fs, component), component)
	return h
}
