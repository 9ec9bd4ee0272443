"""Timeline queries the checks share (and the scorecard and findings reuse): intervals
and peaks, placements, nomination rounds and how each round escalated."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from harness.recording.timeline import Event, Kind, Timeline
from harness.stats import percentile  # noqa: F401 (re-exported: queries over figures)
from suites.checks.verdict import Bounds, at, joined

INF = math.inf


@dataclass(frozen=True)
class Interval:
    """[start, end) during which `key` (a cluster, or (cluster, name)) held something."""

    key: Hashable
    start: float
    end: float = INF


@dataclass(frozen=True)
class Peak:
    """Most intervals open at one instant, the first instant it happened, and whose."""

    count: int = 0
    t: float | None = None
    keys: tuple[Hashable, ...] = ()


def intervals(
    events: Iterable[Event],
    opens: Callable[[Event], bool],
    closes: Callable[[Event], bool],
    key: Callable[[Event], Hashable] = lambda e: e.cluster,
) -> list[Interval]:
    """Pair opening and closing events per key; an unclosed interval ends at infinity.

    A second opening of an already-open key is ignored (the first one counts).
    """
    open_since: dict[Hashable, float] = {}
    out: list[Interval] = []
    for e in sorted(events, key=lambda e: e.t):
        k = key(e)
        if closes(e):
            if k in open_since:
                out.append(Interval(k, open_since.pop(k), e.t))
        elif opens(e):
            open_since.setdefault(k, e.t)
    out.extend(Interval(k, t) for k, t in open_since.items())
    return sorted(out, key=lambda i: i.start)


def peak(spans: list[Interval]) -> Peak:
    """Sweep: the maximum number of simultaneously open intervals (ends before starts)."""
    points = [(s.start, 1, n) for n, s in enumerate(spans)]
    points += [(s.end, -1, n) for n, s in enumerate(spans) if s.end != INF]
    active: set[int] = set()
    best = Peak()
    for t, delta, n in sorted(points, key=lambda p: (p[0], p[1])):
        if delta > 0:
            active.add(n)
        else:
            active.discard(n)
        if len(active) > best.count:
            best = Peak(len(active), t, tuple(spans[i].key for i in sorted(active)))
    return best


def copy_intervals(tl: Timeline) -> list[Interval]:
    """Per worker: remote Workload copy exists (COPY_CREATED..COPY_DELETED)."""
    return intervals(
        tl.where(Kind.COPY_CREATED, Kind.COPY_DELETED),
        lambda e: e.kind is Kind.COPY_CREATED,
        lambda e: e.kind is Kind.COPY_DELETED,
    )


def reservation_intervals(tl: Timeline) -> list[Interval]:
    """Per worker: the copy holds quota (reserved=True .. reserved=False or deletion)."""
    return intervals(
        tl.where(Kind.COPY_RESERVED, Kind.COPY_DELETED),
        lambda e: e.kind is Kind.COPY_RESERVED and e.reserved,
        lambda e: e.kind is Kind.COPY_DELETED or not e.reserved,
    )


def cluster_of(key: Hashable) -> Hashable:
    """The cluster of an Interval key: a cluster, or (cluster, name)."""
    return key[0] if isinstance(key, tuple) else key


def provisioning_intervals(tl: Timeline) -> list[Interval]:
    """Per (worker, request): a live ProvisioningRequest (created .. deleted or Failed)."""
    return intervals(
        tl.where(Kind.PROVREQ_CREATED, Kind.PROVREQ_STATE, Kind.PROVREQ_DELETED),
        lambda e: e.kind is Kind.PROVREQ_CREATED,
        lambda e: (
            e.kind is Kind.PROVREQ_DELETED or (e.kind is Kind.PROVREQ_STATE and e.state == "Failed")
        ),
        key=lambda e: (e.cluster, e.request_name),
    )


def preempting_workers(tl: Timeline) -> dict[str, float]:
    """Workers with a PREEMPTION event, with the time of their first one, in order."""
    out: dict[str, float] = {}
    for e in tl.where(Kind.PREEMPTION):
        out.setdefault(e.cluster, e.t)
    return out


def names(e: Event) -> list[str]:
    """The nominated cluster names of a NOMINATION event."""
    return e.names


def created_at(tl: Timeline) -> float:
    """When the workload's clock starts: WORKLOAD_CREATED, else its first event."""
    for e in tl:
        if e.kind is Kind.WORKLOAD_CREATED:
            return e.t
    own = [e.t for e in tl if e.workload]
    return own[0] if own else 0.0


def dispatchable_at(tl: Timeline) -> float:
    """When a dispatcher can first nominate the workload: the manager's Kueue reserved its
    quota (MultiKueue's admission check starts there), else its creation. Under load the
    reservation came seconds after creation; that is Kueue's time, not the dispatcher's."""
    for e in tl.where(Kind.QUOTA_RESERVED):
        if e.reserved:
            return max(e.t, created_at(tl))
    return created_at(tl)


