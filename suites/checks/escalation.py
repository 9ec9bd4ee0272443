"""Escalation and PerClusterTimeout, decided by suites/conformance/test_escalation.py:
rounds end on time, neither late nor early. The round model itself (`review_rounds`) is
in queries, as resilience judges rounds too."""

from __future__ import annotations

from harness.recording.timeline import Timeline
from suites.checks.catalogue import check
from suites.checks.queries import (
    RoundReview,
    created_at,
    end_of,
    first_placement,
    review_rounds,
    rounds,
)
from suites.checks.verdict import Bounds, Verdict, at, joined, not_judged


def _escalation_verdict(reviews: list[RoundReview], attr: str, none_due: str) -> Verdict:
    problems = [getattr(r, attr) for r in reviews if getattr(r, attr)]
    gaps = [round(r.next_t - r.round.t, 3) for r in reviews if r.next_t is not None]
    measured = {"escalationGapsSeconds": gaps}
    if problems:
        return Verdict.fail(problems, **measured)
    if not any(r.judged for r in reviews):
        return Verdict.unclear(none_due, **measured)
    return Verdict.ok(**measured)


@check(
    "EXT-05",
    "TimeoutEscalation",
    feature="Escalation",
    summary="When nominees do not admit within the timeout, more clusters are nominated within "
    "timeout + slack.",
)
def timeout_escalation(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-05: while unplaced, each round is followed by a new round within its timeout +
    escalation_slack, unless every configured active cluster has been tried. Fails
    when the workload is never nominated. Inconclusive when no escalation came due."""
    if b.round_timeout is None and not b.cluster_timeouts:
        return Verdict.unclear("no roundTimeout claimed: nothing to escalate")
    if not rounds(tl):
        end, t0 = end_of(tl, b), created_at(tl)
        if end < t0 + b.escalation_slack:
            return not_judged(end, t0 + b.escalation_slack, "the first nomination")
        if first_placement(tl) is None:
            return Verdict.fail(f"never nominated (created {at(t0)}, observed to {at(end)})")
    return _escalation_verdict(review_rounds(tl, b), "late", "no escalation came due")


@check(
    "EXT-06",
    "NoPrematureEscalation",
    feature="Escalation",
    summary="No escalation before the timeout while nominees are still pending.",
)
def no_premature_escalation(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-06: no round starts earlier than previous round start + its timeout -
    early_tolerance, unless a nominee gave up meanwhile (copy evicted, ProvisioningRequest
    Failed, cluster inactive)."""
    reviews = review_rounds(tl, b)
    if not any(r.next_t is not None and r.timeout is not None for r in reviews):
        return Verdict.unclear("no escalation observed", escalationGapsSeconds=[])
    return _escalation_verdict(reviews, "early", "no escalation observed")


@check(
    "EXT-08",
    "PerClusterTimeout",
    feature="PerClusterTimeout",
    summary="A per-worker timeout override is honoured.",
)
def per_cluster_timeout(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-08: a round adding a cluster with an override (Bounds.cluster_timeouts) ends
    no earlier than its timeout (the max over the round's added clusters) - early_tolerance
    and no later than + escalation_slack. Rounds without an overridden cluster are EXT-05
    and EXT-06's business."""
    if not b.cluster_timeouts:
        return Verdict.unclear("no per-cluster timeout in the scenario")
    reviews = [r for r in review_rounds(tl, b) if set(r.round.added) & set(b.cluster_timeouts)]
    problems = [p for r in reviews for p in (r.early, r.late) if p]
    if problems:
        return Verdict.fail(problems)
    if not any(r.judged for r in reviews):
        return Verdict.unclear("no round with an overridden cluster came to its timeout")
    gaps = {joined(r.round.added): r.next_t - r.round.t for r in reviews if r.next_t}
    return Verdict.ok(roundSecondsByNominees=gaps)
