"""The scorecard: figures measured for every dispatcher, pass or fail.

Peaks are measured per workload (the cost one workload imposes: copies, autoscaling,
reservations, preempting workers) and aggregated by max; times are percentiles over
workloads; "per placement" figures divide totals by placed workloads. Raw counts and
the time samples are kept (`samples`) so `merge_scorecards` can give exact totals
across scenarios; a report writer may drop `samples`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness.recording.timeline import Kind, Timeline
from harness.stats import p50_p99
from suites.checks import (
    copy_intervals,
    created_at,
    first_nomination,
    first_placement,
    peak,
    preempting_workers,
    provisioning_intervals,
    reservation_intervals,
)

PEAKS = (
    "peakConcurrentCopies",
    "peakConcurrentProvisioningRequests",
    "peakConcurrentReservations",
    "workersWithPreemptions",
)
COUNTS = ("workloads", "placedWorkloads", "nominationWrites", "copiesCreated", "copiesDeleted")
TIMES = ("timeToFirstNominationSeconds", "timeToPlacementSeconds")


def workload_figures(tl: Timeline, dispatcher_users: set[str] | frozenset[str]) -> dict[str, Any]:
    """One workload's figures; `tl` is `timeline.of(workload)`.

    Nomination writes are the dispatcher users' WRITE requests to the workload's status
    (audit: every attempt, rejected ones included); without known users, the observed
    NOMINATION changes are counted instead.
    """
    t0, nominated, placed = created_at(tl), first_nomination(tl), first_placement(tl)
    if dispatcher_users:
        writes = [
            e
            for e in tl.where(Kind.WRITE)
            if e.user in dispatcher_users and e.subresource == "status"
        ]
    else:
        writes = tl.where(Kind.NOMINATION)
    return {
        "peakConcurrentCopies": peak(copy_intervals(tl)).count,
        "peakConcurrentProvisioningRequests": peak(provisioning_intervals(tl)).count,
        "peakConcurrentReservations": peak(reservation_intervals(tl)).count,
        "workersWithPreemptions": len(preempting_workers(tl)),
        "timeToFirstNominationSeconds": nominated.t - t0 if nominated else None,
        "timeToPlacementSeconds": placed.t - t0 if placed else None,
        "placed": placed is not None,
        "nominationWrites": len(writes),
        "copiesCreated": len(tl.where(Kind.COPY_CREATED)),
        "copiesDeleted": len(tl.where(Kind.COPY_DELETED)),
    }


def scorecard(timeline: Timeline, dispatcher_users: set[str] | frozenset[str]) -> dict[str, Any]:
    """The scorecard of one scenario's timeline (see profile-and-report.md)."""
    figures = [workload_figures(timeline.of(w), dispatcher_users) for w in timeline.workloads()]
    card: dict[str, Any] = {key: max((f[key] for f in figures), default=0) for key in PEAKS}
    card.update(
        workloads=len(figures),
        placedWorkloads=sum(f["placed"] for f in figures),
        nominationWrites=sum(f["nominationWrites"] for f in figures),
        copiesCreated=sum(f["copiesCreated"] for f in figures),
        copiesDeleted=sum(f["copiesDeleted"] for f in figures),
        samples={key: [f[key] for f in figures if f[key] is not None] for key in TIMES},
    )
    return _finish(card)


def merge_scorecards(cards: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals across scenarios: peaks by max, counts summed, percentiles over all samples."""
    cards = list(cards)
    merged: dict[str, Any] = {key: max((c[key] for c in cards), default=0) for key in PEAKS}
    merged.update({key: sum(c[key] for c in cards) for key in COUNTS})
    merged["samples"] = {key: [v for c in cards for v in c["samples"][key]] for key in TIMES}
    merged["scenarios"] = len(cards)
    return _finish(merged)


def _finish(card: dict[str, Any]) -> dict[str, Any]:
    """Derive percentiles and per-placement ratios from counts and samples."""
    for key in TIMES:
        values = card["samples"][key]
        card[key] = p50_p99(values)
    placed = card["placedWorkloads"]
    for ratio, total in (
        ("nominationWritesPerPlacement", "nominationWrites"),
        ("copiesCreatedPerPlacement", "copiesCreated"),
        ("copiesDeletedPerPlacement", "copiesDeleted"),
    ):
        card[ratio] = round(card[total] / placed, 3) if placed else None
    return card
