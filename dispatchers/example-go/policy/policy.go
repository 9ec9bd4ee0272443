// Package policy decides which clusters a pending workload is nominated to, and when.
//
// It is pure (no API calls, the clock is passed in), so every rule is unit-tested without a
// cluster. The rule is Kueue's Incremental dispatcher with a configurable step and round:
// nominate the first Step active clusters of the MultiKueueConfig, in its order; when no
// nominee has admitted the workload within RoundTimeout, add the next Step. Earlier nominees
// keep their copies (and their place in the workers' queues), so autoscaling starts in at most
// Step more clusters per round.
package policy

import (
	"slices"
	"time"
)

// MaxNominees is the API's limit on .status.nominatedClusterNames.
const MaxNominees = 20

// Settings are the knobs of the policy.
type Settings struct {
	Step         int
	RoundTimeout time.Duration
}

// Cluster is one MultiKueueCluster of the workload's MultiKueueConfig.
type Cluster struct {
	Name   string
	Active bool
}

// Decision is what the workload should look like now.
type Decision struct {
	Nominees   []string
	RoundStart time.Time
	// Recheck is when to look again if nothing else happens; zero when there is nothing left
	// to escalate to (a cluster or config change triggers a new look).
	Recheck time.Duration
}

// Decide returns the nominees for a workload whose MultiKueueConfig lists configured (in its
// order), which is nominated to current now, in a round that started at roundStart (zero when
// this process has not seen the workload yet, e.g. after a restart).
func Decide(s Settings, configured []Cluster, current []string, roundStart, now time.Time) Decision {
	var usable []string
	for _, c := range configured {
		if c.Active {
			usable = append(usable, c.Name)
		}
	}
	if len(usable) == 0 {
		// Nothing to nominate: look again after a round in case a cluster comes back.
		return Decision{RoundStart: now, Recheck: s.RoundTimeout}
	}
	var kept []string // current nominees still configured and active, in config order
	for _, name := range usable {
		if slices.Contains(current, name) {
			kept = append(kept, name)
		}
	}
	switch {
	case len(kept) == 0: // a new workload, or one whose nominees are all gone: first round
		return round(s, usable, nil, now)
	case roundStart.IsZero(): // seen for the first time with nominees: adopt them
		return decision(s, usable, kept, now, now)
	case !now.Before(roundStart.Add(s.RoundTimeout)): // round over: escalate
		return round(s, usable, kept, now)
	default:
		return decision(s, usable, kept, roundStart, now)
	}
}

// round adds the next Step usable clusters that are not nominated yet and starts a round.
func round(s Settings, usable, kept []string, now time.Time) Decision {
	nominees := slices.Clone(kept)
	added := 0
	for _, name := range usable {
		if added == s.Step || len(nominees) == MaxNominees {
			break
		}
		if !slices.Contains(nominees, name) {
			nominees = append(nominees, name)
			added++
		}
	}
	if added == 0 { // everything is nominated already: the round stays as it is
		return Decision{Nominees: kept, RoundStart: now}
	}
	slices.SortStableFunc(nominees, func(a, b string) int {
		return slices.Index(usable, a) - slices.Index(usable, b)
	})
	return decision(s, usable, nominees, now, now)
}

func decision(s Settings, usable, nominees []string, start, now time.Time) Decision {
	d := Decision{Nominees: nominees, RoundStart: start}
	if len(nominees) < len(usable) && len(nominees) < MaxNominees {
		d.Recheck = start.Add(s.RoundTimeout).Sub(now)
	}
	return d
}
