"""Failover: provisioning fails on a worker; the workload moves on instead of retrying it."""

from __future__ import annotations

import pytest

from harness.autoscaler import FAIL, PROVISION, Behaviour
from suites.expectations import conforms, placement_timeout, skip_if_slow


@pytest.mark.checks("EXT-09")
def test_provisioning_failover(scenario):
    """The fake autoscaler fails the first worker's request; the second worker provisions."""
    first, second = [w.name for w in scenario.ctx.env.workers][:2]
    scenario.with_workers(
        [first, second], capacity={first: 1, second: 1}, provisioning=[first, second]
    )
    target = scenario.cluster(second)
    skip_if_slow(scenario, placement_timeout(scenario, target))
    scenario.autoscale({first: Behaviour(FAIL, after=2), second: Behaviour(PROVISION, after=2)})
    workload = scenario.submit("job")
    scenario.wait_placed(workload, timeout=placement_timeout(scenario, target, extra=30))
    conforms(scenario, expected_cluster=target)
