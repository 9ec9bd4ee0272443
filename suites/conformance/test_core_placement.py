"""Core: nominations stay inside the config, and a workload that fits somewhere is placed."""

from __future__ import annotations

import pytest

from suites.expectations import conforms, placement_timeout, round_timeout, skip_if_slow


@pytest.mark.checks("CORE-01")
def test_nominates_configured_only(scenario):
    """The config lists two of the workers; none has capacity for a while, then the second does."""
    scenario.with_workers(["worker2", "worker3"])
    workload = scenario.submit("job")
    scenario.observe(min(round_timeout(scenario) * 1.5, 20))
    scenario.set_capacity("worker3", 1)
    scenario.wait_placed(workload, timeout=placement_timeout(scenario, scenario.cluster("worker3")))
    conforms(scenario)


@pytest.mark.checks("CORE-04")
def test_eventual_placement(scenario):
    """Only the last worker in the preferred order has capacity: the workload ends up there."""
    workers = [w.name for w in scenario.ctx.env.workers]
    scenario.with_workers(workers, capacity={workers[-1]: 1})
    last = scenario.cluster(workers[-1])
    skip_if_slow(scenario, placement_timeout(scenario, last))
    workload = scenario.submit("job")
    scenario.wait_placed(workload, timeout=placement_timeout(scenario, last))
    conforms(scenario, expected_cluster=last)


@pytest.mark.checks("CORE-07")
def test_config_change_honoured(scenario):
    """Pending with no capacity anywhere; a worker with capacity joins the config and gets it."""
    scenario.with_workers(["worker1", "worker2"])
    # the dispatcher may take the new cluster in at its next round
    timeout = placement_timeout(scenario, scenario.cluster("worker3"), round_timeout(scenario))
    skip_if_slow(scenario, timeout)
    workload = scenario.submit("job")
    scenario.observe(3)
    scenario.add_to_config("worker3", capacity=1)
    assert scenario.wait_placed(workload, timeout=timeout)
    conforms(scenario)