def placements(tl: Timeline) -> list[Event]:
    """PLACEMENT events that set a cluster (not the ones clearing it)."""
    return tl.where_placed()


def first_placement(tl: Timeline, after: float = -INF) -> Event | None:
    return next((e for e in placements(tl) if e.t > after), None)


def first_nomination(tl: Timeline) -> Event | None:
    return next((e for e in tl.where(Kind.NOMINATION) if names(e)), None)


def placement_episodes(
    tl: Timeline, *, from_admission: bool = False
) -> list[tuple[float, str, float]]:
    """(placed at, cluster, until): until a PLACEMENT clearing it, or infinity.

    ``from_admission``: an episode starts when the winning copy was admitted on its worker
    (its last COPY_ADMITTED since the previous episode), not when the manager recorded the
    placement: the manager's Kueue removes the losing copies from that moment, and under
    load records clusterName a second or more later."""
    out: list[tuple[float, str, float]] = []
    for e in tl.where(Kind.PLACEMENT):
        cluster = e.about_cluster
        if out and out[-1][2] == INF:
            out[-1] = (out[-1][0], out[-1][1], e.t)
        if cluster:
            out.append((e.t, cluster, INF))
    if from_admission:
        admitted, previous_end = tl.where(Kind.COPY_ADMITTED), -INF
        for i, (start, cluster, until) in enumerate(out):
            won = [a.t for a in admitted if a.cluster == cluster and previous_end <= a.t <= start]
            out[i] = (max(won, default=start), cluster, until)
            previous_end = until
    return out


def placed_at(tl: Timeline, t: float) -> str | None:
    """The cluster the workload is placed on at instant t, if any."""
    return placed_in(placement_episodes(tl), t)


def placed_in(episodes: list[tuple[float, str, float]], t: float) -> str | None:
    """The cluster of the placement episode (see ``placement_episodes``) holding t, if any."""
    return next((c for s, c, u in episodes if s <= t < u), None)


def end_of(tl: Timeline, bounds: Bounds) -> float:
    """When observation stopped: Bounds.observed_until, else the last event."""
    if bounds.observed_until is not None:
        return bounds.observed_until
    times = [e.t for e in tl]
    return times[-1] if times else 0.0


def configured(tl: Timeline, bounds: Bounds, t: float = INF) -> list[str]:
    """Configured clusters at t: Bounds.clusters extended by CONFIG_CHANGED up to t."""
    out = list(bounds.clusters)
    for e in tl.where(Kind.CONFIG_CHANGED):
        if e.t <= t:
            out += [c for c in e.clusters if c not in out]
    return out


def inactive_spans(tl: Timeline) -> list[Interval]:
    """Per cluster: MultiKueueCluster not Active (active=False .. active=True)."""
    return intervals(
        tl.where(Kind.CLUSTER_ACTIVE),
        lambda e: e.cluster_active is False,
        lambda e: e.cluster_active is True,
        key=lambda e: e.about_cluster,
    )


def inactive_at(spans: list[Interval], cluster: str, t: float, since: float = 0.0) -> bool:
    """True when `cluster` is inactive at t and has been for at least `since` seconds."""
    return any(s.key == cluster and s.start <= t - since and t < s.end for s in spans)


@dataclass(frozen=True)
class Round:
    """A nomination round: when it started, the clusters it added, the full list."""

    t: float
    added: tuple[str, ...]
    names: tuple[str, ...]


def rounds(tl: Timeline, until: float | None = None) -> list[Round]:
    """Rounds of the first pending period (before the first placement, or `until`). A
    round starts when its write reached the manager's apiserver (``written_at``)."""
    if until is None:
        first = first_placement(tl)
        until = first.t if first else INF
    writes = [w for w in tl.where(Kind.WRITE) if w.code < 400 and w.names]
    seen: set[str] = set()
    out: list[Round] = []
    since = -INF
    for e in tl.where(Kind.NOMINATION):
        if e.t >= until:
            break
        since = written_at(writes, e, since)
        added = tuple(n for n in dict.fromkeys(names(e)) if n not in seen)
        if added:
            out.append(Round(since, added, tuple(names(e))))
            seen.update(added)
    return out


def written_at(writes: list[Event], nomination: Event, since: float) -> float:
    """When the write that made `nomination` reached the apiserver: the first accepted
    write of the same names after `since` (the previous nomination's), at its audit-log
    time; the nomination's own time when none is logged (no audit log, a JSON patch).

    The recorder's watch sees a nomination later than it was written, by more on a
    loaded machine: from watch times alone a round seen late looked short (a dispatcher
    that waited its timeout judged early), one seen early looked long."""
    wanted = set(names(nomination))
    for w in writes:
        same = w.workload == nomination.workload and set(w.names) == wanted
        if same and since < w.t <= nomination.t:
            return w.t
    return max(nomination.t, since)


@dataclass(frozen=True)
class RoundReview:
    """One round judged against its timeout: when the next one came and what is wrong."""

    round: Round
    timeout: float | None
    next_t: float | None
    judged: bool  # the round ended: escalated, or still unplaced at its deadline
    late: str | None = None
    early: str | None = None


