"""Dispatch policy of the reference dispatcher: which workers get a copy of a workload, and when.

Pure functions, no I/O, time passed in as epoch seconds (``now``): the Kubernetes layer reads
objects, calls ``decide`` and writes back what it returns, so every rule here is unit-tested
with a fake clock, and a restarted process resumes a round from the persisted
``DispatchState`` (round start is wall-clock time because monotonic clocks do not survive a
restart).

Model
-----
* **Order**: the MultiKueueConfig's clusters sorted by (tier, declared index); clusters where
  the workload failed (evicted, provisioning failed) go last, oldest failure first.
* **Round**: nominates a *batch* of the next ``step`` untried *active* clusters, all from the
  same tier group, so tier N+1 starts only once every active tier-N cluster has been tried and
  timed out. Inactive clusters stay untried (they cost no round) and are picked up when a
  later round reaches them after they come back; clusters added to the config are untried.
* **Nominees**: cumulative mode keeps every cluster tried in this cycle; exclusive mode keeps
  only the batch. Inactive, removed and failed clusters are never written; at most 20 names
  (above that, the oldest nominees make room).
* **Escalation**: when ``now >= round_start + timeout``; earlier when the round has nothing
  usable left to nominate, or right after ``record_failure``.
* **Failover**: a failed cluster leaves the nominees, becomes untried again and goes to the end
  of the order, so the next round starts past it. If nothing else is left untried, exclusive
  mode starts a new cycle from the first cluster; cumulative mode keeps the others nominated
  for one more round before retrying the failed one.
* **Cycle**: when every active cluster has been tried and timed out, exclusive mode starts
  over from the first in order. Cumulative mode instead keeps every active cluster nominated
  (a new cycle would delete queued copies, losing their place in the workers' queues, only to
  re-create them); with more active clusters than fit in the list it starts over too.
* **Timeout**, most specific wins: workload annotation > per-cluster annotation (the maximum
  over the batch: a round exists to give its new clusters their time, and the slowest should
  get its full share; earlier nominees already had theirs) > MultiKueueConfig annotation >
  global default.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dispatchers.reference.settings import Settings, parse_duration

MAX_NOMINEES = 20  # API maximum of .status.nominatedClusterNames
NO_ACTIVE_RECHECK = 5.0  # seconds between looks when no configured cluster is active
STATE_VERSION = 1


class StateError(ValueError):
    """The persisted dispatch state cannot be read; the I/O layer starts from a fresh state."""


@dataclass(frozen=True)
class ClusterInfo:
    """What the policy needs of one MultiKueueCluster."""

    name: str
    active: bool = True
    tier: int = 0
    timeout: float | None = None  # per-cluster round timeout override, seconds
    problems: tuple[str, ...] = ()  # ignored bad label/annotation values, for the reason

    @classmethod
    def from_metadata(
        cls,
        name: str,
        active: bool,
        labels: Mapping[str, str] | None,
        annotations: Mapping[str, str] | None,
        settings: Settings,
    ) -> ClusterInfo:
        """Build from the object's metadata; a bad tier or timeout is ignored and reported."""
        problems: list[str] = []
        tier = _parse_tier((labels or {}).get(settings.tier_label), name, problems)
        raw = (annotations or {}).get(settings.cluster_timeout_annotation)
        timeout = _parse_override(raw, f"cluster {name}", problems)
        return cls(name, active, tier, timeout, tuple(problems))


@dataclass(frozen=True)
class WorkloadView:
    """What the policy needs of one pending Workload and of its MultiKueueConfig."""

    key: str  # namespace/name, for messages only
    timeout: float | None = None  # per-workload override (Workload annotation)
    config_name: str = ""
    config_timeout: float | None = None  # per-config override (MultiKueueConfig annotation)
    problems: tuple[str, ...] = ()

    @classmethod
    def from_metadata(
        cls,
        key: str,
        annotations: Mapping[str, str] | None,
        config_name: str,
        config_annotations: Mapping[str, str] | None,
        settings: Settings,
    ) -> WorkloadView:
        """Build from Workload and MultiKueueConfig annotations; bad values are reported."""
        problems: list[str] = []
        own = (annotations or {}).get(settings.workload_timeout_annotation)
        cfg = (config_annotations or {}).get(settings.config_timeout_annotation)
        return cls(
            key,
            _parse_override(own, f"workload {key}", problems),
            config_name,
            _parse_override(cfg, f"config {config_name}", problems),
            tuple(problems),
        )


