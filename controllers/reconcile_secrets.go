package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

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

// signingKey creates the signing-key Secret once, takes the rotation's next step when one is due
// (rotation.go), and tells the renderers which keys the Secret holds. It returns the Secret (nil when it
// could not be read or created).
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
	if key.Created {
		r.event(fs, corev1.EventTypeNormal, "SigningKeyCreated", "Created Secret %s with a new signing key", key.Secret.Name)
	}
	// A key that cannot be read, or a Secret without one, has no rotation to take a step in.
	if err == nil && keyProblem == nil {
		st, wake, err := r.rotate(ctx, fs, key.Secret)
		if err != nil {
			run.fail("SigningKeyRotationFailed", fmt.Errorf("rotating the signing key in Secret %s: %w", key.Secret.Name, err))
		}
		run.SigningKey, run.wakeAt = st, wake
	}
	if key.Secret != nil {
		run.in.PreviousSigningKey = len(key.Secret.Data[render.PreviousSigningKeyKey]) > 0
		run.in.NextSigningKey = len(key.Secret.Data[render.NextSigningKeyKey]) > 0
		run.in.SigningKeyIDs = keyIDsOf(key.Secret).annotation()
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
