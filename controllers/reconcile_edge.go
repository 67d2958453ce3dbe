package controllers

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/formsservice/formsservice/controllers/render"
)

// The edge phase: how the platform is reached (the Ingress, the Gateway API's HTTPRoutes) and watched
// (the Prometheus Operator's ServiceMonitors). Nothing else waits for them.

// edge applies the Ingress, the HTTPRoutes and the ServiceMonitors, and records the routes' acceptance
// and the Monitored condition.
func (run *reconcileRun) edge(ctx context.Context) {
	fs := run.fs
	if ing := render.Ingress(fs); ing != nil {
		if a, ok := run.apply(ctx, ing); ok {
			run.Routes = append(run.Routes, ingressRoute(a))
		}
	} else {
		run.remove(ctx, &networkingv1.Ingress{ObjectMeta: objectMeta(fs, render.NamesOf(fs).Ingress)}, "Ingress")
	}
	run.httpRoutes(ctx) // gateway.go
	// ServiceMonitors report in the Monitored condition only, not as problems: the platform serves
	// without them.
	run.monitoring = run.r.reconcileServiceMonitors(ctx, fs, run.applyOne) // servicemonitor.go
	if run.monitoring.Err != nil {
		run.errs = append(run.errs, run.monitoring.Err)
	}
}
