package controllers

import (
	"context"
	"slices"

	"github.com/formsservice/formsservice/controllers/render"
)

// The rollout phase: the configuration and the pods roll out only when every Secret they mount exists
// and the configuration would load; otherwise the running pods keep serving the last good state. A
// problem with any other object does not hold them up. A new platform's restore holds the services
// back too (backup.go).

// secretReasons are the problems of a Secret the pods mount: the rollout waits for them.
var secretReasons = []string{"SecretMissing", "RedisPasswordSecretMissing", "SecretKeyMissing", "SecretValueInvalid", "SigningKeyMissing",
	"SigningKeyVanished", "SigningKeySecretMissing", "SigningKeyInvalid", "ConnectorSecretMissing"}

func hasReason(ps []problem, reasons ...string) bool {
	for _, p := range ps {
		if slices.Contains(reasons, p.Reason) {
			return true
		}
	}
	return false
}

// rollout applies the ConfigMap, the backup and restore objects, and the services' Deployments.
func (run *reconcileRun) rollout(ctx context.Context) {
	rollout := run.secretsKnown && run.Image != "" && !hasReason(run.Problems, secretReasons...)
	cm, err := render.ConfigMap(run.fs, run.in)
	if err != nil {
		run.Problems = append(run.Problems, problem{Reason: "InvalidConfiguration", Message: err.Error()})
		rollout = false
	}
	if err == nil {
		// D86: a configuration the pinned (or running) image's release cannot read is not rolled out.
		if err := run.r.skew().Check(render.Image(run.fs, run.in), cm.Data); err != nil {
			run.Problems = append(run.Problems, problem{Reason: "UnsupportedImageSkew", Message: err.Error()})
			rollout = false
		}
	}
	configApplied := false
	if rollout {
		_, configApplied = run.apply(ctx, cm)
	}
	// Backups, and a new platform's restore, which the services wait for (backup.go).
	run.data = run.reconcileData(ctx, configApplied)
	if configApplied && run.data.ServicesMayStart && !run.holdDeployments {
		run.deployments(ctx)
	}
	run.RolloutBlocked = !rollout
}

// deployments applies each service's Deployment, with the replicas an autoscaled one keeps.
func (run *reconcileRun) deployments(ctx context.Context) {
	run.deploymentsApplied = true
	for _, c := range render.Components {
		d := render.Deployment(run.fs, c, run.in)
		if err := run.r.prepareReplicas(ctx, run.fs, c, d); err != nil { // replicas.go
			run.fail("ApplyFailed", err)
			run.deploymentsApplied = false
			continue
		}
		if _, ok := run.apply(ctx, d); !ok {
			run.deploymentsApplied = false
		}
	}
}