def review_rounds(tl: Timeline, b: Bounds) -> list[RoundReview]:
    """Judge each round's escalation, every one of them and not only the first: not
    before timeout - tolerance, not after + slack. Messages number the round (and the
    escalation that ends it: escalation n ends round n), so a vendor reads which one.

    Early escalation is excused when a nominee gave up meanwhile (copy evicted, its
    ProvisioningRequest Failed, cluster inactive). "Never" escalated is only a problem
    while unplaced and some configured, active cluster is still untried.
    """
    rs, first = rounds(tl), first_placement(tl)
    placed = first.t if first else INF
    out: list[RoundReview] = []
    for i, r in enumerate(rs):
        nxt = rs[i + 1] if i + 1 < len(rs) else None
        next_t = nxt.t if nxt else None
        timeout = b.round_timeout_for(r.added)
        if timeout is None:
            out.append(RoundReview(r, None, next_t, False))
            continue
        tried = {c for earlier in rs[: i + 1] for c in earlier.added}
        late = _late(tl, b, i, r, timeout, nxt, tried, placed)
        early = _early(tl, b, i, r, timeout, nxt)
        out.append(
            RoundReview(r, timeout, next_t, nxt is not None or late is not None, late, early)
        )
    return out


def round_label(i: int, r: Round) -> str:
    """How a message names the `i`-th round (from 0): its number, clusters and start."""
    return f"round {i + 1} ({joined(r.added)}) of {at(r.t)}"


def _late(
    tl: Timeline,
    b: Bounds,
    i: int,
    r: Round,
    timeout: float,
    nxt: Round | None,
    tried: set[str],
    placed: float,
) -> str | None:
    """Why round `r` (the `i`-th) escalated too late (or never), or None."""
    deadline = r.t + timeout + b.escalation_slack
    label = round_label(i, r)
    if placed <= deadline or (nxt is not None and nxt.t <= deadline):
        return None
    if nxt is not None:
        return (
            f"escalation {i + 1} late: at {at(nxt.t)}, {nxt.t - r.t:.1f}s after {label} "
            f"(timeout {timeout:g}s); due by {at(deadline)}"
        )
    if end_of(tl, b) < deadline:
        return None
    spans = inactive_spans(tl)
    untried = [
        c
        for c in configured(tl, b, deadline)
        if c not in tried and not inactive_at(spans, c, deadline)
    ]
    if not untried:
        return None
    return (
        f"never escalated after {label}: escalation {i + 1} was due by {at(deadline)} "
        f"(unplaced, untried: {joined(untried)})"
    )


def _early(
    tl: Timeline, b: Bounds, i: int, r: Round, timeout: float, nxt: Round | None
) -> str | None:
    """Why the round after `r` (the `i`-th) came too early, or None."""
    earliest = r.t + timeout - b.early_tolerance
    if nxt is None or nxt.t >= earliest or _gave_up(tl, r.names, r.t, nxt.t):
        return None
    return (
        f"escalation {i + 1} early: {joined(nxt.added)} nominated at {at(nxt.t)}, "
        f"{nxt.t - r.t:.1f}s into {round_label(i, r)} (timeout {timeout:g}s); "
        f"not before {at(earliest)}"
    )


def _gave_up(tl: Timeline, nominees: Iterable[str], start: float, end: float) -> bool:
    """A nominee stopped being a candidate in (start, end]: evicted, failed, or inactive."""
    nominees = set(nominees)
    for e in tl:
        if not start < e.t <= end:
            continue
        if e.kind is Kind.COPY_EVICTED and e.cluster in nominees:
            return True
        if e.kind is Kind.PROVREQ_STATE and e.cluster in nominees:
            if e.state == "Failed":
                return True
        if e.kind is Kind.CLUSTER_ACTIVE and e.about_cluster in nominees:
            if e.cluster_active is False:
                return True
    return False


def is_dispatcher(identity: str | None, b: Bounds) -> bool:
    """Unknown identity, or no identities configured, counts as the dispatcher."""
    return identity is None or not b.dispatcher_users or identity in b.dispatcher_users


def _ran_unplaced(tl: Timeline) -> Event | None:
    """The manager's FINISHED of a workload whose Job completed on a worker."""
    ran = any(e.condition == "Complete" for e in tl.where(Kind.JOB_FINISHED))
    return next(iter(tl.where(Kind.FINISHED)), None) if ran else None


def placed_or_ran(tl: Timeline) -> Event | None:
    """When the workload was placed: the first of its placement on the manager, its Job's
    creation on a worker (the manager's Kueue creates it on the worker it chose, and only
    there; under load its Workload shows that choice up to a minute later), and, for a
    Job that ran to completion before Kueue recorded where, the manager's FINISHED."""
    seen = (first_placement(tl), next(iter(tl.where(Kind.JOB_CREATED)), None), _ran_unplaced(tl))
    return min((e for e in seen if e is not None), key=lambda e: e.t, default=None)
