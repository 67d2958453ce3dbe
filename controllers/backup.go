package controllers

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get;list;watch;create;update;patch;delete

// dataResult is what the backup and restore part of a reconcile found (docs/architecture.md D40).
type dataResult struct {
	// ServicesMayStart is false while a new FormsService's store waits for its restore: the services'
	// Deployments are not created until it succeeded, so nothing writes to the store before it.
	ServicesMayStart bool
	// Restored is the Restored condition (nil without spec.restoreFrom).
	Restored *metav1.Condition
	// Backup is status.backup (nil without spec.backup and without a past backup to report).
	Backup *v1alpha1.BackupStatus
	// BackedUp is the BackedUp condition (nil without spec.backup).
	BackedUp *metav1.Condition
}

// reconcileData applies the backup CronJob, a requested backup's Job and a new FormsService's restore
// Job, with their ServiceAccount and NetworkPolicy, and reads how their Jobs went. configApplied says
// the ConfigMap the Jobs mount is applied: the restore waits for it, and for the store to be ready.
func (run *reconcileRun) reconcileData(ctx context.Context, configApplied bool) dataResult {
	r, fs, in := run.r, run.fs, run.in
	res := dataResult{ServicesMayStart: true}
	if render.DataJobsWanted(fs) {
		run.apply(ctx, render.DataServiceAccount(fs))
	} else {
		run.remove(ctx, &corev1.ServiceAccount{ObjectMeta: objectMeta(fs, render.DataServiceAccountName(fs))}, "ServiceAccount")
	}
	if np := render.DataNetworkPolicy(fs); np != nil {
		run.apply(ctx, np)
	} else {
		run.remove(ctx, &networkingv1.NetworkPolicy{ObjectMeta: objectMeta(fs, render.DataNetworkPolicyName(fs))}, "NetworkPolicy")
	}
	if cj := render.BackupCronJob(fs, in); cj != nil {
		run.apply(ctx, cj)
	} else {
		run.remove(ctx, &batchv1.CronJob{ObjectMeta: objectMeta(fs, render.BackupCronJobName(fs))}, "CronJob")
	}

	jobs, err := r.dataJobs(ctx, fs)
	if err != nil {
		run.fail("ReadFailed", fmt.Errorf("listing the backup and restore Jobs: %w", err))
		// Without the Jobs nothing is known: the services of a restoring platform keep waiting.
		res.ServicesMayStart = fs.Spec.RestoreFrom == nil
		return res
	}

	// A requested backup: one Job per request id, made once (status.backup.lastRequest remembers it
	// after the Job's time to live has removed it).
	lastRequest := ""
	if fs.Status.Backup != nil {
		lastRequest = fs.Status.Backup.LastRequest
	}
	if req := fs.Annotations[v1alpha1.BackupRequestAnnotation]; req != "" && fs.Spec.Backup != nil {
		name := render.BackupRequestJobName(fs, req)
		if _, made := jobs[name]; made || req == lastRequest {
			lastRequest = req
		} else if a, ok := run.apply(ctx, render.BackupRequestJob(fs, in, req)); ok {
			lastRequest = req
			if a.Result == created { // not again when the cache had not seen the Job yet
				r.event(fs, corev1.EventTypeNormal, "BackupRequested", "Started backup Job %s for request %q", name, req)
			}
		}
	}
	res.Backup, res.BackedUp = backupStatus(fs, jobs, lastRequest)

	if fs.Spec.RestoreFrom != nil {
		res.Restored, res.ServicesMayStart = run.restore(ctx, jobs, configApplied)
	}
	return res
}

// dataJobs are fs's backup and restore Jobs, by name, from the cache.
func (r *FormsServiceReconciler) dataJobs(ctx context.Context, fs *v1alpha1.FormsService) (map[string]*batchv1.Job, error) {
	if !render.DataJobsWanted(fs) && fs.Status.Backup == nil {
		return nil, nil // nothing to report: spare the cache a list
	}
	list := &batchv1.JobList{}
	if err := r.Client.List(ctx, list, client.InNamespace(fs.Namespace), client.MatchingLabels{render.LabelInstance: fs.Name}); err != nil {
		return nil, err
	}
	out := map[string]*batchv1.Job{}
	for i := range list.Items {
		j := &list.Items[i]
		if c := j.Labels[render.LabelComponent]; c == render.Backup || c == render.Restore {
			out[j.Name] = j
		}
	}
	return out, nil
}

