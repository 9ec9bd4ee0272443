"""Core, decided by suites/conformance/test_core_lifecycle.py: after placement, after an
eviction, and around workloads that are not the dispatcher's. CORE-05 (the Job runs
once) is judged on every timeline and sits here with the rest of a workload's life."""

from __future__ import annotations

from harness.check_terms import Bound
from harness.recording.timeline import Event, Kind, Timeline
from suites.checks.catalogue import check, placed_once
from suites.checks.queries import (
    INF,
    end_of,
    first_placement,
    intervals,
    is_dispatcher,
    names,
    peak,
    placed_at,
    placement_episodes,
)
from suites.checks.verdict import Bounds, Verdict, at, joined, not_judged


@check(
    "CORE-03",
    "NoNominationAfterPlacement",
    summary="Once clusterName is set, the dispatcher leaves nominatedClusterNames alone.",
    writes_only=True,
    bounds=(
        Bound(
            "KEP",
            "no nomination while clusterName is set",
            "the KEP: while clusterName is assigned, nominatedClusterNames is immutable",
        ),
        Bound(
            "mkdc",
            "no status write at all while placed, even one refused or changing nothing, after "
            "observation_skew",
            "stricter than the KEP: a write to a placed workload is the mistake whatever the "
            "apiserver made of it",
        ),
    ),
)
def no_nomination_after_placement(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-03: while clusterName is set (PLACEMENT non-empty until a PLACEMENT ""), no
    non-empty NOMINATION by the dispatcher (writer unknown, or a dispatcher identity),
    and no WRITE to the status subresource by a dispatcher user, whatever its outcome
    (changed=False and rejected requests count). Events within observation_skew after
    the placement are not blamed: the dispatcher may have read the workload just before."""
    problems: list[str] = []
    for start, cluster, until in placement_episodes(tl):
        for e in tl:
            if not start + b.observation_skew < e.t < until:
                continue
            if e.kind is Kind.NOMINATION and names(e):
                if is_dispatcher(e.writer, b):
                    who = e.writer or "unknown writer"
                    problems.append(
                        f"{who} nominated {joined(names(e))} at {at(e.t)} while placed on "
                        f"{cluster} (since {at(start)})"
                    )
            elif e.kind is Kind.WRITE and e.subresource == "status":
                if e.user in b.dispatcher_users:
                    problems.append(
                        f"{e.user} wrote status ({e.verb}, code "
                        f"{e.code}) at {at(e.t)} while placed on {cluster}"
                    )
    measured = {"writesAfterPlacement": len(problems)}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


@check(
    "CORE-05",
    "SingleExecution",
    summary="The Job runs in at most one worker, once.",
    every_timeline=True,
    bounds=(
        Bound(
            "KEP",
            "the Job runs on one worker, once",
            "MultiKueue's promise: the first worker to admit wins and the other copies are removed",
        ),
    ),
)
def single_execution(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-05: a Job exists (JOB_CREATED or JOB_RUNNING .. JOB_DELETED) on at most one
    worker at any instant, and no JOB_CREATED follows a JOB_FINISHED or the manager's
    FINISHED (it would run twice)."""
    jobs = intervals(
        tl.where(Kind.JOB_CREATED, Kind.JOB_RUNNING, Kind.JOB_DELETED),
        lambda e: e.kind in (Kind.JOB_CREATED, Kind.JOB_RUNNING),
        lambda e: e.kind is Kind.JOB_DELETED,
    )
    pk, problems = peak(jobs), []
    if pk.count > 1 and pk.t is not None:
        problems.append(f"Job exists on {joined(pk.keys)} at once at {at(pk.t)}")
    done = tl.where(Kind.JOB_FINISHED, Kind.FINISHED)
    if done:
        for e in tl.where(Kind.JOB_CREATED):
            if e.t > done[0].t:
                problems.append(
                    f"Job created again on {e.cluster} at {at(e.t)} after it finished "
                    f"on {done[0].cluster} at {at(done[0].t)}"
                )
    measured = {"peakWorkersWithJob": pk.count}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


@check(
    "CORE-06",
    "RedispatchAfterEviction",
    summary="A workload evicted from its worker is placed again.",
    decided_by_wait=placed_once,  # placed once: then the re-placement
    bounds=(
        Bound(
            "mkdc",
            "placed again within placement_bound of the manager showing the eviction",
            "the KEP resets clusterName on eviction and sets no deadline for the next placement",
        ),
    ),
)
def redispatch_after_eviction(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-06: after an eviction a new placement follows within
    placement_bound(expected_cluster) of the moment the manager learnt of it (a PLACEMENT
    clearing clusterName, or a manager EVICTED while placed): a dispatcher cannot act
    before that. Only when the manager shows neither does the harness's ACTION
    what="evict" (while placed) start the clock. Triggers before that re-placement belong
    to the same eviction."""
    cleared = [until for _, _, until in placement_episodes(tl) if until != INF]
    manager_side = [e.t for e in tl.where(Kind.EVICTED) if placed_at(tl, e.t)]
    actions = [e.t for e in tl.where(Kind.ACTION) if e.what == "evict" and placed_at(tl, e.t)]
    triggers = sorted(cleared + manager_side) or sorted(actions)
    if not triggers:
        return Verdict.unclear("no eviction in the timeline")
    bound, problems, handled_until = b.placement_bound(b.expected_cluster), [], -INF
    for t in triggers:
        if t < handled_until:
            continue
        nxt = first_placement(tl, after=t)
        handled_until = nxt.t if nxt else INF
        if nxt is None and end_of(tl, b) < t + bound:
            return not_judged(end_of(tl, b), t + bound, "the re-placement bound")
        if nxt is None or nxt.t > t + bound:
            where = f"placed on {nxt.about_cluster} at {at(nxt.t)}" if nxt else "never placed"
            problems.append(f"evicted at {at(t)}, {where}; bound {bound:.1f}s")
    return Verdict.fail(problems) if problems else Verdict.ok(boundSeconds=bound)


@check(
    "CORE-08",
    "ForeignWorkloadsUntouched",
    summary="Workloads that are not pending MultiKueue work are not written by the dispatcher.",
    scope="scenario",
    writes_only=True,
    bounds=(
        Bound(
            "mkdc",
            "no write to a workload that is not pending MultiKueue work",
            "the KEP gives a dispatcher MultiKueue workloads only; Kueue's own dispatchers skip "
            "every other (ShouldSkipClusterNomination)",
        ),
    ),
)
def foreign_workloads_untouched(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-08 (scenario scope): a foreign workload (Bounds.foreign_workloads, plus every
    workload named by an ACTION what="foreign") is never written by a dispatcher user
    (any WRITE: verb, outcome or subresource) and never gets a nomination by a
    dispatcher writer. Without known dispatcher users (a dispatcher built into Kueue,
    whose writes share Kueue's identity) the nominations alone are judged."""
    foreign = set(b.foreign_workloads)
    for e in tl.where(Kind.ACTION):
        if e.what == "foreign":
            foreign.add(e.data.get("workload") or e.workload)
    foreign.discard("")
    if not foreign:
        return Verdict.unclear("no foreign workload in the scenario")
    problems = [
        f"{e.user} wrote {e.workload} ({e.verb}"
        f"{'/' + e.subresource if e.subresource else ''}) at {at(e.t)}"
        for e in tl.where(Kind.WRITE)
        if e.workload in foreign and e.user in b.dispatcher_users
    ]
    problems += [
        f"{e.writer or 'unknown writer'} nominated {joined(names(e))} for {e.workload} at {at(e.t)}"
        for e in tl.where(Kind.NOMINATION)
        if e.workload in foreign and names(e) and is_dispatcher(e.writer, b)
    ]
    measured = {"foreignWorkloads": len(foreign), "foreignWrites": len(problems)}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


def not_pending_spans(tl: Timeline) -> list[tuple[float, float, str]]:
    """(from, until, why) while the workload, unplaced, was not pending MultiKueue work as
    the manager showed it: no quota reservation, its MultiKueue check not Pending (a state
    not yet seen does not count), or evicted (until its quota is reserved again). Kueue's
    own dispatchers skip such a workload (ShouldSkipClusterNomination, and no quota)."""
    reserved, state, evicted, placed = False, None, False, False
    spans: list[tuple[float, float, str]] = []
    start: tuple[float, str] | None = None
    for e in tl:
        if e.kind is Kind.QUOTA_RESERVED:
            reserved = e.reserved
            evicted = evicted and not e.reserved
        elif e.kind is Kind.CHECK_STATE:
            state = e.state
        elif e.kind is Kind.EVICTED:
            evicted = True
        elif e.kind is Kind.PLACEMENT:
            placed = bool(e.about_cluster)
        elif e.kind is not Kind.WORKLOAD_CREATED:
            continue
        why = next(
            (
                said
                for hit, said in (
                    (placed, ""),  # placed: CORE-03's business, not a span
                    (evicted, "it was evicted"),
                    (not reserved, "it held no quota on the manager"),
                    (state not in (None, "Pending"), f"its MultiKueue check was {state}"),
                )
                if hit
            ),
            None,
        )
        if start is not None and why != start[1]:
            spans.append((start[0], e.t, start[1]))
            start = None
        if why and start is None:
            start = (e.t, why)
    if start is not None:
        spans.append((start[0], INF, start[1]))
    return spans


@check(
    "CORE-10",
    "NominatesPendingWorkOnly",
    summary="A workload is nominated only while it is pending MultiKueue work: quota "
    "reserved on the manager, its MultiKueue check Pending, not evicted.",
    writes_only=True,
    bounds=(
        Bound(
            "mkdc",
            "no nomination while the workload holds no quota, its MultiKueue check is not "
            "Pending, or it is evicted, after observation_skew",
            "the KEP does not say when a workload may be nominated; Kueue's own dispatchers "
            "skip it then (ShouldSkipClusterNomination), and a nomination from a stale view "
            "during an eviction once stranded workloads (kueue#11062)",
        ),
    ),
)
def nominates_pending_work_only(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-10: no non-empty NOMINATION by the dispatcher (writer unknown, or a dispatcher
    identity), nor an accepted status WRITE of names by a dispatcher user, inside a span of
    `not_pending_spans`, later than observation_skew into it (the dispatcher may have read
    the workload just before). Undecided when no span lasted
    escalation_slack past that (the time a first nomination may take): no dispatcher had
    the time to get it wrong."""
    spans = not_pending_spans(tl)
    problems = []
    for e in tl.where(Kind.NOMINATION, Kind.WRITE):
        if not names(e) or not _nominated_by_dispatcher(e, b):
            continue
        for start, until, why in spans:
            if start + b.observation_skew < e.t < until:
                who = e.writer or e.user or "unknown writer"
                problems.append(
                    f"{who} nominated {joined(names(e))} at {at(e.t)} while {why} "
                    f"(since {at(start)})"
                )
    end = end_of(tl, b)
    room = b.observation_skew + b.escalation_slack
    tested = [s for s in spans if min(s[1], end) - s[0] >= room]
    measured = {
        "nominationsWhileNotPending": len(problems),
        "notPendingSpans": len(tested),
    }
    if problems:
        return Verdict.fail(problems, **measured)
    if not tested:
        return Verdict.unclear(
            f"the workload was never unplaced and not pending MultiKueue work for {room:g}s "
            "(no wait for quota, no eviction, no check leaving Pending)",
            **measured,
        )
    return Verdict.ok(**measured)


def _nominated_by_dispatcher(e: Event, b: Bounds) -> bool:
    """A nomination the dispatcher made: a NOMINATION it wrote (by field manager), or its
    own accepted status write of names (by audit user: a field manager it names itself
    may not be among the dispatcher's identities)."""
    if e.kind is Kind.NOMINATION:
        return is_dispatcher(e.writer, b)
    return e.subresource == "status" and e.user in b.dispatcher_users and e.code < 400
