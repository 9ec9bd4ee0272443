"""Core: nominations stay inside the config, and a workload that fits somewhere is placed.

Timing comes from the claims: each scenario needs at most one escalation, so a dispatcher
with 30 s or 5 min rounds is judged by the default run too."""

from __future__ import annotations

from harness.recording.timeline import Timeline
from suites.checks.scenarios import conformance
from suites.judge import (
    RECORDING_ROOM,
    claimed_order,
    conforms,
    nominated_within,
    one_escalation,
    placement_timeout,
    round_timeout,
)


@conformance("CORE-01")
def test_nominates_configured_only(scenario):
    """The config lists two workers, neither with capacity for a while, then one has. A
    decoy outside the config, Active on the third worker with capacity now, first by name
    and in the best tier, is what any dispatcher that ignores the config would pick."""
    outside, *configured = scenario.workers(3, why="one outside the config, two in it")
    scenario.with_workers(configured, tiers=dict.fromkeys(configured, 1))
    scenario.with_decoys([outside])
    workload = scenario.submit("job")
    pending = min(round_timeout(scenario) * 1.5, 20)
    scenario.observe(pending)
    target = nominated_within(scenario, pending)
    scenario.set_capacity(scenario.members[target], 1)
    scenario.wait_placed(workload, timeout=placement_timeout(scenario, target))
    conforms(scenario)


@conformance("CORE-04")
def test_eventual_placement(scenario):
    """Only the last worker in the preferred order has capacity, one escalation away: the
    config holds a full first batch (the claimed step) and that worker."""
    workers = scenario.workers(one_escalation(scenario), why="the claimed stepSize + 1")
    last = claimed_order(scenario, workers)[-1]
    scenario.with_workers(workers, capacity={last: 1})
    workload = scenario.submit("job")
    target = scenario.cluster(last)
    # the check bounds the placement itself: once past the bound, it has its verdict
    scenario.wait_placed(workload, timeout=placement_timeout(scenario, target, room=RECORDING_ROOM))
    conforms(scenario, expected_cluster=target)


@conformance("CORE-07", own_clusters=True)
def test_config_change_honoured(scenario):
    """Pending with no capacity on a full first batch; a worker with capacity joins the
    config and gets the workload (at the latest at the next round)."""
    *first, joining = scenario.workers(one_escalation(scenario), why="the claimed stepSize + 1")
    scenario.with_workers(first)
    workload = scenario.submit("job")
    scenario.observe(3)
    scenario.add_to_config(joining, capacity=1)
    # the dispatcher may take the new cluster in at its next round; that bound passed with
    # the cluster never nominated (nor the workload placed), the check has its verdict
    target, next_round = scenario.cluster(joining), round_timeout(scenario)
    scenario.wait_until(
        f"{target} nominated or {workload} placed",
        lambda tl: considered(tl.of(workload), target),
        timeout=placement_timeout(scenario, target, next_round, room=RECORDING_ROOM),
    )
    assert scenario.wait_placed(workload, timeout=placement_timeout(scenario, target, next_round))
    conforms(scenario)


def considered(workload: Timeline, cluster: str) -> bool:
    """The workload's timeline shows `cluster` nominated, or the workload placed."""
    return any(cluster in names for names in workload.where_nominated()) or bool(
        workload.where_placed()
    )
