package main

import (
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"example.com/multikueue-dispatcher/policy"
)

// ConfigEnv names the environment variable that holds the settings file's path (in a Pod:
// a mounted ConfigMap).
const ConfigEnv = "DISPATCHER_CONFIG"

// Settings is the dispatcher's configuration file.
type Settings struct {
	// FieldManager is the server-side-apply field manager of the nominations.
	FieldManager string `json:"fieldManager"`
	// StepSize clusters are added per round.
	StepSize int `json:"stepSize"`
	// RoundTimeout is how long nominees get to admit the workload before more are added.
	RoundTimeout metav1.Duration `json:"roundTimeout"`
	// DiscoverClustersOnce reads MultiKueue's clusters and configs once, at start, and never
	// watches them: a common pattern, kept here to show what a conformance run makes of it.
	DiscoverClustersOnce bool `json:"discoverClustersOnce"`
	// Workers is the number of workloads reconciled at once.
	Workers int `json:"workers"`
	// KubeQPS and KubeBurst bound the client's request rate.
	KubeQPS   float32 `json:"kubeQPS"`
	KubeBurst int     `json:"kubeBurst"`
	// LeaderElection on a Lease in the Pod's namespace, named LeaderElectionID.
	LeaderElection   bool   `json:"leaderElection"`
	LeaderElectionID string `json:"leaderElectionID"`
	// MetricsBindAddress and HealthProbeBindAddress; "0" turns a server off.
	MetricsBindAddress     string `json:"metricsBindAddress"`
	HealthProbeBindAddress string `json:"healthProbeBindAddress"`
}

func defaults() Settings {
	return Settings{
		FieldManager:           "example-dispatcher",
		StepSize:               1,
		RoundTimeout:           metav1.Duration{Duration: 5 * time.Minute},
		Workers:                4,
		KubeQPS:                50,
		KubeBurst:              100,
		LeaderElection:         true,
		LeaderElectionID:       "example-dispatcher",
		MetricsBindAddress:     "0",
		HealthProbeBindAddress: "0",
	}
}

// LoadSettings reads the file named by $DISPATCHER_CONFIG over the defaults (no file: defaults).
func LoadSettings() (Settings, error) {
	s := defaults()
	path := os.Getenv(ConfigEnv)
	if path == "" {
		return s, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("%s: %w", ConfigEnv, err)
	}
	if err := yaml.UnmarshalStrict(raw, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if s.StepSize < 1 || s.RoundTimeout.Duration <= 0 || s.Workers < 1 {
		return s, fmt.Errorf("%s: stepSize and workers must be >= 1 and roundTimeout positive", path)
	}
	return s, nil
}

// Policy is the part of the settings the dispatch policy reads.
func (s Settings) Policy() policy.Settings {
	return policy.Settings{Step: s.StepSize, RoundTimeout: s.RoundTimeout.Duration}
}
