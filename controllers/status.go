package controllers

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// problem is something that keeps the platform from matching the resource; it makes Degraded True.
type problem struct {
	// Reason is a CamelCase condition reason, e.g. RedisPasswordSecretMissing.
	Reason string
	// Message is written for the person who has to fix it.
	Message string
	// Transient marks an API error the operator retries by itself (a timeout, a conflict, an API server
	// that is away): Reconciling rather than Stalled.
	Transient bool
}

// apiProblem is the problem of a failed API request about an object: Stalled when the API server refused
// the request itself (permanent), Reconciling when it is retried.
func apiProblem(reason string, err error) problem {
	var notOwned *notOwnedError
	if errors.As(err, &notOwned) {
		reason = "NotOwned"
	}
	return problem{Reason: reason, Message: err.Error(), Transient: !permanent(err)}
}

// workloadState is what the cluster says about one Deployment or StatefulSet.
type workloadState struct {
	Component string
	Kind      string
	// Found is false when the object does not exist (yet).
	Found bool
	// Generation of the object, and the status it reports.
	Generation int64
	Desired    int32
	// MinAvailable is how many available replicas serve (0: Desired): the highly available Redis serves
	// with two of its three pods.
	MinAvailable int32
	Status       workloadStatus
	// Conditions of a Deployment (Progressing, ReplicaFailure).
	Conditions []appsv1.DeploymentCondition
	// Image is a service Deployment's image: its pod template's container named for the component.
	Image string
}

// workloadStatus is the part of a Deployment's or StatefulSet's status the operator reads.
type workloadStatus struct {
	ObservedGeneration int64
	Replicas           int32
	UpdatedReplicas    int32
	AvailableReplicas  int32
}

func deploymentState(component string, d *appsv1.Deployment) workloadState {
	if d == nil {
		return workloadState{Component: component, Kind: "Deployment"}
	}
	return workloadState{
		Component: component, Kind: "Deployment", Found: true,
		Generation: d.Generation, Desired: ptr.Deref(d.Spec.Replicas, 1),
		Status: workloadStatus{
			ObservedGeneration: d.Status.ObservedGeneration, Replicas: d.Status.Replicas,
			UpdatedReplicas: d.Status.UpdatedReplicas, AvailableReplicas: d.Status.AvailableReplicas,
		},
		Conditions: d.Status.Conditions,
		Image:      serviceImageOf(component, d),
	}
}

// serviceImageOf is the image of a service Deployment's own container ("" when it has none).
func serviceImageOf(component string, d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == component {
			return c.Image
		}
	}
	return ""
}

func statefulSetState(component string, s *appsv1.StatefulSet) workloadState {
	if s == nil {
		return workloadState{Component: component, Kind: "StatefulSet"}
	}
	return workloadState{
		Component: component, Kind: "StatefulSet", Found: true,
		Generation: s.Generation, Desired: ptr.Deref(s.Spec.Replicas, 1),
		Status: workloadStatus{
			ObservedGeneration: s.Status.ObservedGeneration, Replicas: s.Status.Replicas,
			UpdatedReplicas: s.Status.UpdatedReplicas, AvailableReplicas: s.Status.AvailableReplicas,
		},
	}
}

// rollingOut says why a workload is not yet fully on its current spec, or "" when it is.
func (w workloadState) rollingOut() string {
	switch {
	case !w.Found:
		return fmt.Sprintf("%s: %s not created yet", w.Component, w.Kind)
	case w.Status.ObservedGeneration < w.Generation:
		return fmt.Sprintf("%s: the %s controller has not seen the new spec yet", w.Component, w.Kind)
	case w.Status.UpdatedReplicas < w.Desired:
		return fmt.Sprintf("%s: %d of %d replicas updated", w.Component, w.Status.UpdatedReplicas, w.Desired)
	case w.Status.Replicas > w.Status.UpdatedReplicas:
		return fmt.Sprintf("%s: %d old replicas terminating", w.Component, w.Status.Replicas-w.Status.UpdatedReplicas)
	}
	return ""
}