// jobOutcome is Running, Succeeded or Failed, and the failure's message.
func jobOutcome(j *batchv1.Job) (string, string) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return v1alpha1.JobSucceeded, ""
		case batchv1.JobFailed:
			return v1alpha1.JobFailed, fmt.Sprintf("%s: %s (kubectl logs job/%s)", c.Reason, c.Message, j.Name)
		}
	}
	return v1alpha1.JobRunning, ""
}

// backupStatus reports the newest backup Job and the newest that succeeded. A backup whose Job is gone
// (its time to live, the CronJob's history) stays reported until a newer one replaces it: it is still
// at the target.
func backupStatus(fs *v1alpha1.FormsService, jobs map[string]*batchv1.Job, lastRequest string) (*v1alpha1.BackupStatus, *metav1.Condition) {
	st := &v1alpha1.BackupStatus{LastRequest: lastRequest}
	if old := fs.Status.Backup; old != nil {
		st.Last, st.LastSuccessful = old.Last, old.LastSuccessful
	}
	var backups []*batchv1.Job
	for _, j := range jobs {
		if render.IsBackupJobOf(fs, j) {
			backups = append(backups, j)
		}
	}
	// Oldest first, by when they started (creation times have whole seconds: a requested and a
	// scheduled backup may share one).
	sort.Slice(backups, func(a, b int) bool {
		ta, tb := jobStart(backups[a]), jobStart(backups[b])
		if ta.Equal(tb) {
			return backups[a].Name < backups[b].Name
		}
		return ta.Before(tb)
	})
	newer := func(old *v1alpha1.BackupRun, j *batchv1.Job) bool {
		return old == nil || old.Job == j.Name || old.StartTime == nil || !jobStart(j).Before(old.StartTime)
	}
	for _, j := range backups {
		outcome, msg := jobOutcome(j)
		run := &v1alpha1.BackupRun{
			Job: j.Name, Object: render.BackupObject(fs, j), Outcome: outcome, Message: msg,
			Request: render.BackupJobRequest(j), StartTime: jobStart(j), CompletionTime: j.Status.CompletionTime,
		}
		if newer(st.Last, j) {
			st.Last = run
		}
		if outcome == v1alpha1.JobSucceeded && newer(st.LastSuccessful, j) {
			st.LastSuccessful = run
		}
	}
	if fs.Spec.Backup != nil && fs.Spec.Backup.Schedule != "" {
		st.CronJob = render.BackupCronJobName(fs)
	}
	if fs.Spec.Backup == nil {
		if st.Last == nil && st.LastSuccessful == nil && st.LastRequest == "" {
			return nil, nil
		}
		return st, nil
	}
	cond := &metav1.Condition{Type: v1alpha1.ConditionBackedUp, Status: metav1.ConditionUnknown, Reason: "NoBackupYet",
		Message: "No backup has finished yet."}
	// The newest finished backup says whether backups work; a running one has not said yet.
	for i := len(backups) - 1; i >= 0; i-- {
		outcome, msg := jobOutcome(backups[i])
		if outcome == v1alpha1.JobRunning {
			continue
		}
		if outcome == v1alpha1.JobSucceeded {
			cond.Status, cond.Reason = metav1.ConditionTrue, "BackupSucceeded"
			cond.Message = fmt.Sprintf("Job %s wrote %s.", backups[i].Name, render.BackupObject(fs, backups[i]))
		} else {
			cond.Status, cond.Reason = metav1.ConditionFalse, "BackupFailed"
			cond.Message = fmt.Sprintf("Job %s failed: %s", backups[i].Name, msg)
		}
		break
	}
	if cond.Status == metav1.ConditionUnknown && st.LastSuccessful != nil {
		cond.Status, cond.Reason = metav1.ConditionTrue, "BackupSucceeded"
		cond.Message = fmt.Sprintf("Job %s wrote %s.", st.LastSuccessful.Job, st.LastSuccessful.Object)
	}
	return st, cond
}

// jobStart is when a Job started, or was created while it has not.
func jobStart(j *batchv1.Job) *metav1.Time {
	if j.Status.StartTime != nil {
		return j.Status.StartTime
	}
	return &j.CreationTimestamp
}

