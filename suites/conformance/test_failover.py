"""Failover: provisioned capacity is lost on the worker running the workload; the
workload moves on to another worker instead of going back to the one that failed."""

from __future__ import annotations

from harness.recording.timeline import Timeline
from harness.scenarios.autoscaler import PROVISION, Behaviour
from suites.checks.scenarios import conformance
from suites.judge import (
    conforms,
    needed_placement_timeout,
    placement_timeout,
    skip_if_slow,
)


@conformance("EXT-09")
def test_provisioning_failover(scenario):
    """Every worker autoscales. Once the workload runs, its worker loses the capacity:
    the ProvisioningRequest fails and the quota is gone (Kueue retries the check there and
    evicts the copy, which stays evicted; the manager sees the eviction); the next
    dispatch must start past that worker, and the workload runs elsewhere."""
    members = scenario.workers(3)
    scenario.with_workers(members, capacity=dict.fromkeys(members, 1), provisioning=members)
    last = scenario.cluster(members[-1])
    skip_if_slow(scenario, placement_timeout(scenario, last))
    autoscaler = scenario.autoscale(dict.fromkeys(members, Behaviour(PROVISION, after=2)))
    workload = scenario.submit("job")
    placed = scenario.wait_placed(workload, timeout=needed_placement_timeout(scenario, last))
    worker = scenario.members[placed]
    # Quota first: a copy that re-reserves at once hides its eviction from the manager.
    scenario.set_capacity(worker, 0)
    scenario.mark("lose-capacity", worker=worker, requests=autoscaler.lose_capacity(worker))

    def placed_elsewhere(tl: Timeline) -> bool:
        return any(e.about_cluster != placed for e in tl.of(workload).where_placed())

    scenario.wait_after_eviction(
        workload,
        f"{workload} to be placed off {placed}",
        placed_elsewhere,
        # Kueue tells the manager of the eviction 5-120 s after the worker (version-dependent)
        timeout=placement_timeout(scenario, last, extra=180),
    )
    conforms(scenario)
