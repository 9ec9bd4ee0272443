package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueapply "sigs.k8s.io/kueue/client-go/applyconfiguration/kueue/v1beta2"

	"example.com/multikueue-dispatcher/policy"
)

// Clusters answers "which clusters, in which order, may this MultiKueue check use?".
type Clusters interface {
	// Of returns the clusters of the MultiKueueConfig behind AdmissionCheck check, in the
	// config's order; ok is false when check is not a MultiKueue check.
	Of(ctx context.Context, check string) (clusters []policy.Cluster, ok bool, err error)
}

// WorkloadReconciler writes .status.nominatedClusterNames of pending MultiKueue workloads.
type WorkloadReconciler struct {
	client.Client
	Clusters Clusters
	Settings Settings
	Events   events.EventRecorder

	mu     sync.Mutex
	rounds map[types.UID]time.Time // when each workload's current round started
}

func (r *WorkloadReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var wl kueue.Workload
	if err := r.Get(ctx, req.NamespacedName, &wl); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	clusters, ok, err := r.clustersOf(ctx, &wl)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok { // not (or no longer) pending MultiKueue work
		r.forget(wl.UID)
		return ctrl.Result{}, nil
	}
	current := wl.Status.NominatedClusterNames
	d := policy.Decide(r.Settings.Policy(), clusters, current, r.roundStart(&wl), time.Now())
	if !slices.Equal(d.Nominees, current) {
		if err := r.nominate(ctx, &wl, d.Nominees); err != nil {
			return ctrl.Result{}, err // a conflict means a newer version exists: retried
		}
		log.FromContext(ctx).Info("nominated", "clusters", d.Nominees, "was", current)
		r.Events.Eventf(&wl, nil, corev1.EventTypeNormal, "Nominated", "Dispatch",
			"nominated %s", strings.Join(d.Nominees, ", "))
	}
	r.setRoundStart(wl.UID, d.RoundStart)
	return ctrl.Result{RequeueAfter: d.Recheck}, nil
}

// nominate applies the nominations as this dispatcher's field manager, guarded by the
// resourceVersion that was read, so a decision on a stale read is refused, never applied.
func (r *WorkloadReconciler) nominate(ctx context.Context, wl *kueue.Workload, names []string) error {
	status := kueueapply.WorkloadStatus().WithNominatedClusterNames(names...)
	apply := kueueapply.Workload(wl.Name, wl.Namespace).
		WithResourceVersion(wl.ResourceVersion).
		WithStatus(status)
	return r.Status().Apply(ctx, apply, client.FieldOwner(r.Settings.FieldManager), client.ForceOwnership)
}

// clustersOf returns the clusters of the workload's pending MultiKueue check; ok is false when
// the workload is not ours to dispatch.
func (r *WorkloadReconciler) clustersOf(ctx context.Context, wl *kueue.Workload) ([]policy.Cluster, bool, error) {
	for _, check := range pendingChecks(wl) {
		if clusters, ok, err := r.Clusters.Of(ctx, check); err != nil || ok {
			return clusters, ok, err
		}
	}
	return nil, false, nil
}

// pendingChecks names the workload's Pending admission checks when it may be dispatched:
// quota reserved on the manager, not placed, finished, evicted or being deleted. Any other
// workload is left alone.
func pendingChecks(wl *kueue.Workload) []string {
	conditions := wl.Status.Conditions
	if wl.DeletionTimestamp != nil || (wl.Status.ClusterName != nil && *wl.Status.ClusterName != "") ||
		!apimeta.IsStatusConditionTrue(conditions, kueue.WorkloadQuotaReserved) ||
		apimeta.IsStatusConditionTrue(conditions, kueue.WorkloadFinished) ||
		apimeta.IsStatusConditionTrue(conditions, kueue.WorkloadEvicted) {
		return nil
	}
	var pending []string
	for _, state := range wl.Status.AdmissionChecks {
		if state.State == kueue.CheckStatePending {
			pending = append(pending, string(state.Name))
		}
	}
	return pending
}

// roundStart is when the workload's current round began: remembered, or else read back from
// the Workload, so a restarted replica or a newly elected leader continues the round rather
// than giving the current nominees a new one.
func (r *WorkloadReconciler) roundStart(wl *kueue.Workload) time.Time {
	r.mu.Lock()
	start, ok := r.rounds[wl.UID]
	r.mu.Unlock()
	if ok {
		return start
	}
	return lastNominated(wl, r.Settings.FieldManager)
}

