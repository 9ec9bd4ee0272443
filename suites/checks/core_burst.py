"""Core, decided by suites/conformance/test_core_burst.py: a burst leaves no workload
stuck, and its latency percentiles go to the report."""

from __future__ import annotations

from harness.check_terms import Bound
from harness.recording.timeline import Kind, Timeline
from harness.stats import p50_p99
from suites.checks.catalogue import always, check
from suites.checks.queries import end_of, first_nomination, placed_or_ran
from suites.checks.verdict import Bounds, Verdict, at


@check(
    "CORE-09",
    "BurstLiveness",
    summary="A burst of workloads is all placed; none is stuck.",
    scope="scenario",
    decided_by_wait=always,  # the wait for every placement of the burst is the check
    bounds=(
        Bound(
            "mkdc",
            "100 workloads each placed within placement_bound plus burst_slack",
            "a liveness bound of mkdc's for a burst the KEP does not mention",
        ),
    ),
)
def burst_liveness(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-09 (scenario scope): every non-foreign workload with a WORKLOAD_CREATED is
    placed within placement_bound(expected_cluster) + burst_slack of its creation. Placed
    is the first of: the manager's placement, its Job's creation on a worker (Kueue makes
    it only on the worker it chose, and under load shows that on the manager up to a
    minute later: time the dispatcher had no part in), and, for a Job that ran to
    completion, the manager's FINISHED (Kueue may never record clusterName for a short
    Job; see docs/kueue-notes.md). Measures p50/p99 time to first nomination and to placement."""
    foreign = set(b.foreign_workloads)
    created = {
        e.workload: e.t for e in tl.where(Kind.WORKLOAD_CREATED) if e.workload not in foreign
    }
    if not created:
        return Verdict.unclear("no workload created")
    bound, end = b.placement_bound(b.expected_cluster) + b.burst_slack, end_of(tl, b)
    to_nomination, to_placement, stuck, unknown = [], [], [], 0
    for workload, t0 in created.items():
        own = tl.of(workload)
        nom, placed = first_nomination(own), placed_or_ran(own)
        if nom:
            to_nomination.append(nom.t - t0)
        if placed:
            to_placement.append(placed.t - t0)
        if placed is None or placed.t > t0 + bound:
            if placed is None and end < t0 + bound:
                unknown += 1
                continue
            state = f"placed at {at(placed.t)}" if placed else "never placed"
            stuck.append(f"{workload} (created {at(t0)}) {state}")
    measured = {
        "workloads": len(created),
        "placed": len(to_placement),
        "boundSeconds": bound,
        "timeToFirstNominationSeconds": p50_p99(to_nomination),
        "timeToPlacementSeconds": p50_p99(to_placement),
    }
    if stuck:
        head = f"{len(stuck)}/{len(created)} workloads not placed within {bound:.1f}s"
        return Verdict.fail([head] + stuck, **measured)
    if unknown:
        return Verdict.unclear(f"{unknown} workloads unplaced when observation ended", **measured)
    return Verdict.ok(**measured)
