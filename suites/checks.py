"""The conformance check catalogue: declared data plus pure evaluation functions.

Each `Check` names one guarantee of the catalogue (spec/checks.md) (stable ID, name, feature) and an
`evaluate(timeline, bounds) -> Verdict` function. Evaluation is pure: it reads a recorded
(or hand-made) `Timeline` and the `Bounds` derived from the profile claims and the
scenario, and never touches a cluster, so every check is unit-tested without clusters.

Scope: a "workload" check is evaluated once per workload on `timeline.of(workload)`
(that workload's events plus environment events); a "scenario" check sees the whole
timeline. `run_check` does that iteration and folds the verdicts.

Conventions shared by all checks (scenario authors rely on them):
- Times are the timeline's monotonic seconds; a workload's clock starts at its
  WORKLOAD_CREATED event (or its first event when that is missing).
- A *round* is a NOMINATION, while the workload is not yet placed, that names at least
  one cluster not named by an earlier nomination of that pending period; `added` are those
  new names. A round's timeout is the largest timeout of its added clusters
  (`Bounds.timeout_of`: per-cluster override, else `round_timeout`).
- The observation ends at `Bounds.observed_until`, or the timeline's last event. A
  deadline after the end is not judged: the verdict is *inconclusive* (not passed, and
  the harness may report it as skipped) when nothing else decided it.
- "Dispatcher identities" are `Bounds.dispatcher_users` (audit usernames, and may include
  the dispatcher's field managers, which NOMINATION events carry as `writer`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from itertools import pairwise
from typing import Any, Literal

from harness.durations import parse_duration
from harness.timeline import Event, Kind, Timeline

INF = math.inf
ORDERINGS = ("config", "alphabetical", "tiers", "none")
Scope = Literal["workload", "scenario"]

# Seconds. Named so the report can show the tolerances actually used.
DEFAULT_SLACKS: dict[str, float] = {
    # admission on a worker + Job creation after the right nomination: Kueue's MultiKueue
    # reconciles alone took up to ~60 s under a burst on a 2-core machine
    "placement_slack": 60.0,
    "escalation_slack": 3.0,  # an escalation (or a first nomination) may be this late
    "early_tolerance": 1.0,  # ... and this early (clock skew between recorders)
    "loser_cleanup_slack": 15.0,  # losers' copies must be gone this long after placement
    "handover_slack": 30.0,  # lease takeover by the standby replica
    "burst_slack": 60.0,  # extra for queueing when a burst is dispatched
    "observation_skew": 0.5,  # watch vs audit timestamps; races inside it are not blamed
    "conflict_window": 2.0,  # two replicas writing within this window conflict
}


# --------------------------------------------------------------------------- data


@dataclass
class Verdict:
    """The outcome of one check: pass/fail, a one-line why, and the figures measured.

    `inconclusive` means the timeline did not exercise the check (no eviction happened,
    observation ended before the deadline...); `passed` is then False and the harness
    should report the check as skipped with `message`, not as a dispatcher failure.
    """

    passed: bool
    message: str = ""
    measured: dict[str, Any] = field(default_factory=dict)
    inconclusive: bool = False

    @classmethod
    def ok(cls, message: str = "", **measured: Any) -> Verdict:
        return cls(True, message, measured)

    @classmethod
    def fail(cls, problems: str | list[str], **measured: Any) -> Verdict:
        if isinstance(problems, str):
            problems = [problems]
        message = "; ".join(problems[:3])
        if len(problems) > 3:
            message += f" (and {len(problems) - 3} more)"
        return cls(False, message, measured)

    @classmethod
    def unclear(cls, message: str, **measured: Any) -> Verdict:
        return cls(False, message, measured, inconclusive=True)


@dataclass(frozen=True)
class Bounds:
    """What the checks need from the profile claims and the scenario.

    Profile part: step_size (None = "all"), round_timeout (None = never escalates),
    max_concurrent_provisioning, ordering. Scenario part: clusters (the MultiKueueConfig
    in declared order), cluster_timeouts and tiers (per-cluster knobs the scenario set),
    expected_cluster, foreign_workloads, dispatcher_users, observed_until.
    """

    clusters: tuple[str, ...] = ()
    step_size: int | None = None
    round_timeout: float | None = None
    max_concurrent_provisioning: int | None = None
    ordering: str = "none"
    cluster_timeouts: Mapping[str, float] = field(default_factory=dict)
    tiers: Mapping[str, int] = field(default_factory=dict)
    expected_cluster: str | None = None
    foreign_workloads: frozenset[str] = frozenset()
    dispatcher_users: frozenset[str] = frozenset()
    max_nominations: int = 10
    observed_until: float | None = None
    placement_slack: float = DEFAULT_SLACKS["placement_slack"]
    escalation_slack: float = DEFAULT_SLACKS["escalation_slack"]
    early_tolerance: float = DEFAULT_SLACKS["early_tolerance"]
    loser_cleanup_slack: float = DEFAULT_SLACKS["loser_cleanup_slack"]
    handover_slack: float = DEFAULT_SLACKS["handover_slack"]
    burst_slack: float = DEFAULT_SLACKS["burst_slack"]
    observation_skew: float = DEFAULT_SLACKS["observation_skew"]
    conflict_window: float = DEFAULT_SLACKS["conflict_window"]

    def __post_init__(self) -> None:
        # Accept lists/sets from callers; store immutable, ordered copies.
        object.__setattr__(self, "clusters", tuple(self.clusters))
        object.__setattr__(self, "cluster_timeouts", dict(self.cluster_timeouts))
        object.__setattr__(self, "tiers", dict(self.tiers))
        object.__setattr__(self, "foreign_workloads", frozenset(self.foreign_workloads))
        object.__setattr__(self, "dispatcher_users", frozenset(self.dispatcher_users))
        if self.ordering not in ORDERINGS:
            raise ValueError(f"ordering: must be one of {', '.join(ORDERINGS)}")

    @classmethod
    def derive(
        cls,
        claims: Mapping[str, Any],
        clusters: Iterable[str],
        slacks: Mapping[str, float | str] | None = None,
        *,
        cluster_timeouts: Mapping[str, float | str | None] | None = None,
        tiers: Mapping[str, int] | None = None,
        expected_cluster: str | None = None,
        foreign_workloads: Iterable[str] = (),
        dispatcher_users: Iterable[str] = (),
        max_nominations: int = 10,
        observed_until: float | None = None,
    ) -> Bounds:
        """Bounds from profile `claims` (profile spelling) plus the scenario's facts.

        `slacks` overrides DEFAULT_SLACKS by name (durations allowed: "5s").
        Raises ValueError naming the bad claim or slack.
        """
        step = claims.get("stepSize", "all")
        if step != "all" and (isinstance(step, bool) or not isinstance(step, int) or step < 1):
            raise ValueError(f'claims.stepSize: must be an integer >= 1 or "all", got {step!r}')
        prov = claims.get("maxConcurrentProvisioning")
        if prov is not None and (isinstance(prov, bool) or not isinstance(prov, int)):
            raise ValueError(f"claims.maxConcurrentProvisioning: not an integer: {prov!r}")
        ordering = claims.get("ordering") or "none"
        if ordering not in ORDERINGS:
            raise ValueError(f"claims.ordering: must be one of {', '.join(ORDERINGS)}")
        slack_values = {}
        for name, value in (slacks or {}).items():
            if name not in DEFAULT_SLACKS:
                raise ValueError(f"unknown slack {name!r} (known: {', '.join(DEFAULT_SLACKS)})")
            slack_values[name] = _duration(value, f"slacks.{name}")
        timeouts = {
            c: _duration(v, f"cluster_timeouts.{c}") for c, v in (cluster_timeouts or {}).items()
        }
        return cls(
            clusters=tuple(clusters),
            step_size=None if step == "all" else step,
            round_timeout=parse_duration(claims.get("roundTimeout")),
            max_concurrent_provisioning=prov,
            ordering=ordering,
            cluster_timeouts={c: v for c, v in timeouts.items() if v is not None},
            tiers=dict(tiers or {}),
            expected_cluster=expected_cluster,
            foreign_workloads=frozenset(foreign_workloads),
            dispatcher_users=frozenset(dispatcher_users),
            max_nominations=max_nominations,
            observed_until=observed_until,
            **slack_values,
        )

    def with_scenario(self, **changes: Any) -> Bounds:
        """A copy with scenario facts set (expected_cluster, clusters, observed_until...)."""
        return replace(self, **changes)

    def slacks(self) -> dict[str, float]:
        """The slacks in use, for the report's `timeouts` section."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in DEFAULT_SLACKS}

    def report_timeouts(self) -> dict[str, float | None]:
        """The report's `timeouts` section: the slacks and the claimed round timeout."""
        return {**self.slacks(), "roundTimeout": self.round_timeout}

    def ordered(self, clusters: Iterable[str] | None = None) -> list[str]:
        """Clusters in the order the claims say they are tried ("none": as configured)."""
        names = list(self.clusters if clusters is None else clusters)
        if self.ordering == "alphabetical":
            return sorted(names)
        if self.ordering == "tiers":  # a cluster without a tier is tier 0
            return sorted(names, key=lambda c: (self.tiers.get(c, 0), names.index(c)))
        return names

    def timeout_of(self, cluster: str) -> float | None:
        """Seconds a round nominating `cluster` lasts: its override, else round_timeout."""
        return self.cluster_timeouts.get(cluster, self.round_timeout)

    def round_timeout_for(self, clusters: Iterable[str]) -> float | None:
        """A round lasts the largest timeout of its clusters; None if one never times out."""
        values = [self.timeout_of(c) for c in clusters] or [self.round_timeout]
        return None if any(v is None for v in values) else max(v for v in values if v is not None)

    def escalation_delay(self, cluster: str | None = None) -> float:
        """Seconds from creation until the claims have `cluster` nominated.

        Sum of the timeouts of the batches (of step_size, in claimed order) before the
        cluster's batch. Unknown cluster or ordering "none": the worst case (last batch).
        Step "all" or a dispatcher that never escalates: 0 (all it will ever try is tried).
        """
        order = self.ordered()
        if self.step_size is None or not order:
            return 0.0
        known = cluster in order and self.ordering != "none"
        position = order.index(cluster) if known else len(order) - 1
        delay = 0.0
        for start in range(0, (position // self.step_size) * self.step_size, self.step_size):
            timeout = self.round_timeout_for(order[start : start + self.step_size])
            if timeout is None:
                return 0.0
            delay += timeout
        return delay

    def placement_bound(self, cluster: str | None = None) -> float:
        """Rounds needed to reach `cluster` x timeout, plus placement_slack."""
        return self.escalation_delay(cluster) + self.placement_slack


def _duration(value: Any, where: str) -> float | None:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


# --------------------------------------------------------------------------- helpers


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
        lambda e: e.kind is Kind.COPY_RESERVED and bool(e.data.get("reserved", True)),
        lambda e: e.kind is Kind.COPY_DELETED or not e.data.get("reserved", True),
    )


def _cluster_of(key: Hashable) -> Hashable:
    """The cluster of an Interval key: a cluster, or (cluster, name)."""
    return key[0] if isinstance(key, tuple) else key


def provisioning_intervals(tl: Timeline) -> list[Interval]:
    """Per (worker, request): a live ProvisioningRequest (created .. deleted or Failed)."""
    return intervals(
        tl.where(Kind.PROVREQ_CREATED, Kind.PROVREQ_STATE, Kind.PROVREQ_DELETED),
        lambda e: e.kind is Kind.PROVREQ_CREATED,
        lambda e: (
            e.kind is Kind.PROVREQ_DELETED
            or (e.kind is Kind.PROVREQ_STATE and e.data.get("state") == "Failed")
        ),
        key=lambda e: (e.cluster, e.data.get("name", "")),
    )


def preempting_workers(tl: Timeline) -> dict[str, float]:
    """Workers with a PREEMPTION event, with the time of their first one, in order."""
    out: dict[str, float] = {}
    for e in tl.where(Kind.PREEMPTION):
        out.setdefault(e.cluster, e.t)
    return out


def percentile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank percentile (always an observed value); None without values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def names(e: Event) -> list[str]:
    """The nominated cluster names of a NOMINATION event."""
    return list(e.data.get("names") or [])


def created_at(tl: Timeline) -> float:
    """When the workload's clock starts: WORKLOAD_CREATED, else its first event."""
    for e in tl:
        if e.kind is Kind.WORKLOAD_CREATED:
            return e.t
    own = [e.t for e in tl if e.workload]
    return own[0] if own else 0.0


def placements(tl: Timeline) -> list[Event]:
    """PLACEMENT events that set a cluster (not the ones clearing it)."""
    return [e for e in tl.where(Kind.PLACEMENT) if e.data.get("cluster")]


def first_placement(tl: Timeline, after: float = -INF) -> Event | None:
    return next((e for e in placements(tl) if e.t > after), None)


def first_nomination(tl: Timeline) -> Event | None:
    return next((e for e in tl.where(Kind.NOMINATION) if names(e)), None)


def placement_episodes(tl: Timeline) -> list[tuple[float, str, float]]:
    """(placed at, cluster, until): until a PLACEMENT clearing it, or infinity."""
    out: list[tuple[float, str, float]] = []
    for e in tl.where(Kind.PLACEMENT):
        cluster = e.data.get("cluster") or ""
        if out and out[-1][2] == INF:
            out[-1] = (out[-1][0], out[-1][1], e.t)
        if cluster:
            out.append((e.t, cluster, INF))
    return out


def placed_at(tl: Timeline, t: float) -> str | None:
    """The cluster the workload is placed on at instant t, if any."""
    return next((c for s, c, u in placement_episodes(tl) if s <= t < u), None)


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
            out += [c for c in e.data.get("clusters") or [] if c not in out]
    return out


def inactive_spans(tl: Timeline) -> list[Interval]:
    """Per cluster: MultiKueueCluster not Active (active=False .. active=True)."""
    return intervals(
        tl.where(Kind.CLUSTER_ACTIVE),
        lambda e: e.data.get("active") is False,
        lambda e: e.data.get("active") is True,
        key=lambda e: e.data.get("cluster", ""),
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
    """Rounds of the first pending period (before the first placement, or `until`)."""
    if until is None:
        first = first_placement(tl)
        until = first.t if first else INF
    seen: set[str] = set()
    out: list[Round] = []
    for e in tl.where(Kind.NOMINATION):
        if e.t >= until:
            break
        added = tuple(n for n in dict.fromkeys(names(e)) if n not in seen)
        if added:
            out.append(Round(e.t, added, tuple(names(e))))
            seen.update(added)
    return out


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
    """Judge each round's escalation: not before timeout - tolerance, not after + slack.

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
        late = _late(tl, b, r, timeout, nxt, tried, placed)
        early = _early(tl, b, r, timeout, nxt)
        out.append(
            RoundReview(r, timeout, next_t, nxt is not None or late is not None, late, early)
        )
    return out


def _late(
    tl: Timeline,
    b: Bounds,
    r: Round,
    timeout: float,
    nxt: Round | None,
    tried: set[str],
    placed: float,
) -> str | None:
    """Why round `r` escalated too late (or never), or None."""
    deadline = r.t + timeout + b.escalation_slack
    label = f"round {_list(r.added)} of {_at(r.t)}"
    if placed <= deadline or (nxt is not None and nxt.t <= deadline):
        return None
    if nxt is not None:
        return (
            f"escalated at {_at(nxt.t)}, {nxt.t - r.t:.1f}s after {label}; due by {_at(deadline)}"
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
        f"never escalated after {label} (due by {_at(deadline)}; "
        f"unplaced, untried: {_list(untried)})"
    )


def _early(tl: Timeline, b: Bounds, r: Round, timeout: float, nxt: Round | None) -> str | None:
    """Why the round after `r` came too early, or None."""
    earliest = r.t + timeout - b.early_tolerance
    if nxt is None or nxt.t >= earliest or _gave_up(tl, r.names, r.t, nxt.t):
        return None
    return (
        f"{_list(nxt.added)} nominated at {_at(nxt.t)}, {nxt.t - r.t:.1f}s into round "
        f"{_list(r.added)} of {_at(r.t)} (timeout {timeout:g}s); not before {_at(earliest)}"
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
            if e.data.get("state") == "Failed":
                return True
        if e.kind is Kind.CLUSTER_ACTIVE and e.data.get("cluster") in nominees:
            if e.data.get("active") is False:
                return True
    return False


def _is_dispatcher(identity: str | None, b: Bounds) -> bool:
    """Unknown identity, or no identities configured, counts as the dispatcher."""
    return identity is None or not b.dispatcher_users or identity in b.dispatcher_users


def _at(t: float) -> str:
    return f"t={t:.1f}s"


def _list(items: Iterable[Hashable]) -> str:
    return ",".join(str(i) for i in items) or "-"


def _not_judged(end: float, deadline: float, what: str) -> Verdict:
    return Verdict.unclear(f"observation ended at {_at(end)}, before {what} ({_at(deadline)})")


# --------------------------------------------------------------------------- core checks


def nominates_configured_only(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-01: every nominated name is in the config (Bounds.clusters, extended from
    the time of each CONFIG_CHANGED by the clusters it lists; a removal is not enforced,
    to avoid blaming writes racing with the change)."""
    allowed, problems = list(b.clusters), []
    for e in tl:
        if e.kind is Kind.CONFIG_CHANGED:
            allowed += [c for c in e.data.get("clusters") or [] if c not in allowed]
        elif e.kind is Kind.NOMINATION:
            outside = [n for n in names(e) if n not in allowed]
            if outside:
                problems.append(
                    f"{_at(e.t)} nominated {_list(outside)}, not in the config ({_list(allowed)})"
                )
    return Verdict.fail(problems) if problems else Verdict.ok()


def nomination_list_valid(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-02: no NOMINATION longer than Bounds.max_nominations, none with duplicates;
    the same for the lists in a dispatcher's WRITEs the apiserver rejected (the API's
    validation refuses such a list, so a rejected write is the only trace of it)."""
    problems, longest = [], 0
    rejected = [
        e for e in tl.where(Kind.WRITE) if "names" in e.data and int(e.data.get("code") or 0) >= 400
    ]
    for e in sorted([*tl.where(Kind.NOMINATION), *rejected], key=lambda e: e.t):
        ns = names(e)
        longest = max(longest, len(ns))
        what = "nominated" if e.kind is Kind.NOMINATION else f"tried (code {e.data['code']})"
        if len(ns) > b.max_nominations:
            problems.append(f"{_at(e.t)} {what} {len(ns)} clusters (max {b.max_nominations})")
        dups = sorted({n for n in ns if ns.count(n) > 1})
        if dups:
            problems.append(f"{_at(e.t)} {what} {_list(dups)} more than once")
    measured = {"longestNomination": longest}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


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
                if _is_dispatcher(e.data.get("writer"), b):
                    who = e.data.get("writer") or "unknown writer"
                    problems.append(
                        f"{who} nominated {_list(names(e))} at {_at(e.t)} while placed on "
                        f"{cluster} (since {_at(start)})"
                    )
            elif e.kind is Kind.WRITE and e.data.get("subresource") == "status":
                if e.data.get("user") in b.dispatcher_users:
                    problems.append(
                        f"{e.data.get('user')} wrote status ({e.data.get('verb')}, code "
                        f"{e.data.get('code')}) at {_at(e.t)} while placed on {cluster}"
                    )
    measured = {"writesAfterPlacement": len(problems)}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


def eventual_placement(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-04: placed on Bounds.expected_cluster (any cluster when None) within
    placement_bound(expected) of WORKLOAD_CREATED: the rounds the claims need to reach that
    cluster x their timeouts, plus placement_slack."""
    created, bound = created_at(tl), b.placement_bound(b.expected_cluster)
    deadline, p = created + bound, first_placement(tl)
    measured: dict[str, Any] = {"boundSeconds": bound}
    if p is None:
        end = end_of(tl, b)
        if end < deadline:
            return _not_judged(end, deadline, "the placement bound")
        target = b.expected_cluster or "any cluster"
        return Verdict.fail(f"never placed on {target} (bound {bound:.1f}s, {_at(deadline)})")
    cluster = p.data["cluster"]
    measured["timeToPlacementSeconds"] = p.t - created
    if b.expected_cluster and cluster != b.expected_cluster:
        return Verdict.fail(
            f"placed on {cluster} at {_at(p.t)}, expected {b.expected_cluster}", **measured
        )
    if p.t > deadline:
        return Verdict.fail(
            f"placed on {cluster} at {_at(p.t)}, {p.t - created:.1f}s after creation; "
            f"bound {bound:.1f}s ({_at(deadline)})",
            **measured,
        )
    return Verdict.ok(**measured)


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
        problems.append(f"Job exists on {_list(pk.keys)} at once at {_at(pk.t)}")
    done = tl.where(Kind.JOB_FINISHED, Kind.FINISHED)
    if done:
        for e in tl.where(Kind.JOB_CREATED):
            if e.t > done[0].t:
                problems.append(
                    f"Job created again on {e.cluster} at {_at(e.t)} after it finished "
                    f"on {done[0].cluster} at {_at(done[0].t)}"
                )
    measured = {"peakWorkersWithJob": pk.count}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


def redispatch_after_eviction(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-06: after an eviction a new placement follows within
    placement_bound(expected_cluster) of the moment the manager learnt of it (a PLACEMENT
    clearing clusterName, or a manager EVICTED while placed): a dispatcher cannot act
    before that. Only when the manager shows neither does the harness's ACTION
    what="evict" (while placed) start the clock. Triggers before that re-placement belong
    to the same eviction."""
    cleared = [until for _, _, until in placement_episodes(tl) if until != INF]
    manager_side = [e.t for e in tl.where(Kind.EVICTED) if placed_at(tl, e.t)]
    actions = [
        e.t for e in tl.where(Kind.ACTION) if e.data.get("what") == "evict" and placed_at(tl, e.t)
    ]
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
            return _not_judged(end_of(tl, b), t + bound, "the re-placement bound")
        if nxt is None or nxt.t > t + bound:
            where = f"placed on {nxt.data['cluster']} at {_at(nxt.t)}" if nxt else "never placed"
            problems.append(f"evicted at {_at(t)}, {where}; bound {bound:.1f}s")
    return Verdict.fail(problems) if problems else Verdict.ok(boundSeconds=bound)


def config_change_honoured(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-07: a cluster added by CONFIG_CHANGED (data clusters = the new list) while the
    workload is unplaced gets nominated (or the workload placed on it) within
    placement_bound of it in the new list plus one round_timeout, counted from the
    change: a dispatcher may take the new cluster in at its next round. Being placed
    elsewhere first also satisfies the check: the cluster was no longer needed."""
    previous, problems, judged = list(b.clusters), [], 0
    for change in tl.where(Kind.CONFIG_CHANGED):
        new = list(change.data.get("clusters") or [])
        added, previous = [c for c in new if c not in previous], new
        if not added or placed_at(tl, change.t):
            continue
        bound_for = b.with_scenario(clusters=tuple(new)).placement_bound
        next_round = b.round_timeout or 0.0
        for cluster in added:
            deadline = change.t + bound_for(cluster) + next_round
            hit = _first_use(tl, cluster, change.t)
            other = first_placement(tl, after=change.t)
            if (hit is not None and hit <= deadline) or (other and other.t <= deadline):
                judged += 1
                continue
            if end_of(tl, b) < deadline:
                return _not_judged(end_of(tl, b), deadline, f"the bound for {cluster}")
            judged += 1
            problems.append(
                f"{cluster} added to the config at {_at(change.t)}, "
                + (f"first nominated at {_at(hit)}" if hit else "never nominated")
                + f"; bound {_at(deadline)}"
            )
    if problems:
        return Verdict.fail(problems)
    return Verdict.ok() if judged else Verdict.unclear("no cluster added while pending")


def _first_use(tl: Timeline, cluster: str, after: float) -> float | None:
    """First time at/after `after` that `cluster` is nominated or placed on."""
    for e in tl:
        if e.t < after:
            continue
        if e.kind is Kind.NOMINATION and cluster in names(e):
            return e.t
        if e.kind is Kind.PLACEMENT and e.data.get("cluster") == cluster:
            return e.t
    return None


def foreign_workloads_untouched(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-08 (scenario scope): a foreign workload (Bounds.foreign_workloads, plus every
    workload named by an ACTION what="foreign") is never written by a dispatcher user
    (any WRITE: verb, outcome or subresource) and never gets a nomination by a
    dispatcher writer. Without known dispatcher users (a dispatcher built into Kueue,
    whose writes share Kueue's identity) the nominations alone are judged."""
    foreign = set(b.foreign_workloads)
    for e in tl.where(Kind.ACTION):
        if e.data.get("what") == "foreign":
            foreign.add(e.data.get("workload") or e.workload)
    foreign.discard("")
    if not foreign:
        return Verdict.unclear("no foreign workload in the scenario")
    problems = [
        f"{e.data.get('user')} wrote {e.workload} ({e.data.get('verb')}"
        f"{'/' + e.data['subresource'] if e.data.get('subresource') else ''}) at {_at(e.t)}"
        for e in tl.where(Kind.WRITE)
        if e.workload in foreign and e.data.get("user") in b.dispatcher_users
    ]
    problems += [
        f"{e.data.get('writer') or 'unknown writer'} nominated {_list(names(e))} for "
        f"{e.workload} at {_at(e.t)}"
        for e in tl.where(Kind.NOMINATION)
        if e.workload in foreign and names(e) and _is_dispatcher(e.data.get("writer"), b)
    ]
    measured = {"foreignWorkloads": len(foreign), "foreignWrites": len(problems)}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


def _ran_unplaced(tl: Timeline) -> Event | None:
    """The manager's FINISHED of a workload whose Job completed on a worker."""
    ran = any(e.data.get("condition") == "Complete" for e in tl.where(Kind.JOB_FINISHED))
    return next(iter(tl.where(Kind.FINISHED)), None) if ran else None


def placed_or_ran(tl: Timeline) -> Event | None:
    """The first placement, or, for a Job that ran to completion on a worker before Kueue
    recorded where (a short Job under load), the manager's FINISHED."""
    return first_placement(tl) or _ran_unplaced(tl)


def burst_liveness(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-09 (scenario scope): every non-foreign workload with a WORKLOAD_CREATED is
    placed within placement_bound(expected_cluster) + burst_slack of its creation; one
    whose Job ran to completion on a worker (JOB_FINISHED "Complete") and that the
    manager shows FINISHED in that time counts as placed: under load Kueue may never
    record clusterName for a short Job (see README). Measures p50/p99 time to first
    nomination and to placement."""
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
            state = f"placed at {_at(placed.t)}" if placed else "never placed"
            stuck.append(f"{workload} (created {_at(t0)}) {state}")
    measured = {
        "workloads": len(created),
        "placed": len(to_placement),
        "boundSeconds": bound,
        "timeToFirstNominationSeconds": _p50_p99(to_nomination),
        "timeToPlacementSeconds": _p50_p99(to_placement),
    }
    if stuck:
        head = f"{len(stuck)}/{len(created)} workloads not placed within {bound:.1f}s"
        return Verdict.fail([head] + stuck, **measured)
    if unknown:
        return Verdict.unclear(f"{unknown} workloads unplaced when observation ended", **measured)
    return Verdict.ok(**measured)


def _p50_p99(values: list[float]) -> dict[str, float | None]:
    return {q: _round(percentile(values, n)) for q, n in (("p50", 50), ("p99", 99))}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


# --------------------------------------------------------------------------- extended checks


def bounded_fan_out(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-01: at every instant, copies (COPY_CREATED..COPY_DELETED) and nominated names
    number at most step_size x (1 + rounds elapsed), where rounds elapsed =
    floor((t - created + early_tolerance) / T) and T is the shortest timeout claimed
    (round_timeout or any per-cluster override); without a timeout, at most step_size.
    So before the first escalation at most step_size, then step_size more per round."""
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

    copies: set[str] = set()
    nominated: list[str] = []
    problems, peaks = [], {"copies": 0, "nominated": 0}
    for e in tl.where(Kind.COPY_CREATED, Kind.COPY_DELETED, Kind.NOMINATION):
        if e.kind is Kind.COPY_CREATED:
            copies.add(e.cluster)
        elif e.kind is Kind.COPY_DELETED:
            copies.discard(e.cluster)
        else:
            nominated = names(e)
        for what, holders in (("copies", sorted(copies)), ("nominated", nominated)):
            peaks[what] = max(peaks[what], len(holders))
            if len(holders) > allowed(e.t):
                problems.append(
                    f"{len(holders)} {what} ({_list(holders)}) at {_at(e.t)}, "
                    f"{e.t - t0:.1f}s after creation; claim allows {allowed(e.t)}"
                )
    measured = {"peakCopies": peaks["copies"], "peakNominated": peaks["nominated"]}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


def no_simultaneous_autoscaling(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-02: with a maxConcurrentProvisioning claim, peak concurrent live
    ProvisioningRequests across workers (created until deleted or Failed) <= the claim.
    Without one (a dispatcher that keeps earlier nominees), autoscaling must still never
    start in more than step_size workers at once: requests created within one round
    (round_timeout - early_tolerance) <= step_size. No request at all is inconclusive.
    A request created on a worker while the workload is placed on another is Kueue
    removing the losing copy (v0.17.1 re-creates one for an instant), not a dispatch."""
    spans = [
        s
        for s in provisioning_intervals(tl)
        if placed_at(tl, s.start) in (None, _cluster_of(s.key))
    ]
    if not spans:
        return Verdict.unclear("no ProvisioningRequest was created")
    pk = peak(spans)
    measured = {"peakProvisioningRequests": pk.count}
    limit = b.max_concurrent_provisioning
    if limit is not None:
        if pk.count > limit and pk.t is not None:
            workers = _list(dict.fromkeys(_cluster_of(k) for k in pk.keys))
            return Verdict.fail(
                f"{pk.count} ProvisioningRequests at once at {_at(pk.t)} on {workers} "
                f"(claim {limit})",
                **measured,
            )
        return Verdict.ok(**measured)
    if b.step_size is None:
        return Verdict.ok(**measured)
    window = (b.round_timeout or INF) - b.early_tolerance
    starts = sorted((s.start, s.key) for s in spans)
    for i, (t, _) in enumerate(starts):
        together = [k for u, k in starts[i:] if u - t < window]
        if len(together) > b.step_size:
            workers = _list(dict.fromkeys(_cluster_of(k) for k in together))
            return Verdict.fail(
                f"{len(together)} ProvisioningRequests started within one round from {_at(t)} "
                f"on {workers} (step {b.step_size})",
                **measured,
            )
    return Verdict.ok(**measured)


def bounded_duplicate_admission(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-03: peak concurrent quota reservations (COPY_RESERVED reserved=True until
    reserved=False or COPY_DELETED) <= step_size; and while placed on X, no copy on
    another worker exists later than placement + loser_cleanup_slack."""
    pk, problems = peak(reservation_intervals(tl)), []
    if pk.count == 0:
        return Verdict.unclear("no copy reserved quota")
    if b.step_size is not None and pk.count > b.step_size and pk.t is not None:
        problems.append(
            f"{pk.count} reservations at once at {_at(pk.t)} on {_list(pk.keys)} "
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
                    f"loser copy on {copy.key} still present at {_at(limit)}, "
                    f"{b.loser_cleanup_slack:g}s after placement on {winner} at {_at(start)}"
                )
    measured = {"peakReservations": pk.count}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


def bounded_preemption(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-04: distinct workers with a PREEMPTION event for the workload <= step_size.
    No preemption at all is inconclusive (the scenario should force one)."""
    workers = preempting_workers(tl)
    measured = {"workersWithPreemptions": len(workers)}
    if not workers:
        return Verdict.unclear("no preemption happened", **measured)
    if b.step_size is not None and len(workers) > b.step_size:
        where = ", ".join(f"{c} at {_at(t)}" for c, t in workers.items())
        return Verdict.fail(
            f"preemptions on {len(workers)} workers ({where}); stepSize {b.step_size}", **measured
        )
    return Verdict.ok(**measured)


def _escalation_verdict(reviews: list[RoundReview], attr: str, none_due: str) -> Verdict:
    problems = [getattr(r, attr) for r in reviews if getattr(r, attr)]
    gaps = [round(r.next_t - r.round.t, 3) for r in reviews if r.next_t is not None]
    measured = {"escalationGapsSeconds": gaps}
    if problems:
        return Verdict.fail(problems, **measured)
    if not any(r.judged for r in reviews):
        return Verdict.unclear(none_due, **measured)
    return Verdict.ok(**measured)


def timeout_escalation(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-05: while unplaced, each round is followed by a new round within its timeout +
    escalation_slack, unless every configured active cluster has been tried. Fails
    when the workload is never nominated. Inconclusive when no escalation came due."""
    if b.round_timeout is None and not b.cluster_timeouts:
        return Verdict.unclear("no roundTimeout claimed: nothing to escalate")
    if not rounds(tl):
        end, t0 = end_of(tl, b), created_at(tl)
        if end < t0 + b.escalation_slack:
            return _not_judged(end, t0 + b.escalation_slack, "the first nomination")
        if first_placement(tl) is None:
            return Verdict.fail(f"never nominated (created {_at(t0)}, observed to {_at(end)})")
    return _escalation_verdict(review_rounds(tl, b), "late", "no escalation came due")


def no_premature_escalation(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-06: no round starts earlier than previous round start + its timeout -
    early_tolerance, unless a nominee gave up meanwhile (copy evicted, ProvisioningRequest
    Failed, cluster inactive)."""
    reviews = review_rounds(tl, b)
    if not any(r.next_t is not None and r.timeout is not None for r in reviews):
        return Verdict.unclear("no escalation observed", escalationGapsSeconds=[])
    return _escalation_verdict(reviews, "early", "no escalation observed")


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
    gaps = {_list(r.round.added): r.next_t - r.round.t for r in reviews if r.next_t}
    return Verdict.ok(roundSecondsByNominees=gaps)


def ordered_dispatch(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-07: when a cluster is first nominated, every cluster before it in the claimed
    order (config, alphabetical, or tiers = (tier, config index)) was already nominated,
    or is inactive at that time, or is not configured yet. Names first appearing in the
    same write are a batch (list order inside a write is not judged). "none" passes."""
    if b.ordering == "none":
        return Verdict.ok('ordering "none": no order claimed')
    order, spans = b.ordered(configured(tl, b)), inactive_spans(tl)
    seen: dict[str, float] = {}
    problems: list[str] = []
    for e in tl.where(Kind.NOMINATION):
        new = [n for n in names(e) if n not in seen and n in order]
        seen.update(dict.fromkeys(new, e.t))
        for cluster in new:
            skipped = [
                c
                for c in order[: order.index(cluster)]
                if c not in seen and not inactive_at(spans, c, e.t) and c in configured(tl, b, e.t)
            ]
            if skipped:
                problems.append(
                    f"{cluster} nominated at {_at(e.t)} before {_list(skipped)} "
                    f"({b.ordering} order: {_list(order)})"
                )
    if not seen:
        return Verdict.unclear("nothing was nominated")
    measured = {"firstNominated": list(seen)}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


def provisioning_failover(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-09: provisioning fails on worker F (the first PROVREQ_STATE Failed or
    CapacityRevoked, at tf). The clock starts when the manager shows it (the placement on F
    cleared, or a manager EVICTED while placed on F, after tf); a failure before placement
    never reaches the manager, so then tf itself. From that moment t:
    (a) F is not retried first: the first NOMINATION after t names a cluster other than F,
        and names F only alongside every other configured cluster (judged only when the
        manager showed the failure: before that a dispatcher cannot know);
    (b) the workload is placed on a worker other than F by t + escalation_slack +
        placement_slack."""
    failed = [
        e
        for e in tl.where(Kind.PROVREQ_STATE)
        if e.data.get("state") in ("Failed", "CapacityRevoked")
    ]
    if not failed:
        return Verdict.unclear("no ProvisioningRequest failed or lost its capacity")
    bad, tf = failed[0].cluster, failed[0].t
    shown = sorted(
        [until for _, c, until in placement_episodes(tl) if c == bad and tf <= until < INF]
        + [e.t for e in tl.where(Kind.EVICTED) if e.t >= tf and placed_at(tl, e.t) == bad]
    )
    t = shown[0] if shown else tf
    deadline, problems = t + b.escalation_slack + b.placement_slack, []
    if shown:
        after = next((e for e in tl.where(Kind.NOMINATION) if e.t > t and names(e)), None)
        others = set(configured(tl, b, t)) - {bad}
        if after is not None:
            named = set(names(after))
            if not named - {bad}:
                problems.append(f"{bad} re-nominated alone at {_at(after.t)} after it failed")
            elif bad in named and not others <= named:
                problems.append(
                    f"{bad} retried at {_at(after.t)} with {_list(sorted(named - {bad}))} "
                    f"before {_list(sorted(others - named))}, right after it failed"
                )
    placed = first_placement(tl, after=t)
    if placed is None and end_of(tl, b) < deadline and not problems:
        return _not_judged(end_of(tl, b), deadline, "the failover bound")
    if placed is None or placed.t > deadline or placed.data["cluster"] == bad:
        where = f"placed on {placed.data['cluster']} at {_at(placed.t)}" if placed else "not placed"
        problems.append(
            f"provisioning failed on {bad} at {_at(tf)}; {where}, "
            f"expected another worker by {_at(deadline)}"
        )
    return Verdict.fail(problems) if problems else Verdict.ok(failedOn=bad)


def skips_inactive_clusters(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-10: (a) no NOMINATION adds (relative to the previous list) a cluster that has
    been inactive for observation_skew or more; (b) when a configured cluster is inactive
    at creation, the first nomination naming an active cluster comes within
    escalation_slack of creation (nominating the inactive one first, even inside the skew
    of (a), still costs a round); (c) rounds escalate on time (EXT-05's rule), so
    skipping does not cost a round."""
    spans = [s for s in inactive_spans(tl) if s.key in configured(tl, b)]
    if not spans:
        return Verdict.unclear("no configured cluster was inactive")
    problems, previous = [], set()
    for e in tl.where(Kind.NOMINATION):
        for cluster in [n for n in names(e) if n not in previous]:
            if inactive_at(spans, cluster, e.t, since=b.observation_skew):
                problems.append(f"{cluster} nominated at {_at(e.t)} while inactive")
        previous = set(names(e))
    t0 = created_at(tl)
    if any(inactive_at(spans, c, t0) for c in b.clusters):
        limit = t0 + b.escalation_slack
        first = next(
            (
                e
                for e in tl.where(Kind.NOMINATION)
                if any(not inactive_at(spans, n, e.t) for n in names(e))
            ),
            None,
        )
        placed = first_placement(tl)
        if (first is None or first.t > limit) and not (placed and placed.t <= limit):
            when = f"at {_at(first.t)}" if first else "never"
            problems.append(
                f"first nomination {when} of an active cluster, due by {_at(limit)} "
                "(inactive cost a round)"
            )
    problems += [r.late for r in review_rounds(tl, b) if r.late]
    return Verdict.fail(problems) if problems else Verdict.ok()


def restart_resilience(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-11: with ACTION what="dispatcher-killed" at tk and "dispatcher-restarted" at tr,
    the dispatcher is back at tb: its first READ (list or watch of Workloads) after tk, else
    tr (no audit log). With downtime d = tb - tk, the round running at tk escalates no
    earlier than start + timeout - early_tolerance (no jump) and no later than start +
    timeout + d + escalation_slack (no reset: a reset shows as tb + timeout, only
    distinguishable when the kill is more than escalation_slack into the round); and the
    workload is placed within placement_bound(expected_cluster) + d of creation. Timing
    from tb, not tr, keeps a process slow to start (a loaded machine) from looking like
    a reset."""
    kill = _action(tl, "dispatcher-killed")
    restart = _action(tl, "dispatcher-restarted", after=kill.t if kill else INF)
    if kill is None or restart is None:
        return Verdict.unclear("no dispatcher-killed/dispatcher-restarted actions")
    back = next((e for e in tl.where(Kind.READ) if e.t > kill.t), restart)
    down, problems = back.t - kill.t, []
    measured: dict[str, Any] = {"downtimeSeconds": down}
    if back is not restart:
        measured["startupSeconds"] = back.t - restart.t
    placed, end = first_placement(tl), end_of(tl, b)
    if placed and placed.t <= kill.t:
        return Verdict.unclear(f"placed at {_at(placed.t)}, before the kill", **measured)
    reviews = [r for r in review_rounds(tl, b) if r.round.t <= kill.t and r.timeout is not None]
    if reviews:
        r = reviews[-1]
        measured["killOffsetSeconds"] = kill.t - r.round.t
        problems += _restart_window(r, kill.t, back.t, b, end)
    stuck_at = created_at(tl) + b.placement_bound(b.expected_cluster) + down
    if (placed is None and end >= stuck_at) or (placed and placed.t > stuck_at):
        state = f"placed at {_at(placed.t)}" if placed else "never placed"
        problems.append(f"workload {state} after restart; bound {_at(stuck_at)}")
    if problems:
        return Verdict.fail(problems, **measured)
    if placed is None:
        return _not_judged(end, stuck_at, "the placement bound")
    return Verdict.ok(**measured)


def _restart_window(r: RoundReview, kill: float, back: float, b: Bounds, end: float) -> list[str]:
    """The round running at the kill must end on its original schedule (see EXT-11)."""
    assert r.timeout is not None
    due = r.round.t + r.timeout
    latest = due + (back - kill) + b.escalation_slack
    label = (
        f"round {_list(r.round.added)} of {_at(r.round.t)} (killed {_at(kill)}, back {_at(back)})"
    )
    if r.next_t is None:
        return [r.late] if r.late and end >= latest else []
    if r.next_t < due - b.early_tolerance:
        return [f"jumped: escalated at {_at(r.next_t)}, {label} was due at {_at(due)}"]
    if r.next_t > latest:
        reset = abs(r.next_t - back - r.timeout) <= b.escalation_slack
        hint = " (= back after restart + timeout: round reset)" if reset else ""
        return [f"escalated at {_at(r.next_t)}{hint}, {label} due by {_at(latest)}"]
    return []


def leader_failover(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-12: after ACTION what="leader-killed" at tk (data user = the killed leader's
    user; default the last dispatcher writer before tk), if the workload still needs a
    write (unplaced, an escalation or the first nomination outstanding) a dispatcher WRITE
    by another user follows by max(tk + handover_slack, due + escalation_slack). And no
    two different dispatcher users WRITE the workload within conflict_window of each other
    (any outcome: a 409 is a write attempt too), except the handover itself: the killed
    leader's write (from tk - conflict_window) followed by another user's after
    tk - observation_skew (by tk + handover_slack). A standby cannot hold the lease before
    the leader dies, so another user's write before the killed leader's last one, however
    close to the kill, is two replicas writing at once."""
    if not b.dispatcher_users:
        return Verdict.unclear("dispatcher users unknown: replicas cannot be told apart")
    writes = [e for e in tl.where(Kind.WRITE) if e.data.get("user") in b.dispatcher_users]
    kill = _action(tl, "leader-killed")
    before = [w for w in writes if kill and w.t <= kill.t]
    old = (kill.data.get("user") if kill else None) or (before[-1].data["user"] if before else None)

    def handover(a: Event, c: Event) -> bool:
        if kill is None or a.data["user"] != old or c.data["user"] == old:
            return False
        after = kill.t - b.observation_skew < c.t <= kill.t + b.handover_slack
        return after and a.t >= kill.t - b.conflict_window

    problems = [
        f"conflicting writes by {a.data['user']} at {_at(a.t)} and {c.data['user']} at {_at(c.t)}"
        for a, c in pairwise(writes)
        if a.data["user"] != c.data["user"]
        and c.t - a.t <= b.conflict_window
        and not handover(a, c)
    ]
    if kill is None:
        return Verdict.fail(problems) if problems else Verdict.unclear("no leader-killed action")
    late, due = _handover(tl, b, kill, writes)
    problems += late
    if problems:
        return Verdict.fail(problems)
    if not due:
        return Verdict.unclear("no write was due after the leader was killed")
    return Verdict.ok()


def _handover(tl: Timeline, b: Bounds, kill: Event, writes: list[Event]) -> tuple[list[str], bool]:
    """Problems with the takeover write, and whether one was due at all (see EXT-12)."""
    before = [w for w in writes if w.t <= kill.t]
    old = kill.data.get("user") or (before[-1].data["user"] if before else None)
    current = [r for r in rounds(tl) if r.t <= kill.t]
    timeout = b.round_timeout_for(current[-1].added) if current else 0.0
    if timeout is None:
        return [], False  # the running round never escalates
    due = (current[-1].t if current else kill.t) + timeout
    deadline = max(kill.t + b.handover_slack, due + b.escalation_slack)
    takeover = next((w for w in writes if w.t > kill.t and w.data["user"] != old), None)
    if takeover and takeover.t <= deadline:
        return [], True
    tried = {c for r in current for c in r.added}
    placed = first_placement(tl)
    if (placed and placed.t <= deadline) or not set(configured(tl, b, kill.t)) - tried:
        return [], False
    if end_of(tl, b) < deadline:
        return [], False
    when = f"first at {_at(takeover.t)}" if takeover else "none"
    return [
        f"leader {old} killed at {_at(kill.t)}; write by another replica {when}, "
        f"due by {_at(deadline)}"
    ], True


def _action(tl: Timeline, what: str, after: float = -INF) -> Event | None:
    return next(
        (e for e in tl.where(Kind.ACTION) if e.data.get("what") == what and e.t >= after), None
    )


# --------------------------------------------------------------------------- catalogue


@dataclass(frozen=True)
class Check:
    """One catalogue entry: stable id and name, required feature, and its evaluation."""

    id: str
    name: str
    feature: str | None  # None: core, every dispatcher must pass it
    summary: str
    scenario: str
    evaluate: Callable[[Timeline, Bounds], Verdict]
    scope: Scope = "workload"

    def supported_by(self, features: Iterable[str]) -> bool:
        """Core checks always apply; extended ones when the profile claims the feature."""
        return self.feature is None or self.feature in set(features)


def _c(
    id: str,
    name: str,
    feature: str | None,
    summary: str,
    scenario: str,
    evaluate: Callable[[Timeline, Bounds], Verdict],
    scope: Scope = "workload",
) -> tuple[str, Check]:
    return id, Check(id, name, feature, summary, scenario, evaluate, scope)


CATALOGUE: dict[str, Check] = dict(
    [
        _c("CORE-01", "NominatesConfiguredOnly", None,
           "Only clusters of the workload's MultiKueueConfig are ever nominated.",
           "The config lists w2,w3 only; none has capacity for a while, then w3 does.",
           nominates_configured_only),
        _c("CORE-02", "NominationListValid", None,
           "The nomination list stays within the API maximum and has no duplicates.",
           "Any scenario.",
           nomination_list_valid),
        _c("CORE-03", "NoNominationAfterPlacement", None,
           "Once clusterName is set, the dispatcher leaves nominatedClusterNames alone.",
           "A workload is admitted on one worker and observed for a while after.",
           no_nomination_after_placement),
        _c("CORE-04", "EventualPlacement", None,
           "A workload that fits in exactly one configured worker is placed there.",
           "Only the last worker in the preferred order has capacity.",
           eventual_placement),
        _c("CORE-05", "SingleExecution", None,
           "The Job runs in at most one worker, once.",
           "Every scenario (checked on every timeline).",
           single_execution),
        _c("CORE-06", "RedispatchAfterEviction", None,
           "A workload evicted from its worker is placed again.",
           "Placed on w1, then evicted there (preempted locally or quota removed).",
           redispatch_after_eviction),
        _c("CORE-07", "ConfigChangeHonoured", None,
           "A cluster added to the MultiKueueConfig while a workload is pending is considered.",
           "Pending without capacity; w4 (with capacity) is added to the config.",
           config_change_honoured),
        _c("CORE-08", "ForeignWorkloadsUntouched", None,
           "Workloads that are not pending MultiKueue work are not written by the dispatcher.",
           "A plain ClusterQueue workload on the manager and a finished MultiKueue workload.",
           foreign_workloads_untouched, "scenario"),
        _c("CORE-09", "BurstLiveness", None,
           "A burst of workloads is all placed; none is stuck.",
           "100 workloads at once (200 in the long run), capacity for all.",
           burst_liveness, "scenario"),
        _c("EXT-01", "BoundedFanOut", "BoundedFanOut",
           "At most stepSize clusters hold a copy before the first escalation, "
           "and growth per round is at most stepSize.",
           "No worker has capacity; two rounds are observed.",
           bounded_fan_out),
        _c("EXT-02", "NoSimultaneousAutoscaling", "BoundedFanOut",
           "At most maxConcurrentProvisioning workers hold a ProvisioningRequest at once.",
           "Every worker has a ProvisioningRequest check; the fake autoscaler keeps them "
           "pending, then provisions one.",
           no_simultaneous_autoscaling),
        _c("EXT-03", "BoundedDuplicateAdmission", "BoundedFanOut",
           "At most stepSize workers reserve quota at once, and losers' copies go quickly.",
           "Every worker has capacity.",
           bounded_duplicate_admission),
        _c("EXT-04", "BoundedPreemption", "BoundedFanOut",
           "A high-priority workload causes preemptions in at most stepSize workers.",
           "Every worker is full of low-priority local workloads.",
           bounded_preemption),
        _c("EXT-05", "TimeoutEscalation", "Escalation",
           "When nominees do not admit within the timeout, more clusters are nominated "
           "within timeout + slack.",
           "No capacity in the first batch, capacity later in the order.",
           timeout_escalation),
        _c("EXT-06", "NoPrematureEscalation", "Escalation",
           "No escalation before the timeout while nominees are still pending.",
           "As EXT-05.",
           no_premature_escalation),
        _c("EXT-07", "OrderedDispatch", "Ordering",
           "Clusters are tried in the declared order (config order, or tiers).",
           "The declared order differs from alphabetical.",
           ordered_dispatch),
        _c("EXT-08", "PerClusterTimeout", "PerClusterTimeout",
           "A per-worker timeout override is honoured.",
           "An override on one worker (e.g. reservation cluster 20 s, others 5 s).",
           per_cluster_timeout),
        _c("EXT-09", "ProvisioningFailover", "ProvisioningFailover",
           "When provisioning fails on a worker, the workload moves on and is placed elsewhere.",
           "The fake autoscaler fails w1's request; w2 provisions.",
           provisioning_failover),
        _c("EXT-10", "SkipsInactiveClusters", "InactiveAware",
           "Clusters that are not Active are not nominated, nor cost a round.",
           "w1's apiserver is stopped while a workload is pending.",
           skips_inactive_clusters),
        _c("EXT-11", "RestartResilience", "RestartSafe",
           "Killing and restarting the dispatcher mid-round neither resets nor jumps the "
           "round, and loses no workload.",
           "SIGKILL the dispatcher 70% into a round, restart it 2 s later; its downtime "
           "lasts until its first list or watch of Workloads.",
           restart_resilience),
        _c("EXT-12", "LeaderFailover", "HighAvailability",
           "With two replicas, killing the leader hands over within the lease time, "
           "without double writes.",
           "Two dispatcher processes; the leader is killed.",
           leader_failover),
    ]
)  # fmt: skip


def run_check(
    check: Check, timeline: Timeline, bounds: Bounds, workloads: Iterable[str] | None = None
) -> Verdict:
    """Evaluate `check` as its scope says and fold per-workload verdicts into one.

    Workload scope: every workload of the timeline except foreign ones (or `workloads`).
    Any failure fails (messages prefixed by the workload); all inconclusive is
    inconclusive; otherwise passed. `measured` holds each workload's figures.
    """
    if check.scope == "scenario":
        return check.evaluate(timeline, bounds)
    chosen = list(workloads) if workloads is not None else timeline.workloads()
    chosen = [w for w in chosen if w not in bounds.foreign_workloads]
    if not chosen:
        return Verdict.unclear("no workload in the timeline")
    verdicts = {w: check.evaluate(timeline.of(w), bounds) for w in chosen}
    if len(verdicts) == 1:
        return next(iter(verdicts.values()))
    measured = {"perWorkload": {w: v.measured for w, v in verdicts.items()}}
    failed = [
        f"{w}: {v.message}" for w, v in verdicts.items() if not v.passed and not v.inconclusive
    ]
    if failed:
        return Verdict.fail(failed, **measured)
    if all(v.inconclusive for v in verdicts.values()):
        return Verdict.unclear(next(iter(verdicts.values())).message, **measured)
    return Verdict.ok(**measured)