// lastNominated is when fieldManager last changed the workload's status (only the nominations
// are its own), or zero. managedFields keep whole seconds: the time is rounded up, since a
// round start read too early would end the round before its time.
func lastNominated(wl *kueue.Workload, fieldManager string) time.Time {
	for _, entry := range wl.ManagedFields {
		if entry.Manager == fieldManager && entry.Subresource == "status" && entry.Time != nil {
			return entry.Time.Add(time.Second)
		}
	}
	return time.Time{}
}

func (r *WorkloadReconciler) setRoundStart(uid types.UID, start time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rounds[uid] = start
}

func (r *WorkloadReconciler) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.rounds, uid)
}

// SetupWithManager watches Workloads and, unless clusters are discovered once, everything
// that changes which clusters a workload may use.
func (r *WorkloadReconciler) SetupWithManager(mgr ctrl.Manager, watchClusters bool) error {
	r.rounds = map[types.UID]time.Time{}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&kueue.Workload{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Settings.Workers})
	if watchClusters {
		requeueAll := handler.EnqueueRequestsFromMapFunc(r.unplaced)
		b = b.Watches(&kueue.MultiKueueConfig{}, requeueAll).
			Watches(&kueue.MultiKueueCluster{}, requeueAll).
			Watches(&kueue.AdmissionCheck{}, requeueAll)
	}
	return b.Complete(r)
}

// unplaced lists the workloads that a cluster or config change may concern.
func (r *WorkloadReconciler) unplaced(ctx context.Context, _ client.Object) []reconcile.Request {
	var list kueue.WorkloadList
	if err := r.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing workloads")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if wl := &list.Items[i]; len(pendingChecks(wl)) > 0 {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wl)})
		}
	}
	return out
}

// WatchedClusters reads checks, configs and clusters from the manager's cache (kept current
// by watches), so a cluster added to a config is seen at once.
type WatchedClusters struct{ client.Reader }

func (w WatchedClusters) Of(ctx context.Context, check string) ([]policy.Cluster, bool, error) {
	var ac kueue.AdmissionCheck
	if err := w.Get(ctx, client.ObjectKey{Name: check}, &ac); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	config := multiKueueConfigOf(&ac)
	if config == "" {
		return nil, false, nil
	}
	var mkc kueue.MultiKueueConfig
	if err := w.Get(ctx, client.ObjectKey{Name: config}, &mkc); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	clusters := make([]policy.Cluster, 0, len(mkc.Spec.Clusters))
	for _, name := range mkc.Spec.Clusters {
		var c kueue.MultiKueueCluster
		err := w.Get(ctx, client.ObjectKey{Name: name}, &c)
		if client.IgnoreNotFound(err) != nil {
			return nil, false, err
		}
		active := err == nil && apimeta.IsStatusConditionTrue(c.Status.Conditions, kueue.MultiKueueClusterActive)
		clusters = append(clusters, policy.Cluster{Name: name, Active: active})
	}
	return clusters, true, nil
}

func multiKueueConfigOf(ac *kueue.AdmissionCheck) string {
	p := ac.Spec.Parameters
	if ac.Spec.ControllerName != kueue.MultiKueueControllerName || p == nil ||
		p.Kind != "MultiKueueConfig" || p.APIGroup != kueue.SchemeGroupVersion.Group {
		return ""
	}
	return p.Name
}

// SnapshotClusters is what DiscoverClustersOnce sees: checks, configs and clusters as they
// were at start. Checks and clusters made later are unknown to it.
type SnapshotClusters map[string][]policy.Cluster // check name -> its clusters

// DiscoverOnce takes the snapshot with uncached reads, before any watch starts.
func DiscoverOnce(ctx context.Context, r client.Reader) (SnapshotClusters, error) {
	var checks kueue.AdmissionCheckList
	if err := r.List(ctx, &checks); err != nil {
		return nil, fmt.Errorf("listing AdmissionChecks: %w", err)
	}
	snapshot := SnapshotClusters{}
	watched := WatchedClusters{r}
	for _, ac := range checks.Items {
		clusters, ok, err := watched.Of(ctx, ac.Name)
		if err != nil {
			return nil, err
		}
		if ok {
			snapshot[ac.Name] = clusters
		}
	}
	return snapshot, nil
}

func (s SnapshotClusters) Of(_ context.Context, check string) ([]policy.Cluster, bool, error) {
	clusters, ok := s[check]
	return clusters, ok, nil
}
