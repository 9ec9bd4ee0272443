"""Core: placement is final, eviction leads to placement again, one execution only."""

from __future__ import annotations

from harness.cluster import workloads
from harness.recording.timeline import Kind
from suites.checks.scenarios import conformance
from suites.judge import conforms, needed_placement_timeout, placement_timeout, round_timeout

SETTLE = 3.0  # seconds between a copy's creation and the deactivation: Kueue's reconciles done


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
    """Nominated while no worker has room, then deactivated on the manager (evicted, its
    quota released, for good): left alone from then on."""
    workers = scenario.workers(2)
    scenario.with_workers(workers)  # no capacity anywhere: it stays pending
    workload = scenario.submit("job")
    # its copies made first: deactivated while MultiKueue is still making them, Kueue
    # (v0.19.2) makes them again and starts the Job on both workers for half a second
    copied = scenario.wait_until(
        f"a copy of {workload} on a nominee",
        lambda tl: bool(tl.of(workload).where(Kind.COPY_CREATED)),
        timeout=needed_placement_timeout(scenario),
    )
    scenario.observe_until(copied.of(workload).where(Kind.COPY_CREATED)[-1].t + SETTLE)
    scenario.mark("deactivate", workload=workload)
    workloads.deactivate(scenario.manager, workload)
    released = scenario.wait_until(
        f"{workload} evicted and its quota released",
        lambda tl: (
            any(not e.reserved for e in tl.of(workload).where(Kind.QUOTA_RESERVED))
            and bool(tl.of(workload).where(Kind.EVICTED))
        ),
        timeout=60,
    )
    # as long as a round: a dispatcher acting on its own timer has acted by then too
    since = released.of(workload).where(Kind.EVICTED)[-1].t
    scenario.observe_until(since + max(10.0, min(round_timeout(scenario), 30.0)))
    conforms(scenario)
