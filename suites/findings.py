"""Findings: what went wrong across scenarios, in words a vendor can act on.

Checks judge one promise on one scenario; a vendor whose dispatcher has one root cause
(it reads the clusters once, it lacks a privilege, it stopped) sees many results. Each
detector here reads the timelines the result records carry (one view per scenario, with
times made run-wide by the record's `origin`) and names the cause once, with the
scenarios it was seen in and the check results it explains. Thresholds are generous:
a finding must not fire on a conforming dispatcher.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.recording.timeline import Event, Kind, Timeline
from harness.report import Finding
from harness.results import Result, ScenarioResult
from suites.checks import CATALOGUE, MAX_NOMINATIONS, Bounds, created_at, first_placement, names

NEVER_NOMINATED_AFTER = 30.0  # seconds pending with no nomination before it counts
QUIET_AFTER = 30.0  # seconds of dispatcher silence (at least) that count as stopped
CONFLICTS_PER_WORKLOAD = 5  # 409s on one workload beyond a re-read-and-retry
CONFLICT_SHARE = 0.1  # or 409s on this share of all its writes (at least 5 of them)
STORM_FACTOR, STORM_MIN = 5.0, 20  # writes per workload beyond factor x what claims need
NOT_DECIDED = (Result.FAILED, Result.UNDECIDED)


@dataclass
class View:
    """One scenario as its result records saw it."""

    name: str
    timeline: Timeline
    origin: float = 0.0
    observed_until: float = 0.0
    config: tuple[str, ...] = ()
    shared_clusters: bool = False  # the environment's clusters, there before the dispatcher
    foreign: frozenset[str] = frozenset()
    results: dict[str, str] = field(default_factory=dict)  # check -> worst result

    def workloads(self) -> list[str]:
        return [
            e.workload
            for e in self.timeline.where(Kind.WORKLOAD_CREATED)
            if e.workload not in self.foreign
        ]

    def unexplained(self) -> list[str]:
        return [c for c, r in self.results.items() if r in NOT_DECIDED]


def views(records: Iterable[ScenarioResult]) -> list[View]:
    """One View per scenario: the longest timeline its records carry, every check's result."""
    out: dict[str, View] = {}
    for r in records:
        if r.timeline is None:
            continue  # collection-time records (skipped, not supported) have none
        view = out.setdefault(r.scenario, View(r.scenario, Timeline()))
        result = view.results.get(r.check)
        if result not in NOT_DECIDED:
            view.results[r.check] = r.result
        if len(r.timeline) >= len(view.timeline):
            view.timeline = Timeline.from_list(r.timeline)
            view.origin = r.origin
            end = r.observed_until
            view.observed_until = end if end is not None else _last(view.timeline)
            view.config = r.config
            view.shared_clusters = r.shared_clusters
            view.foreign = frozenset(r.foreign)
    return sorted(out.values(), key=lambda v: v.origin)


def detect(
    records: Iterable[ScenarioResult], claims: Mapping[str, Any] | None = None
) -> list[Finding]:
    """Every finding the records show, in a fixed order."""
    records = list(records)
    users = frozenset(u for r in records for u in r.dispatcher_users)
    seen = views(records)
    run = Run(seen, users, dict(claims or {}))
    return [f for detector in DETECTORS if (f := detector(run)) is not None]


@dataclass
class Run:
    """What the detectors share: the scenarios, the dispatcher's identities, the claims."""

    views: list[View]
    users: frozenset[str]
    claims: dict[str, Any]

    @property
    def zero(self) -> float:
        return min((v.origin for v in self.views), default=0.0)

    def at(self, view: View, t: float) -> float:
        """A scenario time as seconds since the run's first recorded event."""
        return view.origin + t - self.zero

    def bounds(self, view: View) -> Bounds:
        return Bounds.derive(self.claims, view.config)

    def made(self, e: Event) -> bool:
        """The dispatcher made this request (any request, when it is built into Kueue)."""
        return not self.users or e.user in self.users

    def writes(self, tl: Timeline) -> list[Event]:
        """The dispatcher's writes to Workloads."""
        return [e for e in tl.where(Kind.WRITE) if self.made(e)]

    def finding(
        self, id: str, title: str, detail: str, where: Sequence[View], primary: Sequence[str] = ()
    ) -> Finding:
        checks = {*primary, *(c for v in where for c in v.unexplained())}
        order = list(CATALOGUE)
        return Finding(
            id,
            title,
            detail,
            tuple(v.name for v in where),
            tuple(sorted(checks, key=lambda c: order.index(c) if c in order else len(order))),
        )


