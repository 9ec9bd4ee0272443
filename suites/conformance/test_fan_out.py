"""BoundedFanOut: few copies, few reservations, little autoscaling, few preemptions.

These scenarios run for every dispatcher (marked `scorecard`): a dispatcher that does
not claim BoundedFanOut is measured, not judged, so the scorecard shows side by side
how many workers reserve quota, autoscale or preempt for one workload.
"""

from __future__ import annotations

from harness.scenarios.autoscaler import PROVISION, Behaviour
from suites.checks.scenarios import conformance
from suites.judge import (
    conforms,
    last_nominated_worker,
    placement_timeout,
    round_timeout,
    skip_if_slow,
)


@conformance("EXT-01", scorecard=True)
def test_bounded_fan_out(scenario):
    """No worker has capacity; two rounds pass; copies never exceed the claimed step."""
    scenario.with_workers(scenario.workers())
    two_rounds = 2 * round_timeout(scenario) + 3
    skip_if_slow(scenario, two_rounds)
    scenario.submit("job")
    scenario.observe(two_rounds)
    conforms(scenario)


@conformance("EXT-03", scorecard=True)
def test_bounded_duplicate_admission(scenario):
    """Every worker has capacity: few of them reserve quota, losers' copies go quickly."""
    workers = scenario.workers()
    scenario.with_workers(workers, capacity={w: 1 for w in workers})
    workload = scenario.submit("job")
    scenario.wait_placed(workload, timeout=placement_timeout(scenario))
    scenario.observe(5)
    conforms(scenario)


@conformance("EXT-02", scorecard=True)
def test_no_simultaneous_autoscaling(scenario):
    """Every worker autoscales; requests stay pending for two rounds, then one provisions."""
    workers = scenario.workers()
    scenario.with_workers(workers, capacity={w: 1 for w in workers}, provisioning=workers)
    two_rounds = 2 * round_timeout(scenario) + 3
    skip_if_slow(scenario, two_rounds)
    autoscaler = scenario.autoscale({})
    workload = scenario.submit("job")
    scenario.observe(two_rounds)
    tl = scenario.wait_until(
        "a nomination of one of its clusters",
        lambda tl: last_nominated_worker(tl.of(workload), scenario.members) is not None,
        timeout=30,
    )
    worker = last_nominated_worker(tl.of(workload), scenario.members)
    autoscaler.set(worker, Behaviour(PROVISION, after=0.5))
    scenario.wait_placed(workload, timeout=placement_timeout(scenario))
    conforms(scenario)


@conformance("EXT-04", scorecard=True)
def test_bounded_preemption(scenario):
    """Every worker is full of low-priority local work; a high-priority workload arrives."""
    workers = scenario.workers()
    scenario.with_workers(workers, capacity={w: 1 for w in workers}, preemption=True)
    low, high = scenario.shape.priority_classes[:2]
    for w in workers:
        scenario.submit_local(w, "filler", priority=low)
        scenario.wait_admitted_locally(w, 1)
    workload = scenario.submit("job", priority=high)
    scenario.wait_placed(workload, timeout=placement_timeout(scenario))
    scenario.observe(5)
    conforms(scenario)
