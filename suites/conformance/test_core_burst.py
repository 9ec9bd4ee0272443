"""Core: a burst of workloads is all placed; none is stuck."""

from __future__ import annotations

from suites.checks import placed_or_ran
from suites.checks.scenarios import conformance
from suites.judge import RECORDING_ROOM, bounds, conforms, placement_timeout

BURST = 100


@conformance("CORE-09", exclusive=True)
def test_burst_liveness(scenario):
    """100 workloads at once, with capacity for all of them on every worker. Alone: the
    burst saturates Kueue's MultiKueue controller, which every scenario shares."""
    workers = scenario.workers()
    scenario.with_workers(workers, capacity={w: BURST for w in workers})
    # long enough that Kueue records the placement before the Job finishes
    keys = scenario.submit_many("burst", BURST, run_for="30s")
    # each placement is bounded: once past the bound, the check has its verdict
    timeout = placement_timeout(scenario, room=RECORDING_ROOM) + bounds(scenario).burst_slack
    scenario.wait_until(
        f"all {BURST} placed",
        lambda tl: all(placed_or_ran(tl.of(k)) for k in keys),
        timeout=timeout,
    )
    conforms(scenario)
