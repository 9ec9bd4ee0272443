"""Escalation: more clusters only after the timeout, and then promptly, round after round;
per-cluster timeouts.

No worker has room until the rounds the checks judge have been seen, then whichever
clusters the last round added get it (``suites.rounds``): the scenarios judge a
dispatcher that ranks clusters its own way (claims.ordering none) as one that follows the
config."""

from __future__ import annotations

from suites.checks.scenarios import conformance
from suites.judge import PLACEMENT_ROOM, bounds, conforms, override_timeouts, skip_if_slow
from suites.rounds import escalation_workers, escalations_or_skip, through_rounds


@conformance("EXT-05", "EXT-06")
def test_timeout_escalation(scenario):
    """No worker has room until three escalations came (fewer where the config, step or
    time budget allow fewer); each escalation is judged on its own."""
    scenario.with_workers(escalation_workers(scenario))
    escalations = escalations_or_skip(scenario)
    workload = scenario.submit("job")
    through_rounds(scenario, workload, escalations)
    conforms(scenario)


@conformance("EXT-08")
def test_per_cluster_timeout(scenario):
    """Every worker has its own round timeout (twice the claimed one and more), whichever
    comes first; no worker has room until the first escalation."""
    workers = scenario.config_order(scenario.workers(3))
    b = bounds(scenario)
    seconds = override_timeouts(b.round_timeout, len(workers))
    longest = max(seconds) + b.escalation_slack + b.placement_slack + PLACEMENT_ROOM
    scenario.with_workers(
        workers, timeouts={w: f"{s:g}s" for w, s in zip(workers, seconds, strict=True)}
    )
    skip_if_slow(scenario, longest)
    workload = scenario.submit("job")
    through_rounds(scenario, workload, 1)
    conforms(scenario)
