package render

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

func TestAutoscaling_ReplicasHPAAndDisruptionBudgetAgree(t *testing.T) {
	for _, tc := range []struct {
		name         string
		replicas     *int32
		autoscaling  *v1alpha1.AutoscalingSpec
		wantReplicas *int32 // the Deployment's; nil: left to the autoscaler
		wantHPA      bool
		wantMin      int32
		wantMax      int32
		wantCPU      int32
		wantPDB      bool
	}{
		{name: "default fixed replicas", wantReplicas: ptr.To[int32](2), wantPDB: true},
		{name: "one fixed replica: no budget", replicas: ptr.To[int32](1), wantReplicas: ptr.To[int32](1)},
		{name: "zero replicas: no budget", replicas: ptr.To[int32](0), wantReplicas: ptr.To[int32](0)},
		{name: "autoscaled from 3", replicas: ptr.To[int32](1),
			autoscaling: &v1alpha1.AutoscalingSpec{MinReplicas: ptr.To[int32](3), MaxReplicas: 10, TargetCPUUtilizationPercentage: ptr.To[int32](60)},
			wantHPA:     true, wantMin: 3, wantMax: 10, wantCPU: 60, wantPDB: true},
		{name: "autoscaled with defaults", autoscaling: &v1alpha1.AutoscalingSpec{MaxReplicas: 4},
			wantHPA: true, wantMin: DefaultMinReplicas, wantMax: 4, wantCPU: DefaultTargetCPUPercent, wantPDB: true},
		{name: "autoscaled from 1: no budget", replicas: ptr.To[int32](5), autoscaling: &v1alpha1.AutoscalingSpec{MinReplicas: ptr.To[int32](1), MaxReplicas: 4},
			wantHPA: true, wantMin: 1, wantMax: 4, wantCPU: DefaultTargetCPUPercent},
		{name: "max below min is raised to min", autoscaling: &v1alpha1.AutoscalingSpec{MinReplicas: ptr.To[int32](3), MaxReplicas: 2},
			wantHPA: true, wantMin: 3, wantMax: 3, wantCPU: DefaultTargetCPUPercent, wantPDB: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := base()
			fs.Spec.Auth.Replicas = tc.replicas
			fs.Spec.Auth.Autoscaling = tc.autoscaling
			d := typed[appsv1.Deployment](t, Deployment(fs, Auth, in))
			if (d.Spec.Replicas == nil) != (tc.wantReplicas == nil) || (d.Spec.Replicas != nil && *d.Spec.Replicas != *tc.wantReplicas) {
				t.Errorf("Deployment replicas = %v, want %v", d.Spec.Replicas, tc.wantReplicas)
			}
			hpa := typed[autoscalingv2.HorizontalPodAutoscaler](t, HorizontalPodAutoscaler(fs, Auth))
			if (hpa != nil) != tc.wantHPA {
				t.Fatalf("HPA = %v, want one: %v", hpa, tc.wantHPA)
			}
			if hpa != nil {
				cpu := hpa.Spec.Metrics[0].Resource
				if *hpa.Spec.MinReplicas != tc.wantMin || hpa.Spec.MaxReplicas != tc.wantMax || cpu.Name != corev1.ResourceCPU ||
					*cpu.Target.AverageUtilization != tc.wantCPU || hpa.Spec.ScaleTargetRef.Name != "acme-auth" || hpa.Name != "acme-auth" {
					t.Errorf("HPA spec = %+v", hpa.Spec)
				}
			}
			if pdb := typed[policyv1.PodDisruptionBudget](t, PodDisruptionBudget(fs, Auth)); (pdb != nil) != tc.wantPDB {
				t.Errorf("PDB = %v, want one: %v", pdb, tc.wantPDB)
			}
			// The other services are untouched.
			if typed[autoscalingv2.HorizontalPodAutoscaler](t, HorizontalPodAutoscaler(fs, Forms)) != nil || *typed[appsv1.Deployment](t, Deployment(fs, Forms, in)).Spec.Replicas != 2 {
				t.Error("forms was changed by auth's autoscaling")
			}
		})
	}
}

func TestTopologySpread(t *testing.T) {
	type want struct {
		key    string
		policy corev1.UnsatisfiableConstraintAction
	}
	for _, tc := range []struct {
		name   string
		spread *v1alpha1.TopologySpreadSpec
		want   []want
		skew   int32
	}{
		{name: "default: zones then nodes, softly", skew: 1,
			want: []want{{ZoneTopologyKey, corev1.ScheduleAnyway}, {NodeTopologyKey, corev1.ScheduleAnyway}}},
		{name: "hard zones", spread: &v1alpha1.TopologySpreadSpec{Zones: v1alpha1.SpreadDoNotSchedule, MaxSkew: ptr.To[int32](2)}, skew: 2,
			want: []want{{ZoneTopologyKey, corev1.DoNotSchedule}, {NodeTopologyKey, corev1.ScheduleAnyway}}},
		{name: "zones off", spread: &v1alpha1.TopologySpreadSpec{Zones: v1alpha1.SpreadOff, Nodes: v1alpha1.SpreadDoNotSchedule}, skew: 1,
			want: []want{{NodeTopologyKey, corev1.DoNotSchedule}}},
		{name: "both off", spread: &v1alpha1.TopologySpreadSpec{Zones: v1alpha1.SpreadOff, Nodes: v1alpha1.SpreadOff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := base()
			fs.Spec.TopologySpread = tc.spread
			got := typed[appsv1.Deployment](t, Deployment(fs, Forms, in)).Spec.Template.Spec.TopologySpreadConstraints
			if len(got) != len(tc.want) {
				t.Fatalf("constraints = %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				c := got[i]
				if c.TopologyKey != w.key || c.WhenUnsatisfiable != w.policy || c.MaxSkew != tc.skew ||
					c.LabelSelector.MatchLabels[LabelComponent] != Forms || c.LabelSelector.MatchLabels[LabelInstance] != "acme" ||
					len(c.MatchLabelKeys) != 1 || c.MatchLabelKeys[0] != "pod-template-hash" {
					t.Errorf("constraint %d = %+v, want %+v skew %d", i, c, w, tc.skew)
				}
			}
		})
	}
}