// unavailable says why a workload does not serve at full strength, or "" when it does.
func (w workloadState) unavailable() string {
	switch {
	case !w.Found:
		return fmt.Sprintf("%s: %s not created yet", w.Component, w.Kind)
	case w.Status.AvailableReplicas < w.serving():
		return fmt.Sprintf("%s: %d of %d replicas available", w.Component, w.Status.AvailableReplicas, w.Desired)
	}
	return ""
}

// serving is how many available replicas the workload needs to serve.
func (w workloadState) serving() int32 {
	if w.MinAvailable > 0 && w.MinAvailable < w.Desired {
		return w.MinAvailable
	}
	return w.Desired
}

// failed reports a Deployment whose rollout the Deployment controller gave up on or cannot create pods for.
func (w workloadState) failed() *problem {
	for _, c := range w.Conditions {
		switch {
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded":
			return &problem{Reason: "ProgressDeadlineExceeded", Message: fmt.Sprintf("%s: rollout stalled: %s", w.Component, c.Message)}
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			return &problem{Reason: "ReplicaFailure", Message: fmt.Sprintf("%s: cannot create pods: %s", w.Component, c.Message)}
		}
	}
	return nil
}

// observed is what a reconcile found besides the workloads: what it could not do, and what it applied.
type observed struct {
	// Problems kept the reconcile from applying the current spec in full (Degraded). The workloads' own
	// failures are added by buildStatus.
	Problems []problem
	// RolloutBlocked: the ConfigMap and the Deployments were not applied (a Secret or the configuration
	// is wrong): the running pods keep the last good state.
	RolloutBlocked bool
	// Image is the services' image the Deployments were given ("" when there is none).
	Image string
	// PendingImage is the operator's image whose upgrade waits for a slot, and UpgradeQueued says so
	// for Progressing (upgrades.go); both "" when none waits.
	PendingImage  string
	UpgradeQueued string
	// UpgradeHeld says that the upgrade to PendingImage waits for the team's updatePolicy, and
	// UpgradeHeldReason why (UpgradeAwaitsApproval: mode Manual; UpgradeAwaitsWindow: no maintenance
	// window is open): not the operator's work, so neither Progressing nor Reconciling.
	UpgradeHeld, UpgradeHeldReason string
	// Routes are the Ingress' and HTTPRoutes' acceptance.
	Routes []v1alpha1.RouteStatus
	// SigningKey is where the signing key's rotation stands (nil when the Secret could not be read).
	SigningKey *v1alpha1.SigningKeyStatus
	// RedisRoll says where the highly available Redis's roll stands ("" when none is under way,
	// redisroll.go): Progressing's and Reconciling's message, reason RedisHARolling.
	RedisRoll string
	// RetainedRedis is the ManagedRedisRetained condition's message: the managed Redis of before runs on
	// beside the external one the spec names ("" when there is none, D72).
	RetainedRedis string
}