def _parse_tier(raw: str | None, name: str, problems: list[str]) -> int:
    if raw is None:
        return 0
    try:
        return int(raw)
    except ValueError:
        problems.append(f"cluster {name}: tier label {raw!r} is not an integer, using 0")
        return 0


def _parse_override(raw: str | None, owner: str, problems: list[str]) -> float | None:
    if raw is None:
        return None
    try:
        seconds = parse_duration(raw)
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        problems.append(f"{owner}: timeout {raw!r} is not a positive duration, ignored")
        return None
    return seconds


@dataclass(frozen=True)
class DispatchState:
    """Where one workload is in its dispatch; persisted as JSON in a Workload annotation."""

    round: int = 0  # 0: never dispatched
    round_start: float = 0.0  # epoch seconds, millisecond precision
    cycle: int = 0  # passes over the order, from 1
    tried: tuple[str, ...] = ()  # clusters tried in this cycle, in the order tried
    batch: tuple[str, ...] = ()  # clusters the current round added
    failed: tuple[str, ...] = ()  # clusters where the workload failed, oldest first
    nominees: tuple[str, ...] = ()  # the last nominatedClusterNames decided
    advance: bool = False  # a failure ended the round: start the next one at once
    failure_mark: str = ""  # the I/O layer's id of the last failure recorded (deduplication)

    def to_json(self) -> str:
        """Compact JSON; empty fields are left out."""
        data: dict[str, Any] = {"v": STATE_VERSION, "round": self.round}
        data["start"] = self.round_start
        data["cycle"] = self.cycle
        for name in _NAME_FIELDS:
            if getattr(self, name):
                data[name] = list(getattr(self, name))
        if self.advance:
            data["advance"] = True
        if self.failure_mark:
            data["mark"] = self.failure_mark
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> DispatchState:
        """Parse ``to_json`` output; raise StateError for anything else."""
        try:
            data = json.loads(text)
        except ValueError as err:
            raise StateError(f"dispatch state is not JSON: {err}") from None
        if not isinstance(data, dict) or data.get("v") != STATE_VERSION:
            raise StateError(f"dispatch state has no supported version: {text[:80]!r}")
        advance = data.get("advance", False)
        if not isinstance(advance, bool):
            raise StateError(f"dispatch state field 'advance' is not a boolean: {advance!r}")
        mark = data.get("mark", "")
        if not isinstance(mark, str):
            raise StateError(f"dispatch state field 'mark' is not a string: {mark!r}")
        return cls(
            failure_mark=mark,
            round=_int_field(data, "round"),
            round_start=_number_field(data, "start"),
            cycle=_int_field(data, "cycle"),
            advance=advance,
            **{name: _names_field(data, name) for name in _NAME_FIELDS},
        )


_NAME_FIELDS = ("tried", "batch", "failed", "nominees")