def _too_long(e: Event) -> bool:
    """A write or nomination of more names than the API allows."""
    return len(names(e)) > MAX_NOMINATIONS


def _refused(e: Event) -> bool:
    return e.kind is Kind.WRITE and e.code >= 400


# ------------------------------------------------------------------------------ detectors


def nominated_outside_config(run: Run) -> Finding | None:
    """Names nominated (or asked for in a refused write) that no config of the workload had.
    A write refused for its length is nomination_list_too_long's: the API judged its size,
    not its names."""
    hits: list[tuple[View, list[str], list[str]]] = []  # view, config, outside names
    workloads: set[str] = set()
    for v in run.views:
        allowed, outside = list(v.config), []
        for e in v.timeline:
            if e.kind is Kind.CONFIG_CHANGED:
                allowed += [c for c in e.clusters if c not in allowed]
            elif e.kind is Kind.NOMINATION or (e.kind is Kind.WRITE and "names" in e.data):
                if _refused(e) and _too_long(e):
                    continue
                bad = [n for n in names(e) if n not in allowed and n not in outside]
                outside += bad
                workloads.update([e.workload] if bad else [])
        if outside:
            hits.append((v, allowed, outside))
    if not hits:
        return None
    every = Counter(n for _, _, outside in hits for n in outside)
    v0, config, outside = hits[0]
    detail = (
        f"{len(workloads)} workload(s) in {len(hits)} scenario(s) got nominations of "
        f"{_names(every)}: in no MultiKueueConfig of the workload. "
        f"In {v0.name} the workload's MultiKueueConfig had {_names(config)}; the dispatcher "
        f"nominated {_names(outside)}. "
    )
    if all(n in every and every[n] == len(hits) for n in outside) and len(hits) > 1:
        detail += (
            "The same names came in every scenario: the dispatcher uses a fixed list "
            "(e.g. the MultiKueueClusters it found at start) instead of the workload's config. "
        )
    detail += (
        "Read each workload's config (its ClusterQueue's MultiKueue AdmissionCheck names a "
        "MultiKueueConfig) and nominate only its clusters; watch configs and clusters, "
        "which are created and changed while the dispatcher runs."
    )
    title = "Nominated clusters that are in no MultiKueueConfig of the workload"
    return run.finding("nominated-outside-config", title, detail, [h[0] for h in hits], ["CORE-01"])


def nomination_list_too_long(run: Run) -> Finding | None:
    """Writes of more names than .status.nominatedClusterNames allows (nominations that
    long where no audit log shows the writes): the API refuses such a write, so the
    workload gets nothing from it."""
    hits: list[tuple[View, Event]] = []
    for v in run.views:
        long = [e for e in run.writes(v.timeline) if _too_long(e)]
        if not v.timeline.where(Kind.WRITE):
            long = [e for e in v.timeline.where(Kind.NOMINATION) if _too_long(e)]
        hits += [(v, e) for e in long]
    if not hits:
        return None
    where = list({v.name: v for v, _ in hits}.values())
    workloads = {e.workload for _, e in hits}
    detail = (
        f"{len(hits)} write(s) of .status.nominatedClusterNames for {len(workloads)} "
        f"workload(s) in {len(where)} scenario(s) asked for up to "
        f"{max(len(names(e)) for _, e in hits)} cluster names; the API allows at most "
        f"{MAX_NOMINATIONS} (maxItems in Kueue's Workload CRD). "
    )
    refused = [e for _, e in hits if e.code in (400, 422)]
    if refused:
        codes = Counter(e.code for e in refused)
        message = refused[0].message
        said = _NAMES_ERROR.search(message)  # the apiserver adds boilerplate after it
        message = said.group() if said else _NAME_IN_MESSAGE.sub(r'\1 "…"', message)
        detail += (
            f"The apiserver refused {len(refused)} of them for too many names "
            f"({', '.join(f'{code} x{n}' for code, n in sorted(codes.items()))}"
            f"{': ' + message if message else ''}): those workloads got no nomination from "
            "them. "
        )
    detail += (
        f"Never write more than {MAX_NOMINATIONS} names: nominate in rounds (escalate to "
        "the next clusters when a round times out), and when a config lists more than "
        f"{MAX_NOMINATIONS} clusters, nominate at most the first {MAX_NOMINATIONS} in the "
        "preferred order at once."
    )
    title = f"Nomination lists longer than the API allows (at most {MAX_NOMINATIONS} names)"
    return run.finding("nomination-list-too-long", title, detail, where, ["CORE-02"])


