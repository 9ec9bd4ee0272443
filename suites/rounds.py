"""Taking a dispatcher through several rounds, whatever order it tries clusters in.

A scenario that gives room to "the last cluster in the claimed order" judges nothing
when the dispatcher ranks clusters its own way (``claims.ordering: none``): its first
choice had room, and no escalation came due. So the escalation scenarios give no worker
room until the dispatcher has made the escalations the checks judge, and then give it to
whichever clusters its last round added. The promise is about every round, not the
first: up to ``MOST_ESCALATIONS`` of them, as many as the claimed step, the config's
clusters and the time budget allow.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.recording.timeline import Timeline
from harness.scenarios.scenario import Scenario
from harness.scenarios.session import current
from suites.checks.queries import Round, rounds
from suites.checks.verdict import joined
from suites.judge import (
    FIRST_NOMINATION,
    MOST_ESCALATIONS,
    PLACEMENT_ROOM,
    RECORDING_ROOM,
    SLOW_LIMIT,
    bounds,
    escalations_possible,
    escalations_within,
    round_seconds,
    skip_if_slow,
)


def escalation_workers(sc: Scenario) -> list[str]:
    """The workers a config needs for MOST_ESCALATIONS at the claimed step, or as many as
    the environment has (at least one escalation's: stepSize + 1)."""
    step = bounds(sc).step_size or 1
    have = len(sc.ctx.env.workers)
    wanted = step * MOST_ESCALATIONS + 1
    return sc.workers(min(have, wanted), at_least=step + 1, why="the claimed stepSize + 1")


def escalations_or_skip(sc: Scenario) -> int:
    """``escalations_within`` this scenario's config; a run that is not full and fits none
    (5-minute rounds) skips the scenario (``skip_if_slow``), saying what one needs."""
    b = bounds(sc)
    full = current().full
    count = escalations_within(b, len(sc.order), None if full else SLOW_LIMIT)
    if count == 0 and escalations_possible(b.step_size, len(sc.order)) > 0:
        skip_if_slow(sc, round_seconds(b) + b.placement_slack + PLACEMENT_ROOM)
    return count


def through_rounds(sc: Scenario, workload: str, escalations: int) -> list[str]:
    """Wait for the workload's first round, then for ``escalations`` more, each by its
    round's end (its timeout + escalation_slack, + RECORDING_ROOM for the recorder to see
    it); then room for one workload on the workers of the clusters the last round added,
    which are returned. Stops early once every configured cluster was nominated (nothing
    is left to escalate to). Raises TimeoutError naming the escalation that did not come:
    its check then has its verdict on the timeline."""
    b = bounds(sc)

    def seen(tl: Timeline) -> list[Round]:
        return rounds(tl.of(workload))

    found = seen(
        sc.wait_until(
            f"a first nomination of {workload}", lambda tl: bool(seen(tl)), FIRST_NOMINATION
        )
    )
    while len(found) <= escalations:
        last, number = found[-1], len(found)
        tried = {c for r in found for c in r.added}
        if set(sc.order) <= tried:
            break
        timeout = b.round_timeout_for(last.added)
        if timeout is None:  # a cluster that never times out: no escalation comes due
            break
        due = last.t + timeout + b.escalation_slack
        what = (
            f"escalation {number} of {escalations} after round {number} "
            f"({joined(last.added)}), due {timeout + b.escalation_slack:g}s after it started"
        )
        wait = due + RECORDING_ROOM - sc.ctx.recorder.now()
        found = seen(sc.wait_until(what, _more_than(seen, number), timeout=max(wait, 0.1)))
    added = list(found[-1].added)
    for cluster in added:
        if cluster in sc.members:
            sc.set_capacity(sc.members[cluster], 1)
    return added


def _more_than(seen: Callable[[Timeline], list[Round]], count: int) -> Callable[[Timeline], bool]:
    return lambda tl: len(seen(tl)) > count