// buildStatus rebuilds the status from what the reconcile found. It never reads the old status except
// to keep the conditions' transition times, so a status is always a report of the world, not a cache.
func buildStatus(fs *v1alpha1.FormsService, workloads []workloadState, o observed) v1alpha1.FormsServiceStatus {
	st := v1alpha1.FormsServiceStatus{
		ObservedGeneration: fs.Generation,
		Conditions:         append([]metav1.Condition(nil), fs.Status.Conditions...),
		URL:                render.PublicURL(fs),
		OriginCount:        int32(len(fs.Spec.AllowedOrigins)),
		ClientCount:        int32(len(fs.Spec.OAuthClients)),
		SigningKeySecret:   render.NamesOf(fs).SigningKey,
		SigningKey:         o.SigningKey,
		Image:              o.Image,
		Routes:             o.Routes,
		OperandStatus: v1alpha1.OperandStatus{
			// Kept from the last status until a rollout finishes: it names what runs, not what is asked.
			OperandVersion: fs.Status.OperandVersion,
			PendingImage:   o.PendingImage,
		},
	}
	if v := rolledOutImage(workloads); v != "" {
		st.OperandVersion = v
	}
	problems := append([]problem(nil), o.Problems...)
	for _, r := range o.Routes {
		if r.Accepted == metav1.ConditionFalse {
			problems = append(problems, problem{Reason: "RouteNotAccepted", Message: fmt.Sprintf("%s %s: %s", r.Kind, r.Name, r.Message)})
		}
	}
	var rolling, unavailable []string
	for _, w := range workloads {
		if p := w.failed(); p != nil {
			problems = append(problems, *p)
		}
		if m := w.rollingOut(); m != "" {
			rolling = append(rolling, m)
		}
		if m := w.unavailable(); m != "" {
			unavailable = append(unavailable, m)
		}
		if w.Found {
			st.Components = append(st.Components, v1alpha1.ComponentStatus{
				Name: w.Component, Replicas: w.Desired,
				AvailableReplicas: w.Status.AvailableReplicas, UpdatedReplicas: w.Status.UpdatedReplicas,
			})
		}
	}

	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: fs.Generation,
		})
	}
	// The conditions never contradict each other: Degraded=True makes Ready=False; Progressing stays
	// True until every workload runs the current spec, including while the reconcile could not roll it
	// out at all; Stalled (a problem a person must fix) and Reconciling (the operator is still at work)
	// are never True together, and one of them is True whenever Progressing is.
	switch {
	case o.RolloutBlocked:
		set(v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RolloutBlocked",
			"The current spec is not rolled out until this is fixed: "+joinProblems(problems))
	case len(rolling) > 0:
		set(v1alpha1.ConditionProgressing, metav1.ConditionTrue, rollingReason(o), strings.Join(withQueue(withRedisRoll(rolling, o), cmp.Or(o.UpgradeQueued, o.UpgradeHeld)), "; "))
	case o.UpgradeQueued != "":
		set(v1alpha1.ConditionProgressing, metav1.ConditionTrue, "UpgradeQueued", o.UpgradeQueued)
	case o.UpgradeHeld != "":
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, o.UpgradeHeldReason, o.UpgradeHeld)
	default:
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, "RolloutComplete", "Every workload runs the current spec.")
	}
	switch {
	case len(problems) > 0:
		set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, problems[0].Reason, joinProblems(problems))
		// The problem is the likelier cause of any unavailability; say it first.
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, problems[0].Reason, strings.Join(append([]string{joinProblems(problems)}, unavailable...), "; "))
	case len(unavailable) > 0:
		set(v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected", "The platform matches the resource.")
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, "ServicesUnavailable", strings.Join(unavailable, "; "))
	default:
		set(v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected", "The platform matches the resource.")
		set(v1alpha1.ConditionReady, metav1.ConditionTrue, "Available", "Every service has its desired replicas available.")
	}

	redisHA(fs, workloads, set, &st)
	// A retained store is kept on purpose and the services do not use it: neither Degraded nor
	// unready, but reported, with the way to remove it.
	if o.RetainedRedis != "" {
		set(v1alpha1.ConditionManagedRedisRetained, metav1.ConditionTrue, "ExternalRedisInUse", o.RetainedRedis)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionManagedRedisRetained)
	}

	var stuck, retrying []problem
	for _, p := range problems {
		if p.Transient {
			retrying = append(retrying, p)
		} else {
			stuck = append(stuck, p)
		}
	}
	switch {
	case len(stuck) > 0:
		set(v1alpha1.ConditionStalled, metav1.ConditionTrue, stuck[0].Reason, joinProblems(stuck))
		set(v1alpha1.ConditionReconciling, metav1.ConditionFalse, "Stalled", "Waiting for the problem in Stalled to be fixed.")
	case len(retrying) > 0:
		set(v1alpha1.ConditionStalled, metav1.ConditionFalse, "Retrying", "The operator retries by itself.")
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, "RetryingAfterError", joinProblems(retrying))
	case len(rolling) > 0:
		set(v1alpha1.ConditionStalled, metav1.ConditionFalse, "RollingOut", "Nothing holds the rollout up.")
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, rollingReason(o), strings.Join(withRedisRoll(rolling, o), "; "))
	case o.UpgradeQueued != "":
		// The operator is still at work, by itself: the upgrade starts when a slot frees.
		set(v1alpha1.ConditionStalled, metav1.ConditionFalse, "AsExpected", "Nothing holds the platform up.")
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, "UpgradeQueued", o.UpgradeQueued)
	case o.UpgradeHeld != "" && len(unavailable) == 0:
		// The spec is rolled out; the new image waits for a person or a window, not for the operator.
		set(v1alpha1.ConditionStalled, metav1.ConditionFalse, "AsExpected", "Nothing holds the platform up.")
		set(v1alpha1.ConditionReconciling, metav1.ConditionFalse, o.UpgradeHeldReason, o.UpgradeHeld)
	case len(unavailable) > 0:
		// Rolled out but not (yet, or no longer) available: pods starting, or crashing without the
		// Deployment controller having given up. kstatus must not call that Current.
		set(v1alpha1.ConditionStalled, metav1.ConditionFalse, "AsExpected", "Nothing holds the platform up.")
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, "WaitingForAvailability", strings.Join(unavailable, "; "))
	default:
		set(v1alpha1.ConditionStalled, metav1.ConditionFalse, "AsExpected", "Nothing holds the platform up.")
		set(v1alpha1.ConditionReconciling, metav1.ConditionFalse, "ReconciliationSucceeded", "The platform runs the current spec.")
	}
	return st
}