def never_nominated(run: Run) -> Finding | None:
    """Workloads pending for a while, and no nomination of anything in the whole run."""
    if any(v.timeline.where_nominated() for v in run.views):
        return None
    if any(names(e) for v in run.views for e in run.writes(v.timeline)):
        return None
    waiting: list[tuple[View, float]] = []
    for v in run.views:
        pending = [
            v.observed_until - created_at(tl)
            for w in v.workloads()
            if first_placement(tl := v.timeline.of(w)) is None
        ]
        longest = max(pending, default=0.0)
        if longest >= NEVER_NOMINATED_AFTER:
            waiting.append((v, longest))
    if not waiting:
        return None
    count = sum(
        1 for v, _ in waiting for w in v.workloads() if first_placement(v.timeline.of(w)) is None
    )
    wrote = sum(len(run.writes(v.timeline)) for v in run.views)
    detail = (
        f"{count} workload(s) in {len(waiting)} scenario(s) stayed pending, up to "
        f"{max(t for _, t in waiting):.0f}s, and the dispatcher nominated nothing in the "
        f"whole run ({wrote} write(s) to Workloads). Check that it runs and stays up, that "
        "it selects the Workloads whose MultiKueue AdmissionCheck names it (Kueue's "
        "dispatcherName), and that its writes are allowed (see any 403 finding)."
    )
    title = "Never nominated anything"
    return run.finding("never-nominated", title, detail, [v for v, _ in waiting], ["CORE-04"])


def ignored_new_clusters(run: Run) -> Finding | None:
    """Nominations in some scenarios, none at all in others whose workloads waited: the
    silent ones' clusters (and config) were made while the dispatcher ran. When it served
    exactly the scenarios on clusters that existed before it started, it reads them once."""
    served = [v for v in run.views if v.timeline.where_nominated()]
    if not served:
        return None  # nothing nominated anywhere: never_nominated says so
    made_later = _discovered_once(run)
    silent = [
        v
        for v in run.views
        if not v.timeline.where_nominated()
        and _waited(v)
        and (v in made_later or _active_after(run, v))
    ]
    if not silent:
        return None
    workloads = sum(len(v.workloads()) for v in silent)
    detail = (
        f"{workloads} workload(s) in {len(silent)} scenario(s) ({_names(v.name for v in silent)})"
        f" were never nominated, while the dispatcher nominated in {len(served)} other "
        "scenario(s). "
    )
    if silent == made_later:
        detail += (
            "It served every scenario on the environment's clusters, made before it started, "
            "and none whose MultiKueueClusters and MultiKueueConfig were made after: it "
            "discovers clusters and configs only at start. "
        )
    else:
        detail += "Their MultiKueueClusters and MultiKueueConfig were made while it ran. "
    detail += (
        "Watch MultiKueueClusters and MultiKueueConfigs (or list them again) so clusters "
        "and configs created later are considered, as Kueue's own dispatchers do."
    )
    title = "Never nominated clusters created after it started"
    return run.finding("ignored-new-clusters", title, detail, silent, ["CORE-07"])