def _int_field(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StateError(f"dispatch state field {key!r} is not a count: {value!r}")
    return value


def _number_field(data: Mapping[str, Any], key: str) -> float:
    value = data.get(key, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise StateError(f"dispatch state field {key!r} is not a time: {value!r}")
    return float(value)


def _names_field(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StateError(f"dispatch state field {key!r} is not a list of names")
    return tuple(dict.fromkeys(value))


@dataclass(frozen=True)
class Decision:
    """What to write, what to persist, and when to look again."""

    nominees: list[str]  # the full desired .status.nominatedClusterNames
    state: DispatchState  # persist this before writing the nominees
    requeue_after: float  # seconds until the round expires: call decide again then
    reason: str  # one line, for Events and logs
    new_round: bool = False  # a round started now (worth an Event)
    timeout: float = 0.0  # the current round's timeout, seconds
    timeout_source: str = ""  # "workload <key>" | "cluster <name>" | "config <name>" | ...


@dataclass(frozen=True)
class _View:
    """The inputs of one decision, normalised."""

    order: tuple[str, ...]  # config clusters, preferred first, failed last
    groups: Mapping[str, tuple[int, int]]  # cluster -> (0, tier), or (1, 0) when failed
    clusters: Mapping[str, ClusterInfo]
    settings: Settings

    def usable(self, name: str) -> bool:
        info = self.clusters.get(name)
        return name in self.groups and info is not None and info.active


def record_failure(state: DispatchState, cluster: str, now: float) -> DispatchState:
    """Note that the workload was evicted from, or failed to provision on, ``cluster``.

    The cluster goes to the end of the order and becomes untried again (it comes back only
    after the others), leaves the nominees, and the current round is closed at ``now``: the
    next ``decide`` starts a round past it at once.
    """
    return replace(
        state,
        round_start=_ms(now),
        tried=_without(state.tried, cluster),
        batch=_without(state.batch, cluster),
        failed=(*_without(state.failed, cluster), cluster),
        nominees=_without(state.nominees, cluster),
        advance=True,
    )


def decide(
    now: float,
    workload: WorkloadView,
    clusters: Sequence[ClusterInfo],
    config_order: Sequence[str],
    settings: Settings,
    state: DispatchState,
) -> Decision:
    """The nominees for a pending, unplaced workload at ``now``, and the state to persist.

    Deterministic: the same inputs give the same decision, so a restarted dispatcher that
    reloads the state resumes the round where it was.
    """
    view = _make_view(clusters, config_order, settings, state)
    state = _prune(state, view, now)
    if not any(view.usable(name) for name in view.order):
        return _no_active(view, workload, state)
    if state.round == 0:
        return _start_round(now, workload, view, state, "first dispatch")
    if state.advance:
        failed = state.failed[-1] if state.failed else "a removed cluster"
        return _start_round(now, workload, view, state, f"failover past {failed}")
    if not _desired(view, state):
        why = f"round {state.round} has no usable cluster left (inactive or removed)"
        return _start_round(now, workload, view, state, why)
    timeout, source = _round_timeout(workload, view, state.batch)
    expiry = state.round_start + timeout
    if now < expiry:
        return _hold(workload, view, state, timeout, source, expiry - now)
    if _complete(view, state):
        return _hold(workload, view, state, timeout, source, timeout, complete=True)
    why = f"round {state.round} timed out after {_s(timeout)}"
    return _start_round(now, workload, view, state, why)


def explain(
    now: float,
    workload: WorkloadView,
    clusters: Sequence[ClusterInfo],
    config_order: Sequence[str],
    settings: Settings,
    state: DispatchState,
) -> str:
    """Multi-line account of the inputs and of what ``decide`` would do, for humans."""
    view = _make_view(clusters, config_order, settings, state)
    decision = decide(now, workload, clusters, config_order, settings, state)
    return "\n".join(
        [
            f"workload {workload.key} (config {workload.config_name or '?'})",
            f"mode {settings.mode}, step {settings.step}, "
            f"global timeout {_s(settings.round_timeout)}",
            f"state: round {state.round}, cycle {state.cycle}, started {_ago(now, state)}",
            "order (preferred first):",
            *(_cluster_line(name, view, decision.state) for name in view.order),
            f"timeout: {_s(decision.timeout)} from {decision.timeout_source}",
            f"decision: nominate [{', '.join(decision.nominees)}]",
            f"reason: {decision.reason}",
            f"look again in {_s(decision.requeue_after)}",
        ]
    )


# --- the view -------------------------------------------------------------------------------


def _make_view(
    clusters: Sequence[ClusterInfo],
    config_order: Sequence[str],
    settings: Settings,
    state: DispatchState,
) -> _View:
    """Order the config's clusters by (tier, index), failed clusters last in failure order."""
    infos = {c.name: c for c in clusters}
    names = list(dict.fromkeys(config_order))
    failed = [name for name in state.failed if name in names]
    groups = {name: (0, infos[name].tier if name in infos else 0) for name in names}
    groups.update({name: (1, 0) for name in failed})

    def key(name: str) -> tuple[tuple[int, int], int]:
        return groups[name], failed.index(name) if name in failed else names.index(name)

    return _View(tuple(sorted(names, key=key)), groups, infos, settings)


def _prune(state: DispatchState, view: _View, now: float) -> DispatchState:
    """Forget clusters no longer in the config; clamp a round start in the future (skew)."""
    keep = set(view.order)
    return replace(
        state,
        round_start=min(state.round_start, _ms(now)),
        tried=tuple(n for n in state.tried if n in keep),
        batch=tuple(n for n in state.batch if n in keep),
        failed=tuple(n for n in state.failed if n in keep),
    )


# --- the rules ------------------------------------------------------------------------------


def _untried(view: _View, tried: Sequence[str]) -> list[str]:
    return [n for n in view.order if n not in tried and view.usable(n)]


def _next_batch(view: _View, untried: Sequence[str]) -> tuple[str, ...]:
    """The next ``step`` untried active clusters, never crossing into the next tier group."""
    group = view.groups[untried[0]]
    same = [n for n in untried if view.groups[n] == group]
    return tuple(same[: min(max(view.settings.step, 1), MAX_NOMINEES)])


def _desired(view: _View, state: DispatchState) -> list[str]:
    """Cumulative: every usable cluster tried this cycle; exclusive: the usable batch."""
    pool = state.tried if view.settings.mode == "cumulative" else state.batch
    return [n for n in pool if view.usable(n)][-MAX_NOMINEES:]


def _complete(view: _View, state: DispatchState) -> bool:
    """Cumulative mode with every active cluster nominated: nothing to escalate to."""
    if view.settings.mode != "cumulative" or _untried(view, state.tried):
        return False
    return len([n for n in state.tried if view.usable(n)]) <= MAX_NOMINEES


def _round_timeout(workload: WorkloadView, view: _View, batch: Sequence[str]) -> tuple[float, str]:
    """Most specific wins: workload > max over the batch's clusters > config > global."""
    if workload.timeout is not None:
        return workload.timeout, f"workload {workload.key}"
    overrides = [
        (info.timeout, f"cluster {info.name}")
        for info in (view.clusters.get(n) for n in batch)
        if info is not None and info.timeout is not None
    ]
    if overrides:
        return max(overrides, key=lambda item: item[0])
    if workload.config_timeout is not None:
        return workload.config_timeout, f"config {workload.config_name or '?'}"
    return view.settings.round_timeout, "global default"


def _plan_round(
    view: _View, state: DispatchState
) -> tuple[tuple[str, ...], tuple[str, ...], int, str]:
    """(tried before the round, its batch, cycle, note) for the round about to start."""
    cycle = max(state.cycle, 1)
    untried = _untried(view, state.tried)
    only_failed = state.advance and all(n in state.failed for n in untried)
    if untried and not only_failed:
        return state.tried, _next_batch(view, untried), cycle, ""
    others = [n for n in state.tried if view.usable(n)]
    if view.settings.mode == "cumulative" and untried and 0 < len(others) <= MAX_NOMINEES:
        note = "; only failed clusters left, giving the others one more round first"
        return state.tried, (), cycle, note
    note = f"; every active cluster tried, cycle {cycle + 1} starts over"
    return (), _next_batch(view, _untried(view, ())), cycle + 1, note


# --- decisions ------------------------------------------------------------------------------


def _start_round(
    now: float, workload: WorkloadView, view: _View, state: DispatchState, why: str
) -> Decision:
    """Begin the next round: the next batch, a new cycle, or (failover) a batch-less round."""
    tried, batch, cycle, note = _plan_round(view, state)
    new = replace(
        state,
        round=state.round + 1,
        round_start=_ms(now),
        cycle=cycle,
        tried=(*tried, *batch),
        batch=batch,
        advance=False,
    )
    timeout, source = _round_timeout(workload, view, batch)
    nominees = _desired(view, new)
    reason = (
        f"round {new.round}: {why}{note}; added {_described(batch, view)}; "
        f"nominated [{', '.join(nominees)}] ({view.settings.mode}); "
        f"next escalation in {_s(timeout)} ({source})"
    )
    return _decision(nominees, new, timeout, timeout, source, reason, workload, view, True)


def _hold(
    workload: WorkloadView,
    view: _View,
    state: DispatchState,
    timeout: float,
    source: str,
    wait: float,
    complete: bool = False,
) -> Decision:
    """Keep the round going (complete: keep every active cluster nominated)."""
    nominees = _desired(view, state)
    what = "every active cluster nominated, holding" if complete else "waiting"
    reason = (
        f"round {state.round}: {what}; nominated [{', '.join(nominees)}] "
        f"({view.settings.mode}); timeout {_s(timeout)} ({source}); look again in {_s(wait)}"
    )
    return _decision(nominees, state, wait, timeout, source, reason, workload, view, False)


def _no_active(view: _View, workload: WorkloadView, state: DispatchState) -> Decision:
    """Nothing to nominate: keep the round bookkeeping, clear nominees, look again soon."""
    if view.order:
        reason = f"no active cluster among [{', '.join(view.order)}]; nominating none"
    else:
        reason = f"config {workload.config_name or '?'} lists no cluster; nominating none"
    recheck = NO_ACTIVE_RECHECK
    return _decision([], state, recheck, 0.0, "none", reason, workload, view, False)


def _decision(
    nominees: list[str],
    state: DispatchState,
    requeue_after: float,
    timeout: float,
    source: str,
    reason: str,
    workload: WorkloadView,
    view: _View,
    new_round: bool,
) -> Decision:
    """Assemble a Decision, appending any ignored bad inputs to the reason."""
    problems = [*workload.problems]
    for name in view.order:
        info = view.clusters.get(name)
        problems += info.problems if info else [f"cluster {name}: no MultiKueueCluster"]
    if problems:
        reason += "; " + "; ".join(problems)
    return Decision(
        nominees=nominees,
        state=replace(state, nominees=tuple(nominees)),
        requeue_after=max(_ms(requeue_after), 0.0),
        reason=reason,
        new_round=new_round,
        timeout=timeout,
        timeout_source=source,
    )


# --- small helpers --------------------------------------------------------------------------


def _without(names: Sequence[str], name: str) -> tuple[str, ...]:
    return tuple(n for n in names if n != name)


def _ms(seconds: float) -> float:
    """Millisecond precision, so the in-memory state equals its persisted form."""
    return round(seconds, 3)


def _s(seconds: float) -> str:
    return f"{seconds:g}s"


def _described(batch: Sequence[str], view: _View) -> str:
    parts = []
    for name in batch:
        group = view.groups[name]
        parts.append(f"{name} ({'after failure' if group[0] else f'tier {group[1]}'})")
    return ", ".join(parts) or "nothing"


def _ago(now: float, state: DispatchState) -> str:
    if state.round == 0:
        return "never"
    return f"{_s(_ms(now - state.round_start))} ago"


def _cluster_line(name: str, view: _View, state: DispatchState) -> str:
    info = view.clusters.get(name)
    marks = [
        ("active" if info.active else "INACTIVE") if info else "NO MultiKueueCluster",
        f"tier {info.tier}" if info else "",
        f"timeout {_s(info.timeout)}" if info and info.timeout is not None else "",
        "failed here before" if name in state.failed else "",
        "tried" if name in state.tried else "",
        "NOMINATED" if name in state.nominees else "",
    ]
    return f"  {name}: " + ", ".join(m for m in marks if m)
