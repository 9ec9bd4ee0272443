"""Escalation: more clusters only after the timeout, and then promptly; per-cluster timeouts."""

from __future__ import annotations

import pytest

from suites.judge import (
    bounds,
    claimed_order,
    conforms,
    one_escalation,
    placement_timeout,
    skip_if_slow,
)


@pytest.mark.checks("EXT-05", "EXT-06")
def test_timeout_escalation(scenario):
    """The first batch has no capacity; a later worker has: it is reached after one round."""
    workers = scenario.workers(one_escalation(scenario), why="the claimed stepSize + 1")
    later = claimed_order(scenario, workers)[-1]
    scenario.with_workers(workers, capacity={later: 1})
    target = scenario.cluster(later)
    skip_if_slow(scenario, placement_timeout(scenario, target))
    workload = scenario.submit("job")
    scenario.wait_placed(workload, timeout=placement_timeout(scenario, target))
    conforms(scenario, expected_cluster=target)


@pytest.mark.checks("EXT-08")
def test_per_cluster_timeout(scenario):
    """The first worker keeps its round twice as long as the others; the third has capacity."""
    workers = scenario.workers(3)
    longer = 2 * (bounds(scenario).round_timeout or 10)
    scenario.with_workers(workers, capacity={workers[2]: 1}, timeouts={workers[0]: f"{longer:g}s"})
    target = scenario.cluster(workers[2])
    skip_if_slow(scenario, placement_timeout(scenario, target))
    workload = scenario.submit("job")
    scenario.wait_placed(workload, timeout=placement_timeout(scenario, target))
    conforms(scenario, expected_cluster=target)