def _discovered_once(run: Run) -> list[View]:
    """The scenarios on clusters made after the dispatcher started that it never nominated
    in, when it nominated in scenarios on the environment's clusters (made before it
    started) and only there: the pattern of a dispatcher that reads clusters once. The
    pattern needs no sign of life from it: a controller whose watches are open sends no
    request while it has nothing to do."""
    served = [v for v in run.views if v.timeline.where_nominated()]
    if not served or not all(v.shared_clusters for v in served):
        return []
    return [
        v
        for v in run.views
        if not v.shared_clusters and not v.timeline.where_nominated() and _waited(v)
    ]


def _active_after(run: Run, v: View) -> bool:
    """The dispatcher still made requests after the scenario's first workload came (if it
    had stopped, stopped_reconciling explains the silence)."""
    first = min((created_at(v.timeline.of(w)) for w in v.workloads()), default=None)
    if first is None or not run.users:
        return True
    start = run.at(v, first)
    return any(
        run.at(u, e.t) > start
        for u in run.views
        for e in u.timeline.where(Kind.READ, Kind.WRITE)
        if e.user in run.users
    )


def _waited(v: View) -> bool:
    """A workload of the scenario stayed unplaced long enough to need a nomination."""
    return any(
        v.observed_until - created_at(tl) >= NEVER_NOMINATED_AFTER
        for w in v.workloads()
        if first_placement(tl := v.timeline.of(w)) is None
    )


def api_forbidden(run: Run) -> Finding | None:
    """Requests authorization refused (403), by resource, verb and namespace. Scenarios that
    ran at once all saw the same refusals: each is counted once. Refusals while a scenario
    had the manager's kube-apiserver out are left out: a starting apiserver refuses
    requests it will allow once its RBAC caches are filled, a missing privilege of nobody."""
    seen: dict[tuple[Any, ...], list[float]] = {}
    where: dict[str, View] = {}
    for v in run.views:
        restarts = v.timeline.outages("manager-apiserver")
        for e in v.timeline.where(Kind.FORBIDDEN):
            if any(down <= e.t <= back for down, back in restarts):
                continue
            d = e.data  # a refusal's resource, namespace and name are its own
            what = (e.user, e.verb, d.get("resource"), d.get("namespace") or "")
            seen.setdefault((*what, d.get("name")), []).append(run.at(v, e.t))
            where.setdefault(v.name, v)
    if not seen:
        return None
    groups: Counter[tuple[Any, ...]] = Counter()
    for (_user, verb, resource, ns, _name), times in seen.items():
        groups[(verb, resource, ns)] += _distinct(times)
    lines = [
        f"{verb} {resource} {('in ' + ns) if ns else 'cluster-wide'}: {n} time(s)"
        for (verb, resource, ns), n in groups.most_common()
    ]
    total = sum(groups.values())
    users = sorted({str(key[0]) for key in seen})
    detail = (
        f"The manager refused {total} request(s) of {', '.join(users)} with 403 "
        f"Forbidden: {'; '.join(lines)}. Declare what the dispatcher needs in the profile "
        "(run.rbac; the report lists every privilege granted beyond the baseline), or stop "
        "requesting it."
    )
    title = "API requests refused with 403 Forbidden"
    return run.finding("api-forbidden", title, detail, list(where.values()))


def _distinct(times: list[float], within: float = 0.05) -> int:
    """How many requests these are: each test process times an audit entry on its own
    clock, so one request may show up a few milliseconds apart in two scenarios."""
    ordered, count, last = sorted(times), 0, -math.inf
    for t in ordered:
        count += t - last > within
        last = t
    return count


_NAME_IN_MESSAGE = re.compile(r'(?i)(workloads?(?:\.kueue\.x-k8s\.io)?) "[^"]+"')
_NAMES_ERROR = re.compile(r"status\.nominatedClusterNames: [^,\]]+")


