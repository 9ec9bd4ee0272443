"""BoundedFanOut, decided by suites/conformance/test_fan_out.py: how many workers a
workload costs at once (copies, autoscaling, reservations, preemptions)."""

from __future__ import annotations

import math
from collections.abc import Hashable

from harness.check_terms import Bound, GateNeed
from harness.recording.timeline import Kind, Timeline
from suites.checks.catalogue import check
from suites.checks.queries import (
    INF,
    cluster_of,
    copy_intervals,
    created_at,
    end_of,
    names,
    peak,
    placed_in,
    placement_episodes,
    preempting_workers,
    provisioning_intervals,
    reservation_intervals,
    rounds,
)
from suites.checks.verdict import Bounds, Verdict, at, joined


@check(
    "EXT-01",
    "BoundedFanOut",
    feature="BoundedFanOut",
    summary="At most stepSize clusters hold a copy before the first escalation, and growth per "
    "round is at most stepSize.",
    bounds=(
        Bound(
            "KEP",
            "at most stepSize clusters per round (the claimed stepSize and round timeout)",
            "the KEP's Incremental: an initial set, then as many more each round, so copies grow "
            "by a step per round",
        ),
    ),
)
def bounded_fan_out(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-01: at every instant, copies (COPY_CREATED..COPY_DELETED) and nominated names
    number at most step_size x (1 + rounds elapsed), where rounds elapsed =
    floor((t - created + early_tolerance) / T) and T is the shortest timeout claimed
    (round_timeout or any per-cluster override); without a timeout, at most step_size.
    So before the first escalation at most step_size, then step_size more per round.
    Each of copies and nominations is said once, at its worst excess."""
    step = b.step_size
    if step is None:
        return Verdict.ok('stepSize "all": no fan-out bound claimed')
    t0 = created_at(tl)
    timeouts = [t for t in [b.round_timeout, *b.cluster_timeouts.values()] if t is not None]
    shortest = min(timeouts) if timeouts else None

    def allowed(t: float) -> int:
        if not shortest:
            return step
        return step * (1 + math.floor(max(0.0, t - t0 + b.early_tolerance) / shortest))

    copies: dict[str, None] = {}  # in the order they were made, not by name
    nominated: list[str] = []
    peaks = {"copies": 0, "nominated": 0}
    over: dict[str, list[tuple[float, list[str], int]]] = {"copies": [], "nominated": []}
    for e in tl.where(Kind.COPY_CREATED, Kind.COPY_DELETED, Kind.NOMINATION):
        if e.kind is Kind.COPY_CREATED:
            copies.setdefault(e.cluster)
        elif e.kind is Kind.COPY_DELETED:
            copies.pop(e.cluster, None)
        else:
            nominated = names(e)
        for what, holders in (("copies", list(copies)), ("nominated", nominated)):
            peaks[what] = max(peaks[what], len(holders))
            if len(holders) > allowed(e.t):
                over[what].append((e.t, holders, allowed(e.t)))
    problems = []  # one per kind, at its worst: with many workers every copy is over
    for what, times in sorted(over.items(), key=lambda kv: kv[1][0][0] if kv[1] else INF):
        if not times:
            continue
        t, holders, limit = max(times, key=lambda v: len(v[1]) - v[2])  # the earliest worst
        since = f" (over the claim since {at(times[0][0])})" if times[0][0] < t else ""
        problems.append(
            f"{len(holders)} {what} ({joined(holders)}) at {at(t)}, "
            f"{t - t0:.1f}s after creation; claim allows {limit}{since}"
        )
    measured = {"peakCopies": peaks["copies"], "peakNominated": peaks["nominated"]}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


@check(
    "EXT-02",
    "NoSimultaneousAutoscaling",
    feature="BoundedFanOut",
    summary="At most maxConcurrentProvisioning workers hold a ProvisioningRequest at once.",
    bounds=(
        Bound(
            "mkdc",
            "at most maxConcurrentProvisioning ProvisioningRequests at once (without that claim: "
            "stepSize per round)",
            "the KEP's story of scarce capacity asks for no such bound; it is the profile's own "
            "claim, judged by mkdc",
        ),
    ),
)
def no_simultaneous_autoscaling(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-02: with a maxConcurrentProvisioning claim, peak concurrent live
    ProvisioningRequests across workers (created until deleted or Failed) <= the claim.
    Without one (a dispatcher that keeps earlier nominees), autoscaling must still never
    start in more than step_size workers at once: workers whose requests the dispatcher
    started within one round (round_timeout - early_tolerance) of each other <= step_size.
    A request is timed by the round that added its worker (by its creation when no round
    did): Kueue takes from one to several seconds to create one after the nomination, so
    creation times alone would blame the dispatcher for Kueue's latency. No request at
    all is inconclusive.
    A request created on a worker once another worker's copy won (was admitted, then
    placed) is Kueue removing the losing copy (it re-creates one for an instant, before
    the manager records the placement on v0.19.2), not a dispatch."""
    won = placement_episodes(tl, from_admission=True)
    spans = [
        s
        for s in provisioning_intervals(tl)
        if placed_in(won, s.start) in (None, cluster_of(s.key))
    ]
    if not spans:
        return Verdict.unclear("no ProvisioningRequest was created")
    pk = peak(spans)
    measured = {"peakProvisioningRequests": pk.count}
    limit = b.max_concurrent_provisioning
    if limit is not None:
        if pk.count > limit and pk.t is not None:
            workers = joined(dict.fromkeys(cluster_of(k) for k in pk.keys))
            return Verdict.fail(
                f"{pk.count} ProvisioningRequests at once at {at(pk.t)} on {workers} "
                f"(claim {limit})",
                **measured,
            )
        return Verdict.ok(**measured)
    if b.step_size is None:
        return Verdict.ok(**measured)
    window = (b.round_timeout or INF) - b.early_tolerance
    added: dict[Hashable, float] = {}
    for r in rounds(tl):
        for cluster in r.added:
            added.setdefault(cluster, r.t)
    starts = sorted((min(s.start, added.get(cluster_of(s.key), s.start)), s.key) for s in spans)
    for i, (t, _) in enumerate(starts):
        # workers, not requests: Kueue may re-create a worker's request as it removes the
        # losing copy, a few ms before the manager's placement is seen
        together = dict.fromkeys(cluster_of(k) for u, k in starts[i:] if u - t < window)
        if len(together) > b.step_size:
            return Verdict.fail(
                f"ProvisioningRequests started on {len(together)} workers within one round "
                f"from {at(t)}: {joined(together)} (step {b.step_size})",
                **measured,
            )
    return Verdict.ok(**measured)


@check(
    "EXT-03",
    "BoundedDuplicateAdmission",
    feature="BoundedFanOut",
    summary="At most stepSize workers reserve quota at once, and losers' copies go quickly.",
    bounds=(
        Bound(
            "KEP",
            "at most stepSize quota reservations at once",
            "a step bounds the copies, so it bounds their reservations",
        ),
        Bound(
            "mkdc",
            "losers' copies gone loser_cleanup_slack after placement",
            "the KEP says copies no longer nominated are removed, not how soon",
        ),
    ),
)
def bounded_duplicate_admission(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-03: peak concurrent quota reservations (COPY_RESERVED reserved=True until
    reserved=False or COPY_DELETED) <= step_size; and while placed on X, no copy on
    another worker exists later than placement + loser_cleanup_slack."""
    pk, problems = peak(reservation_intervals(tl)), []
    if pk.count == 0:
        return Verdict.unclear("no copy reserved quota")
    if b.step_size is not None and pk.count > b.step_size and pk.t is not None:
        problems.append(
            f"{pk.count} reservations at once at {at(pk.t)} on {joined(pk.keys)} "
            f"(stepSize {b.step_size})"
        )
    end = end_of(tl, b)
    for start, winner, until in placement_episodes(tl):
        limit = start + b.loser_cleanup_slack
        if limit > min(until, end):
            continue  # evicted again, or observation ended, before cleanup was due
        for copy in copy_intervals(tl):
            if copy.key != winner and copy.start < min(until, end) and copy.end > limit:
                problems.append(
                    f"loser copy on {copy.key} still present at {at(limit)}, "
                    f"{b.loser_cleanup_slack:g}s after placement on {winner} at {at(start)}"
                )
    measured = {"peakReservations": pk.count}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


@check(
    "EXT-04",
    "BoundedPreemption",
    feature="BoundedFanOut",
    summary="A high-priority workload causes preemptions in at most stepSize workers.",
    gates=(
        GateNeed(
            "MultiKueueOrchestratedPreemption",
            False,
            "the manager then opens a workload's preemption gate on one worker at a time, so "
            "preemptions stay bounded whatever the dispatcher nominates",
        ),
    ),
    bounds=(
        Bound(
            "KEP",
            "preemptions on at most stepSize workers",
            "the KEP's Story 3: adding clusters incrementally avoids preemptions in all clusters "
            "at once",
        ),
    ),
)
def bounded_preemption(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-04: distinct workers with a PREEMPTION event for the workload <= step_size.
    No preemption at all is inconclusive (the scenario should force one)."""
    workers = preempting_workers(tl)
    measured = {"workersWithPreemptions": len(workers)}
    if not workers:
        return Verdict.unclear("no preemption happened", **measured)
    if b.step_size is not None and len(workers) > b.step_size:
        where = ", ".join(f"{c} at {at(t)}" for c, t in workers.items())
        return Verdict.fail(
            f"preemptions on {len(workers)} workers ({where}); stepSize {b.step_size}", **measured
        )
    return Verdict.ok(**measured)
