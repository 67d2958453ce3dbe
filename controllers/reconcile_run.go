package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// reconcileRun is one reconcile of one FormsService: what its phases (reconcile_*.go) share, and what
// they did and could not do, for the status. The phases run in the order apply lists; each reads what
// the ones before it left here.
type reconcileRun struct {
	r   *FormsServiceReconciler
	fs  *v1alpha1.FormsService
	ap  applier
	log logr.Logger

	// in is what the renderers need besides the spec: the operator's defaults, then the Secrets' digests
	// and key IDs (secrets phase) and the running Redis image (store phase).
	in render.Inputs
	// secretsKnown: every Secret the pods mount could be read or created; the rollout waits for it.
	secretsKnown bool
	// redisPasswordKnown: the managed Redis's password could be read or created; its StatefulSet waits
	// for it.
	redisPasswordKnown bool
	// holdDeployments: the running services' image could not be read; the Deployments wait (upgrades.go).
	holdDeployments bool
	// upgradeTarget is the operator's image this FormsService is being moved to ("" when not upgrading),
	// and deploymentsApplied says the rollout applied every Deployment (upgrades.go).
	upgradeTarget      string
	deploymentsApplied bool

	observed
	// errs are the API errors that make the reconcile return an error (retried with backoff).
	errs       []error
	monitoring monitoringResult
	// data is what the backup and restore Jobs did (backup.go).
	data dataResult
	// wakeAt is when the signing key's rotation has its next step due by the clock (zero: none).
	wakeAt time.Time
	// windowOpensAt is when the maintenance window opens that a held upgrade waits for (zero: none).
	windowOpensAt time.Time
	// requeueAfter asks for another look this soon (zero: none), e.g. while the Redis roll waits.
	requeueAfter time.Duration
}

func (r *FormsServiceReconciler) newRun(ctx context.Context, fs *v1alpha1.FormsService) *reconcileRun {
	fleet := r.fleet()
	return &reconcileRun{
		r:                  r,
		fs:                 fs,
		ap:                 applier{client: r.Client, reader: r.APIReader, scheme: r.Scheme},
		log:                logf.FromContext(ctx),
		in:                 render.Inputs{Image: fleet.serviceImage, RedisImage: fleet.redisImage, RedisRunAsUser: r.RedisRunAsUser, ImagePullSecrets: r.ImagePullSecrets, Operator: r.Operator},
		secretsKnown:       true,
		redisPasswordKnown: true,
	}
}

// fail records a failed API request as a problem and as an error to retry.
func (run *reconcileRun) fail(reason string, err error) {
	run.errs = append(run.errs, err)
	run.Problems = append(run.Problems, apiProblem(reason, err))
}

// applyOne applies one object and records the Event of a change; the caller reports a failure.
func (run *reconcileRun) applyOne(ctx context.Context, ac runtime.ApplyConfiguration) (applied, error) {
	a, err := run.ap.apply(ctx, run.fs, ac)
	if err == nil && a.Result != unchanged {
		run.log.Info("applied", "kind", a.Kind, "name", a.Name, "result", string(a.Result))
		run.r.eventAbout(run.fs, relatedRef(run.fs, a), corev1.EventTypeNormal, string(a.Result), "%s %s %s", string(a.Result), a.Kind, a.Name)
	}
	return a, err
}

// apply applies one object and reports its failure; ok says it was applied.
func (run *reconcileRun) apply(ctx context.Context, ac runtime.ApplyConfiguration) (applied, bool) {
	a, err := run.applyOne(ctx, ac)
	var notOwned *notOwnedError
	switch {
	case errors.As(err, &notOwned):
		// Not an error to retry: it stays until someone removes the object.
		run.Problems = append(run.Problems, apiProblem("NotOwned", err))
	case err != nil:
		run.fail("ApplyFailed", fmt.Errorf("%s %s: %w", a.Kind, a.Name, err))
	}
	return a, err == nil
}

// remove deletes an object no longer wanted, if fs controls it, and reports its failure; it says
// whether it deleted the object.
func (run *reconcileRun) remove(ctx context.Context, obj client.Object, kind string) bool {
	deleted, err := run.ap.deleteIfOwned(ctx, run.fs, obj)
	if err != nil {
		run.fail("DeleteFailed", fmt.Errorf("%s %s: %w", kind, obj.GetName(), err))
	} else if deleted {
		run.log.Info("deleted", "kind", kind, "name", obj.GetName())
		run.r.eventAbout(run.fs, obj, corev1.EventTypeNormal, "Deleted", "Deleted %s %s", kind, obj.GetName())
	}
	return deleted
}

// relatedRef names an applied object for an Event about it.
func relatedRef(fs *v1alpha1.FormsService, a applied) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: a.APIVersion, Kind: a.Kind, Namespace: fs.Namespace, Name: a.Name}
}