// restore runs a new FormsService's restore Job once the store is ready, and says whether the services
// may start: only once it succeeded. The Job tries a few times itself (render.RestoreRetries); a Job
// that failed is Stalled (RestoreFailed) and is not replaced by itself: deleting it tries again.
func (run *reconcileRun) restore(ctx context.Context, jobs map[string]*batchv1.Job, configApplied bool) (*metav1.Condition, bool) {
	r, fs, in := run.r, run.fs, run.in
	name := render.RestoreJobName(fs)
	cond := func(s metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionRestored, Status: s, Reason: reason, Message: msg}
	}
	if j, ok := jobs[name]; ok {
		switch outcome, msg := jobOutcome(j); outcome {
		case v1alpha1.JobSucceeded:
			return cond(metav1.ConditionTrue, "RestoreSucceeded", fmt.Sprintf("Job %s restored %s; the services run on it.", name, fs.Spec.RestoreFrom.Object)), true
		case v1alpha1.JobFailed:
			m := fmt.Sprintf("restore Job %s failed: %s. The services stay stopped. Delete the Job to try again (an interrupted restore of the same backup finishes; anything else needs an empty store), or remove spec.restoreFrom from a new FormsService to start empty.", name, msg)
			run.Problems = append(run.Problems, problem{Reason: "RestoreFailed", Message: m})
			return cond(metav1.ConditionFalse, "RestoreFailed", m), false
		default:
			return cond(metav1.ConditionFalse, "Restoring", fmt.Sprintf("Job %s restores %s; the services start when it has succeeded.", name, fs.Spec.RestoreFrom.Object)), false
		}
	}
	// The Job is gone after it succeeded (someone deleted it): the store holds the backup.
	if meta.IsStatusConditionTrue(fs.Status.Conditions, v1alpha1.ConditionRestored) {
		c := meta.FindStatusCondition(fs.Status.Conditions, v1alpha1.ConditionRestored)
		return cond(metav1.ConditionTrue, c.Reason, c.Message), true
	}
	ready, err := r.storeReady(ctx, fs)
	if err != nil {
		run.fail("ReadFailed", fmt.Errorf("StatefulSet %s: %w", render.NamesOf(fs).Redis, err))
		return cond(metav1.ConditionFalse, "WaitingForStore", err.Error()), false
	}
	if !ready || !configApplied {
		return cond(metav1.ConditionFalse, "WaitingForStore", "The restore starts once the store is ready and the configuration applied."), false
	}
	if a, ok := run.apply(ctx, render.RestoreJob(fs, in)); ok && a.Result == created {
		r.event(fs, corev1.EventTypeNormal, "RestoreStarted", "Started restore Job %s from %s", name, fs.Spec.RestoreFrom.Object)
	}
	return cond(metav1.ConditionFalse, "Restoring", fmt.Sprintf("Job %s restores %s; the services start when it has succeeded.", name, fs.Spec.RestoreFrom.Object)), false
}

// storeReady: the managed Redis has a ready replica (an external Redis is assumed to run).
func (r *FormsServiceReconciler) storeReady(ctx context.Context, fs *v1alpha1.FormsService) (bool, error) {
	if !render.ManagedRedis(fs) {
		return true, nil
	}
	s := &appsv1.StatefulSet{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: render.NamesOf(fs).Redis}, s)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return s.Status.ReadyReplicas > 0, nil
}

// setDataStatus writes what reconcileData found into the status: status.backup and the BackedUp and
// Restored conditions; while a restore holds the services, Ready says so.
func (d dataResult) setDataStatus(fs *v1alpha1.FormsService, st *v1alpha1.FormsServiceStatus) {
	st.Backup = d.Backup
	for _, c := range []struct {
		typ  string
		cond *metav1.Condition
	}{{v1alpha1.ConditionBackedUp, d.BackedUp}, {v1alpha1.ConditionRestored, d.Restored}} {
		if c.cond == nil {
			meta.RemoveStatusCondition(&st.Conditions, c.typ)
			continue
		}
		c.cond.ObservedGeneration = fs.Generation
		meta.SetStatusCondition(&st.Conditions, *c.cond)
	}
	// Only when nothing else is wrong: Degraded=True and Ready=False always share their reason.
	if d.Restored != nil && !d.ServicesMayStart && !meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionDegraded) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: d.Restored.Reason, Message: d.Restored.Message, ObservedGeneration: fs.Generation})
	}
}
