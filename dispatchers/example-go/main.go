// Command multikueue-dispatcher is an external MultiKueue dispatcher for Kueue: it nominates
// worker clusters for pending Workloads by writing .status.nominatedClusterNames.
//
// It runs as a Pod would: in-cluster configuration only, leader election on a Lease in the
// Pod's own namespace, settings from the file named by $DISPATCHER_CONFIG.
package main

import (
	"context"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

const name = "example-dispatcher"

func main() {
	ctrl.SetLogger(zap.New())
	log := ctrl.Log.WithName(name)
	if err := run(); err != nil {
		log.Error(err, "exiting")
		os.Exit(1)
	}
}

func run() error {
	settings, err := LoadSettings()
	if err != nil {
		return err
	}
	config, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	config.QPS, config.Burst = settings.KubeQPS, settings.KubeBurst
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := kueue.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                        scheme,
		LeaderElection:                settings.LeaderElection,
		LeaderElectionID:              settings.LeaderElectionID, // namespace: the Pod's
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: settings.MetricsBindAddress},
		HealthProbeBindAddress:        settings.HealthProbeBindAddress,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	clusters, err := clusterSource(ctx, settings, mgr)
	if err != nil {
		return err
	}
	reconciler := &WorkloadReconciler{
		Client:   mgr.GetClient(),
		Clusters: clusters,
		Settings: settings,
		Events:   mgr.GetEventRecorder(name),
	}
	if err := reconciler.SetupWithManager(mgr, !settings.DiscoverClustersOnce); err != nil {
		return err
	}
	ctrl.Log.WithName(name).Info("starting", "stepSize", settings.StepSize,
		"roundTimeout", settings.RoundTimeout.Duration, "discoverClustersOnce", settings.DiscoverClustersOnce)
	return mgr.Start(ctx)
}

// clusterSource is the manager's cache, or a snapshot taken now when clusters are discovered once.
func clusterSource(ctx context.Context, settings Settings, mgr ctrl.Manager) (Clusters, error) {
	if !settings.DiscoverClustersOnce {
		return WatchedClusters{mgr.GetClient()}, nil
	}
	return DiscoverOnce(ctx, mgr.GetAPIReader())
}