def writes_refused(run: Run) -> Finding | None:
    """Writes refused as invalid (422, 400), denied by a webhook (403 "admission webhook"),
    or conflicting (409) more often than now and then: on one workload again and again, or
    on a share of all writes. A write refused for too many names is
    nomination_list_too_long's. The 409s are told apart by what followed each: a GET of
    the Workload (a re-read) or the next write without one (a retry from its cache)."""
    refused: Counter[tuple[int, str]] = Counter()
    where: dict[str, View] = {}
    conflicts: Counter[str] = Counter()
    conflicted: dict[str, View] = {}
    writes = reread = retried = 0
    for v in run.views:
        for e in run.writes(v.timeline):
            code, message = e.code, e.message
            writes += 1
            if code == 409:
                if not conflicts[e.workload]:
                    r, b = _after_conflicts(run, v.timeline.of(e.workload))
                    reread, retried = reread + r, retried + b
                conflicts[e.workload] += 1
                conflicted.setdefault(v.name, v)
            elif _too_long(e):
                continue
            elif code in (400, 422) or (code == 403 and "admission webhook" in message):
                refused[(code, _NAME_IN_MESSAGE.sub(r'\1 "…"', message) or "no message")] += 1
                where.setdefault(v.name, v)
    total = sum(conflicts.values())
    worst, most = conflicts.most_common(1)[0] if conflicts else ("", 0)
    many = most >= CONFLICTS_PER_WORKLOAD or (
        total >= CONFLICTS_PER_WORKLOAD and total >= CONFLICT_SHARE * writes
    )
    if many:
        said = (
            f"{total} of {writes} writes ({100 * total // writes} %), up to {most} on one "
            f"workload ({worst}); {reread} followed by a GET of the Workload, {retried} by "
            "the next write without one"
        )
        refused[(409, said)] = total
        where.update(conflicted)
    if not refused:
        return None
    lines = [f"{code} x{n}: {message}" for (code, message), n in refused.most_common(5)]
    more = f" (and {len(refused) - 5} more kinds)" if len(refused) > 5 else ""
    advice = (
        "A 422 or a webhook's 403 is Kueue or the API saying the write is wrong (read the message)"
    )
    if many and retried > reread:
        advice += (
            "; 409s retried without a GET in between mean the dispatcher retries from a "
            "stale copy (its cache lags the API): re-read the Workload before retrying"
        )
    elif many:
        advice += (
            "; 409s each followed by a GET are re-read before the retry, as they should be, "
            "but each cost a write and a read: the writes started from a copy the Workload "
            "had moved past, another writer's change (Kueue's, in a burst) or the "
            "dispatcher's own previous write, not yet in its cache (writing again from "
            "the object a write returns avoids those)"
        )
    detail = (
        f"{sum(refused.values())} write(s) to Workloads were refused: {'; '.join(lines)}"
        f"{more}. {advice}."
    )
    title = "Writes refused by the API or Kueue"
    return run.finding("writes-refused", title, detail, list(where.values()))


def _after_conflicts(run: Run, tl: Timeline) -> tuple[int, int]:
    """Of a workload's refused writes with 409: how many the dispatcher followed with a GET
    of it, and how many with its next write and no GET before."""
    reread = retried = 0
    conflict = False
    for e in tl.where(Kind.READ, Kind.WRITE):
        if not run.made(e) or not e.workload:
            continue  # another's request, or a list or watch of all Workloads
        if e.kind is Kind.READ:
            reread += conflict
            conflict = False
        else:
            retried += conflict
            conflict = e.code == 409
    return reread, retried


