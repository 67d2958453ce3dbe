package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// The secrets phase comes first: the configuration and the pods depend on the Secrets, through their
// digests in the pod templates. A Secret that cannot be read or written blocks what mounts it (the
// rollout, the Redis StatefulSet), nothing else.

// secrets makes the operator's own Secrets exist, takes the signing key's rotation step, reads the
// Secrets the spec names, and puts their digests into the renderers' inputs, so that a changed Secret
// rolls the pods that mount it.
func (run *reconcileRun) secrets(ctx context.Context) {
	owned := []*corev1.Secret{run.signingKey(ctx)}
	if render.ManagedRedis(run.fs) {
		owned = append(owned, run.redisPassword(ctx))
	}
	digests, secretProblems, err := run.r.checkSecrets(ctx, run.fs, owned...) // secrets.go
	if err != nil {
		run.fail("SecretUnavailable", err)
		run.secretsKnown = false
	}
	run.Problems = append(run.Problems, secretProblems...)
	run.in.SecretDigests = digests
	run.Image = render.Image(run.fs, run.in)
	if run.Image == "" {
		run.Problems = append(run.Problems, problem{Reason: "NoImage", Message: "spec.image is empty and the operator has no --service-image"})
	}
}

// signingKey makes the signing-key Secret exist (or checks the team's: D53, signingkey.go), takes the
// rotation's next step when one is due (rotation.go), records the current key on the FormsService, and
// tells the renderers which keys the Secret holds. It returns the Secret (nil when it could not be read
// or created, or is gone).
func (run *reconcileRun) signingKey(ctx context.Context) *corev1.Secret {
	r, fs := run.r, run.fs
	key, keyProblem, err := r.ensureSigningKey(ctx, fs)
	switch {
	case err != nil:
		run.fail("SigningKeyUnavailable", fmt.Errorf("signing key Secret %s: %w", render.NamesOf(fs).SigningKey, err))
		run.secretsKnown = false
	case keyProblem != nil:
		run.Problems = append(run.Problems, *keyProblem)
	}
	switch {
	case key.Created && key.Replaced:
		r.event(fs, corev1.EventTypeWarning, "SigningKeyCreated", "Created Secret %s with a new signing key in place of the vanished key %s, as acknowledged (%s): every signed-in user must sign in again",
			key.Secret.Name, fs.Annotations[v1alpha1.SigningKeyIDAnnotation], v1alpha1.ReplaceVanishedSigningKeyAnnotation)
	case key.Created:
		r.event(fs, corev1.EventTypeNormal, "SigningKeyCreated", "Created Secret %s with a new signing key", key.Secret.Name)
	}
	// A key that cannot be read, or a Secret without one, has no rotation to take a step in; the team's
	// key is rotated where it comes from.
	if err == nil && keyProblem == nil {
		if key.External {
			run.SigningKey = externalKeyStatus(key.Secret)
		} else {
			st, wake, err := r.rotate(ctx, fs, key.Secret)
			if err != nil {
				run.fail("SigningKeyRotationFailed", fmt.Errorf("rotating the signing key in Secret %s: %w", key.Secret.Name, err))
			}
			run.SigningKey, run.wakeAt = st, wake
		}
		if err := r.recordSigningKey(ctx, fs, keyIDsOf(key.Secret).Current); err != nil {
			run.fail("SigningKeyRecordFailed", fmt.Errorf("recording the signing key's ID on the FormsService: %w", err))
		}
	}
	if key.Secret != nil {
		run.in.PreviousSigningKey = len(key.Secret.Data[render.PreviousSigningKeyKey]) > 0
		run.in.NextSigningKey = len(key.Secret.Data[render.NextSigningKeyKey]) > 0
		run.in.SigningKeyIDs = keyIDsOf(key.Secret).annotation()
		run.in.MFAKey = len(key.Secret.Data[render.MFAKeyKey]) > 0
	}
	return key.Secret
}

// redisPassword creates the managed Redis's password Secret once and returns it (nil, or empty, when
// it could not be read or created).
func (run *reconcileRun) redisPassword(ctx context.Context) *corev1.Secret {
	sec, createdNow, err := run.r.ensureRedisPassword(ctx, run.fs)
	switch {
	case err != nil:
		run.fail("RedisPasswordUnavailable", fmt.Errorf("redis password Secret %s: %w", render.NamesOf(run.fs).RedisPassword, err))
		run.secretsKnown, run.redisPasswordKnown = false, false
	case createdNow:
		run.r.eventAbout(run.fs, sec, corev1.EventTypeNormal, "Created", "Created Secret %s with a generated Redis password", sec.Name)
	}
	return sec
}