// rollingReason is Progressing's and Reconciling's reason while workloads roll: RedisHARolling while
// the operator rolls the highly available Redis's pods itself (redisroll.go).
func rollingReason(o observed) string {
	if o.RedisRoll != "" {
		return redisRollReason
	}
	return "RollingOut"
}

// withRedisRoll puts the Redis roll's message first.
func withRedisRoll(rolling []string, o observed) []string {
	if o.RedisRoll == "" {
		return rolling
	}
	return append([]string{"redis: " + strings.TrimSuffix(o.RedisRoll, ".")}, rolling...)
}

// withQueue adds a waiting upgrade's message to what rolls out now.
func withQueue(rolling []string, queued string) []string {
	if queued == "" {
		return rolling
	}
	return append(slices.Clone(rolling), queued)
}

// rolledOutImage is the image every service Deployment has fully rolled out (updated, available, no old
// pods), or "" while any is missing, rolling, short of replicas or on another image.
func rolledOutImage(workloads []workloadState) string {
	image := ""
	for _, w := range workloads {
		if w.Kind != "Deployment" {
			continue
		}
		if w.Image == "" || w.rollingOut() != "" || w.unavailable() != "" || (image != "" && w.Image != image) {
			return ""
		}
		image = w.Image
	}
	return image
}

// redisHA sets RedisHighAvailability for a FormsService with the highly available Redis, and removes it
// otherwise: Ready says whether the store serves (two pods of three do), this says whether it would
// survive the loss of one more.
func redisHA(fs *v1alpha1.FormsService, workloads []workloadState, set func(t string, s metav1.ConditionStatus, reason, msg string), st *v1alpha1.FormsServiceStatus) {
	if !render.RedisHA(fs) {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionRedisHighAvailability)
		return
	}
	for _, w := range workloads {
		if w.Component != render.Redis {
			continue
		}
		switch {
		case !w.Found:
			set(v1alpha1.ConditionRedisHighAvailability, metav1.ConditionFalse, "NotCreated", "The Redis StatefulSet is not created yet.")
		case w.Status.AvailableReplicas >= w.Desired:
			set(v1alpha1.ConditionRedisHighAvailability, metav1.ConditionTrue, "AllNodesAvailable",
				fmt.Sprintf("%d of %d Redis pods available: the store survives the loss of any one.", w.Status.AvailableReplicas, w.Desired))
		case w.Status.AvailableReplicas >= w.serving():
			set(v1alpha1.ConditionRedisHighAvailability, metav1.ConditionFalse, "NodesUnavailable",
				fmt.Sprintf("%d of %d Redis pods available: the store serves, but the loss of one more stops writes.", w.Status.AvailableReplicas, w.Desired))
		default:
			set(v1alpha1.ConditionRedisHighAvailability, metav1.ConditionFalse, "NotServing",
				fmt.Sprintf("%d of %d Redis pods available: too few to serve.", w.Status.AvailableReplicas, w.Desired))
		}
	}
}

func joinProblems(ps []problem) string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Message
	}
	return strings.Join(msgs, "; ")
}