def stopped_reconciling(run: Run) -> Finding | None:
    """The dispatcher's last request at T; after it, workloads that needed it got nothing."""
    if not run.users:
        return None
    activity = [
        run.at(v, e.t)
        for v in run.views
        for e in v.timeline.where(Kind.READ, Kind.WRITE)
        if e.user in run.users
    ]
    if not activity or not any(names(e) for v in run.views for e in run.writes(v.timeline)):
        return None
    last = max(activity)
    needed: list[tuple[View, int, float]] = []
    explained = _discovered_once(run)  # silent there because it never saw those clusters
    for v in run.views:
        if v in explained:
            continue
        b = run.bounds(v)
        quiet = max(QUIET_AFTER, 2 * (b.round_timeout or 0.0)) + b.escalation_slack
        end = run.at(v, v.observed_until)
        if end - last < quiet:
            continue
        due = [d for w in v.workloads() if (d := _due(v, w, b)) is not None]
        due = [d for d in due if end - max(last, run.at(v, d)) >= quiet]
        if due:
            needed.append((v, len(due), end - max(last, run.at(v, min(due)))))
    if not needed:
        return None
    detail = (
        f"The dispatcher's last request (a write to a Workload, or a list or watch of "
        f"Workloads) came {last:.0f}s into the run. After that, "
        f"{sum(n for _, n, _ in needed)} workload(s) in {len(needed)} scenario(s) needed "
        f"it (new, or due for their next round) and got nothing for up to "
        f"{max(g for _, _, g in needed):.0f}s while the scenarios went on. Its log "
        "(artifacts/logs in the report directory) says why: a crash, a deadlock, a lost "
        "watch never re-established, a work queue that stopped."
    )
    title = "Stopped reconciling"
    return run.finding("stopped-reconciling", title, detail, [v for v, _, _ in needed])


def _due(v: View, workload: str, b: Bounds) -> float | None:
    """When an unplaced workload next needed the dispatcher: its creation when it was never
    nominated, else its last round's end while the config has clusters left to nominate."""
    tl = v.timeline.of(workload)
    if first_placement(tl) is not None:
        return None
    lists = tl.where(Kind.NOMINATION)
    if not [e for e in lists if names(e)]:
        return created_at(tl)
    last = [e for e in lists if names(e)][-1]
    timeout = b.round_timeout_for(names(last))
    if timeout is None or set(v.config) <= set(names(last)):
        return None
    return last.t + timeout


def write_storm(run: Run) -> Finding | None:
    """Nomination writes per workload far above the rounds its claims need while pending."""
    writes = placed = workloads = 0
    allowed: list[float] = []
    where: list[View] = []
    for v in run.views:
        b, stormy = run.bounds(v), 0
        step = b.step_size or max(len(v.config), 1)
        for w in v.workloads():
            tl = v.timeline.of(w)
            mine = [e for e in run.writes(tl) if e.subresource == "status"]
            count = len(mine) if run.users else len(tl.where(Kind.NOMINATION))
            placement = first_placement(tl)
            pending = (placement.t if placement else v.observed_until) - created_at(tl)
            rounds: float = math.ceil(len(v.config) / step) + 1
            if b.round_timeout:
                rounds += pending / b.round_timeout
            if count >= STORM_MIN and count > STORM_FACTOR * (rounds + 2):
                stormy += 1
                writes, workloads = writes + count, workloads + 1
                placed += placement is not None
                allowed.append(rounds)
        if stormy:
            where.append(v)
    if not where:
        return None
    timeout = run.claims.get("roundTimeout")
    claims = f"stepSize {run.claims.get('stepSize') or 'all'}, "
    claims += f"roundTimeout {f'{timeout:g}s' if timeout else 'none'}"
    detail = (
        f"{writes} nomination write(s) for {workloads} workload(s) in {len(where)} "
        f"scenario(s) ({writes / workloads:.0f} per workload, {placed} of them placed); "
        f"the claims ({claims}) need about {max(allowed):.0f} round(s) per workload. Write "
        "only when the list changes (compare with the Workload as read), do not requeue "
        "on the update your own write causes, and back off per workload."
    )
    title = "Write storm: far more nomination writes than the claims need"
    return run.finding("write-storm", title, detail, where)


def _names(items: Iterable[str]) -> str:
    listed = list(dict.fromkeys(items))
    return ", ".join(listed[:8]) + (f" (and {len(listed) - 8} more)" if len(listed) > 8 else "")


def _last(tl: Timeline) -> float:
    return max((e.t for e in tl), default=0.0)


DETECTORS: tuple[Callable[[Run], Finding | None], ...] = (
    nominated_outside_config,
    nomination_list_too_long,
    ignored_new_clusters,
    never_nominated,
    api_forbidden,
    writes_refused,
    stopped_reconciling,
    write_storm,
)
