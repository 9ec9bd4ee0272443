"""Ordering: clusters are tried in the declared order, not alphabetically."""

from __future__ import annotations

from suites.checks.scenarios import conformance
from suites.judge import bounds, conforms, placement_timeout, skip_if_slow


@conformance("EXT-07")
def test_ordered_dispatch(scenario):
    """Config order is not alphabetical (tiers reorder it again); the last one has capacity."""
    workers = scenario.workers(at_least=3, why="an order that is not alphabetical")
    # sharing the environment's config, its order is the one in force
    order = scenario.config_order([workers[2], workers[0], *workers[3:], workers[1]])
    tiers = None
    if bounds(scenario).ordering == "tiers":
        tiers = {w: 0 for w in order} | {order[0]: 1}  # first in config, last by tier
    scenario.with_workers(order, capacity={order[-1] if not tiers else order[0]: 1}, tiers=tiers)
    expected = scenario.cluster(order[0] if tiers else order[-1])
    skip_if_slow(scenario, placement_timeout(scenario, expected))
    workload = scenario.submit("job")
    scenario.wait_placed(workload, timeout=placement_timeout(scenario, expected))
    conforms(scenario, expected_cluster=expected)
