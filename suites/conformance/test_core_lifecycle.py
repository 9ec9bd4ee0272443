"""Core: placement is final, eviction leads to placement again, one execution only."""

from __future__ import annotations

from suites.checks.scenarios import conformance
from suites.judge import conforms, needed_placement_timeout, placement_timeout, round_timeout

# units of the standard request: more than the manager ClusterQueue's whole quota
TOO_BIG = 5000


@conformance("CORE-03")
def test_no_nomination_after_placement(scenario):
    """A workload admitted on one worker is watched for a while after placement."""
    workers = scenario.workers(2)
    scenario.with_workers(workers, capacity=dict.fromkeys(workers, 1))
    workload = scenario.submit("job", run_for="20s")
    scenario.wait_placed(workload, timeout=needed_placement_timeout(scenario))
    scenario.observe(15)
    conforms(scenario)


@conformance("CORE-06")
def test_redispatch_after_eviction(scenario):
    """Placed on a worker, then preempted there by a local high-priority job: placed again."""
    workers = scenario.workers(2, why="one to be evicted from, one to go to")
    scenario.with_workers(workers, capacity=dict.fromkeys(workers, 1), preemption=True)
    low = scenario.shape.priority_classes[0]
    workload = scenario.submit("job", priority=low)
    first = scenario.wait_placed(workload, timeout=needed_placement_timeout(scenario))
    scenario.preempt_on(scenario.members[first], "local-high")
    scenario.wait_after_eviction(
        workload,
        "placement again after the eviction",
        lambda tl: len(tl.of(workload).where_placed()) >= 2,
        timeout=placement_timeout(scenario, extra=60),
    )
    conforms(scenario)


@conformance("CORE-08")
def test_foreign_workloads_untouched(scenario):
    """A plain ClusterQueue workload on the manager, beside MultiKueue work, is never written."""
    workers = scenario.workers(1)
    scenario.with_workers(workers, capacity=dict.fromkeys(workers, 1)).with_plain_queue()
    foreign = scenario.submit_foreign("plain")
    # long enough to be seen placed: a 1 s Job finished on its worker before the manager's
    # Workload showed the placement, and the wait for it never ended
    workload = scenario.submit("job", run_for="20s")
    scenario.wait_placed(workload, timeout=needed_placement_timeout(scenario))
    scenario.observe(10)
    conforms(scenario, foreign_workloads=frozenset({foreign}))


@conformance("CORE-10")
def test_nominates_pending_work_only(scenario):
    """A workload too big for the manager's ClusterQueue waits there without quota, beside
    one that is placed: the waiting one is never nominated."""
    workers = scenario.workers(2)
    scenario.with_workers(workers, capacity=dict.fromkeys(workers, 1))
    scenario.submit("too-big", units=TOO_BIG)
    placed = scenario.submit("job", run_for="20s")
    scenario.wait_placed(placed, timeout=needed_placement_timeout(scenario))
    # as long as a round: a dispatcher acting on its own timer has acted by then too
    scenario.observe(max(10.0, min(round_timeout(scenario), 30.0)))
    conforms(scenario)
