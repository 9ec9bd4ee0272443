"""Escalation and PerClusterTimeout, decided by suites/conformance/test_escalation.py:
rounds end on time, neither late nor early. The round model itself (`review_rounds`) is
in queries, as resilience judges rounds too."""

from __future__ import annotations

from harness.check_terms import Bound
from harness.recording.timeline import Timeline
from suites.checks.catalogue import check
from suites.checks.queries import (
    RoundReview,
    configured,
    created_at,
    end_of,
    first_placement,
    review_rounds,
    round_label,
    rounds,
)
from suites.checks.verdict import Bounds, Verdict, at, joined, not_judged


def _escalation_verdict(
    tl: Timeline, b: Bounds, reviews: list[RoundReview], attr: str, none_due: str
) -> Verdict:
    """Every round judged, each escalation on its own: the 3rd late fails the check
    however well the first two went. The gaps of all of them are measured."""
    problems = [getattr(r, attr) for r in reviews if getattr(r, attr)]
    gaps = [round(r.next_t - r.round.t, 3) for r in reviews if r.next_t is not None]
    judged = sum(r.judged and r.timeout is not None for r in reviews)
    measured = {"escalationGapsSeconds": gaps, "roundsJudged": judged}
    if problems:
        return Verdict.fail(problems, **measured)
    if not judged:
        return Verdict.unclear(why_none_due(tl, b, reviews, none_due), **measured)
    return Verdict.ok(**measured)


def why_none_due(tl: Timeline, b: Bounds, reviews: list[RoundReview], what: str) -> str:
    """`what` (no escalation came due), and why, in words a vendor can act on: what
    ended the first round before its timeout did."""
    if not reviews:
        return f"{what}: the workload was never nominated"
    last = reviews[-1]
    label = round_label(len(reviews) - 1, last.round)
    if last.timeout is None:
        return f"{what}: {label} has no timeout (a cluster of it never times out)"
    deadline = last.round.t + last.timeout + b.escalation_slack
    placed = first_placement(tl)
    if placed is not None and placed.t <= deadline:
        return (
            f"{what}: the workload was placed on {placed.about_cluster} at {at(placed.t)}, "
            f"within {label} (timeout {last.timeout:g}s): a nominee admitted it before "
            "an escalation came due"
        )
    end = end_of(tl, b)
    if end < deadline:
        return (
            f"{what}: observation ended at {at(end)}, before {label} was due to end "
            f"({at(deadline)})"
        )
    return (
        f"{what}: {len(reviews)} round(s) nominated every configured cluster "
        f"({joined(configured(tl, b))}): nothing was left to escalate to"
    )


@check(
    "EXT-05",
    "TimeoutEscalation",
    feature="Escalation",
    summary="When nominees do not admit within the timeout, more clusters are nominated within "
    "timeout + slack.",
    judges_what_came=True,
    bounds=(
        Bound(
            "KEP",
            "the next round by the round's timeout, plus escalation_slack",
            "the KEP's rounds of fixed duration: none admitting within one starts the next",
        ),
    ),
)
def timeout_escalation(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-05: while unplaced, EACH round (the 2nd and 3rd as much as the 1st) is
    followed by a new round within its timeout + escalation_slack, unless every
    configured active cluster has been tried. Fails when the workload is never
    nominated. Inconclusive when no escalation came due, saying what ended the round
    first (a placement, the end of observation, no cluster left)."""
    if b.round_timeout is None and not b.cluster_timeouts:
        return Verdict.unclear("no roundTimeout claimed: nothing to escalate")
    if not rounds(tl):
        end, t0 = end_of(tl, b), created_at(tl)
        if end < t0 + b.escalation_slack:
            return not_judged(end, t0 + b.escalation_slack, "the first nomination")
        if first_placement(tl) is None:
            return Verdict.fail(f"never nominated (created {at(t0)}, observed to {at(end)})")
    return _escalation_verdict(tl, b, review_rounds(tl, b), "late", "no escalation came due")


@check(
    "EXT-06",
    "NoPrematureEscalation",
    feature="Escalation",
    summary="No escalation before the timeout while nominees are still pending.",
    judges_what_came=True,
    bounds=(
        Bound(
            "KEP",
            "no round before the previous one's timeout, less early_tolerance",
            "the same rounds: a round ends at its timeout, not before, unless a nominee gave up",
        ),
    ),
)
def no_premature_escalation(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-06: no round (the 2nd and 3rd as much as the 1st) starts earlier than the
    previous round's start + its timeout - early_tolerance, unless a nominee gave up
    meanwhile (copy evicted, ProvisioningRequest Failed, cluster inactive)."""
    reviews = review_rounds(tl, b)
    if not any(r.next_t is not None and r.timeout is not None for r in reviews):
        why = why_none_due(tl, b, reviews, "no escalation observed")
        return Verdict.unclear(why, escalationGapsSeconds=[], roundsJudged=0)
    return _escalation_verdict(tl, b, reviews, "early", "no escalation observed")


@check(
    "EXT-08",
    "PerClusterTimeout",
    feature="PerClusterTimeout",
    summary="A per-worker timeout override is honoured.",
    judges_what_came=True,
    bounds=(
        Bound(
            "mkdc",
            "a per-cluster round timeout honoured within early_tolerance and escalation_slack",
            "no such knob in the KEP: the profile's claim",
        ),
    ),
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
