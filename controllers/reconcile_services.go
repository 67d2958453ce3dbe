package controllers

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/formsservice/formsservice/controllers/render"
)

// The services phase: what surrounds each service's pods (forms, auth, health) and does not wait for
// the Secrets or the configuration, so that a platform whose rollout is blocked still keeps its
// Services, disruption budgets, network policies and autoscalers in shape. The Deployments themselves
// are the rollout phase's. Optional objects the spec no longer asks for are removed.

// serviceAccounts applies each service's ServiceAccount: its pods run as one of their own, without a
// token.
func (run *reconcileRun) serviceAccounts(ctx context.Context) {
	for _, c := range render.Components {
		run.apply(ctx, render.ServiceAccount(run.fs, c))
	}
}

// services applies each service's Service, PodDisruptionBudget and NetworkPolicy.
func (run *reconcileRun) services(ctx context.Context) {
	fs := run.fs
	for _, c := range render.Components {
		run.apply(ctx, render.Service(fs, c))
		if pdb := render.PodDisruptionBudget(fs, c); pdb != nil {
			run.apply(ctx, pdb)
		} else {
			run.remove(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: objectMeta(fs, render.WorkloadName(fs, c))}, "PodDisruptionBudget")
		}
		if np := render.ServiceNetworkPolicy(fs, c); np != nil { // netpol.go
			run.apply(ctx, np)
		} else {
			run.remove(ctx, &networkingv1.NetworkPolicy{ObjectMeta: objectMeta(fs, render.WorkloadName(fs, c))}, "NetworkPolicy")
		}
	}
}

// autoscalers applies each autoscaled service's HorizontalPodAutoscaler, after the rollout phase has
// applied the Deployment it scales.
func (run *reconcileRun) autoscalers(ctx context.Context) {
	fs := run.fs
	for _, c := range render.Components {
		if hpa := render.HorizontalPodAutoscaler(fs, c); hpa != nil {
			run.apply(ctx, hpa)
		} else {
			run.remove(ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: objectMeta(fs, render.WorkloadName(fs, c))}, "HorizontalPodAutoscaler")
		}
	}
}
