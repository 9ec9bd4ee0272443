"""Resilience: inactive clusters, the manager's apiserver and Kueue restarting, a leader
failover, a dispatcher restart.

The scenarios that run alone come longest first: on a run's two environments the second
starts on them at once and the first takes what is left once its other scenarios are
done, so the short ones at the end even out when the two finish."""

from __future__ import annotations

from harness.providers import FAULTS
from suites.checks.scenarios import conformance
from suites.judge import (
    bounds,
    conforms,
    placement_timeout,
    round_timeout,
    skip_if_slow,
)


@conformance("EXT-10", own_clusters=True)
def test_skips_inactive_clusters(scenario):
    """The first worker's cluster is inactive; the next one is nominated without losing a round."""
    first, second, third = scenario.workers(3)
    scenario.with_workers([first, second, third], capacity={second: 1})
    scenario.make_inactive(first)
    target = scenario.cluster(second)
    workload = scenario.submit("job")
    scenario.wait_placed(workload, timeout=placement_timeout(scenario, scenario.cluster(first)))
    conforms(scenario, expected_cluster=target)


@conformance("EXT-13", exclusive=True, needs=FAULTS)
def test_manager_apiserver_restart(scenario):
    """The manager's kube-apiserver restarts late in a round, out past the round's end: the
    round keeps its schedule, and a workload submitted once it is back is dispatched."""
    _outage(scenario, "manager-apiserver", "stop")


@conformance("EXT-14", exclusive=True, needs=FAULTS)
def test_kueue_restart(scenario):
    """The manager's Kueue crashes late in a round and is back after the round's end: until
    then its webhook refuses every Workload write, the escalation's too."""
    _outage(scenario, "manager-kueue", "kill")


def _outage(scenario, process: str, how: str) -> None:
    """Three workers, capacity only on the last (two escalations away); a workload is
    nominated, then `process` goes out at 0.7 of the round for half a round (so the round
    ends while it is out) and comes back; a second workload is submitted then. Both must
    be placed on the last worker."""
    workers = scenario.workers(3)
    scenario.with_workers(workers, capacity={workers[2]: 2})
    target = scenario.cluster(workers[2])
    timeout = placement_timeout(scenario, target, extra=round_timeout(scenario))
    skip_if_slow(scenario, timeout)
    before = scenario.submit("before")
    scenario.wait_until(
        "a first nomination", lambda tl: tl.of(before).where_nominated(), timeout=30
    )
    scenario.observe(round_timeout(scenario) * 0.7)
    scenario.take_out(process, how)
    scenario.observe(round_timeout(scenario) * 0.5)
    scenario.bring_back(process)
    after = scenario.submit("after")
    for workload in (before, after):
        scenario.wait_placed(workload, timeout=timeout)
    conforms(scenario, expected_cluster=target)


@conformance("EXT-12", exclusive=True)
def test_leader_failover(scenario):
    """Two replicas; the one that writes (the leader) is killed mid-round; the other takes over."""
    workers = scenario.workers(3)
    scenario.with_workers(workers, capacity={workers[2]: 1})
    workload = scenario.submit("job")
    tl = scenario.wait_until(
        "a first nomination", lambda tl: tl.of(workload).where_writes(), timeout=30
    )
    # mid-round, and late enough that a second replica writing beside the first nomination
    # falls outside the handover EXT-12 forgives (a kill right after the first write did
    # not)
    b = bounds(scenario)
    first = tl.of(workload).where_writes()[0].t
    scenario.observe_until(
        first + max(round_timeout(scenario) / 2, b.conflict_window + b.observation_skew)
    )
    leader = scenario.timeline().of(workload).where_writes()[-1].user
    replica = scenario.replica_of(leader)
    scenario.kill_dispatcher(replica, what="leader-killed", user=leader)
    try:
        scenario.wait_placed(
            workload, timeout=placement_timeout(scenario, scenario.cluster(workers[2]), 30)
        )
    finally:
        scenario.restart_dispatcher(replica)
    conforms(scenario)


@conformance("EXT-11", exclusive=True)
def test_restart_resilience(scenario):
    """The dispatcher is SIGKILLed late in a round and restarted. Late, so that a round
    reset (escalation at back + timeout) stays clear of the bound (due + downtime + slack)
    by 0.7 timeout - slack, while the kill still precedes the escalation."""
    workers = scenario.workers(3)
    scenario.with_workers(workers, capacity={workers[2]: 1})
    target = scenario.cluster(workers[2])
    skip_if_slow(scenario, placement_timeout(scenario, target))
    workload = scenario.submit("job")
    scenario.wait_until(
        "a first nomination", lambda tl: tl.of(workload).where_nominated(), timeout=30
    )
    scenario.observe(round_timeout(scenario) * 0.7)
    scenario.kill_dispatcher(0)
    scenario.observe(2)
    scenario.restart_dispatcher(0)
    scenario.wait_placed(workload, timeout=placement_timeout(scenario, target, extra=5))
    conforms(scenario, expected_cluster=target)
