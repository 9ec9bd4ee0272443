"""The faults: each one rule of the reference dispatcher, broken on purpose.

A fault is a *planner*: a drop-in for ``dispatchers.reference.controller.plan`` (same
arguments, returns a ``Plan``). The reference controller calls it instead of ``plan`` and
writes what it decides, so a faulty dispatcher keeps the reference's reads, guarded writes,
conflict handling and leader election, and differs from it in exactly one rule. That is what
makes a surviving fault meaningful: the check that should have caught it has a hole.

Most faults only change the inputs of ``plan`` (settings, a copy of the snapshot or of the
workload) or post-process its decision; a few keep per-process memory (which is the point of
``resets-on-restart`` and ``ignores-config-change``). Time is always the ``now`` argument, or
an injected clock, so every fault is unit-tested without a cluster.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from dispatchers.faulty.controllers import (
    DiesUncaught,
    DropsRefusedWrites,
    IgnoresLeader,
    LeavesWorkloads,
    StaleWatch,
    TrimsWhenRefused,
)
from dispatchers.reference import model, writes
from dispatchers.reference.controller import Controller, Plan, Snapshot, plan
from dispatchers.reference.policy import MAX_NOMINEES, Decision, DispatchState, StateError
from dispatchers.reference.settings import MAX_STEP, Settings, parse_duration

Obj = Mapping[str, Any]
Planner = Callable[..., Plan]  # plan(now, workload, snap, settings, last_cluster=None)

UNUSED = "faulty.mkdc.example/unused"  # a label/annotation key no object carries
NEVER = 10 * 365 * 24 * 3600.0  # "never" escalate: ten years, in seconds
OUTSIDE = "faulty-outside-config"  # nominated when no real cluster is outside the config
MISSING = "faulty-no-such-cluster"  # padding names: no MultiKueueCluster has them
LATER = 3600.0  # requeue for decisions that need no timer


# --------------------------------------------------------------------------- helpers


def _with_objects(snap: Snapshot, plural: str, change: Callable[[Obj], Obj]) -> Snapshot:
    """A shallow copy of ``snap`` whose ``plural`` objects went through ``change``."""
    out = dict(snap)
    out[plural] = {key: change(obj) for key, obj in snap[plural].items()}
    return out


def _annotated(obj: Obj, key: str, value: str | None) -> dict[str, Any]:
    """A copy of ``obj`` with annotation ``key`` set to ``value`` (None: removed)."""
    out = copy.deepcopy(dict(obj))
    meta = out.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    if value is None:
        annotations.pop(key, None)
    else:
        annotations[key] = value
    meta["annotations"] = annotations
    return out


def _scaled(obj: Obj, key: str, factor: float) -> Obj:
    """``obj`` with its duration annotation ``key`` divided by ``factor`` (if it parses)."""
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    if raw is None:
        return obj
    try:
        seconds = parse_duration(raw)
    except ValueError:
        return obj
    return _annotated(obj, key, f"{seconds / factor:g}s")


def _without_condition(obj: Obj, kind: str) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    status = out.setdefault("status", {})
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != kind]
    return out


def _active(obj: Obj) -> dict[str, Any]:
    """A MultiKueueCluster copy that says Active, whatever it really says."""
    out = _without_condition(obj, "Active")
    out["status"]["conditions"].append({"type": "Active", "status": "True", "reason": "Faulty"})
    return out


def _state_of(workload: Obj, settings: Settings) -> DispatchState | None:
    raw = ((workload.get("metadata") or {}).get("annotations") or {}).get(settings.state_annotation)
    if raw is None:
        return DispatchState()
    try:
        return DispatchState.from_json(raw)
    except StateError:
        return None


def _decision(nominees: list[str], state: DispatchState, requeue: float, why: str) -> Decision:
    return Decision(nominees=nominees, state=state, requeue_after=requeue, reason=f"FAULT: {why}")


# --------------------------------------------------------------------------- faults


def outside_config() -> Planner:
    """CORE-01: also nominates a MultiKueueCluster that is not in the workload's config (as
    a dispatcher that lists every MultiKueueCluster instead of reading the config would)."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        p = plan(now, wl, snap, s, last)
        if p.decision is None or not p.decision.nominees:
            return p
        extra = next((n for n in sorted(snap["multikueueclusters"]) if n not in p.order), OUTSIDE)
        return replace(p, decision=replace(p.decision, nominees=[*p.decision.nominees, extra]))

    return planner


def config_blind() -> Planner:
    """CORE-01: never reads the workload's MultiKueueConfig: tries every MultiKueueCluster
    on the manager, the first Active one by name, then the next each round (tiers ignored),
    as a dispatcher that lists clusters instead of reading the config would."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        route = model.route_of(
            wl, snap["localqueues"], snap["clusterqueues"], snap["admissionchecks"]
        )
        config = snap["multikueueconfigs"].get(route.config) if route else None
        if route is None or config is None:
            return plan(now, wl, snap, s, last)
        every = copy.deepcopy(dict(config))
        every.setdefault("spec", {})["clusters"] = sorted(snap["multikueueclusters"])
        configs = {**snap["multikueueconfigs"], route.config: every}
        blind = replace(s, tier_label=UNUSED)
        return plan(now, wl, {**snap, "multikueueconfigs": configs}, blind, last)

    return planner


def duplicate_names() -> Planner:
    """CORE-02: writes the first nominee twice (the API's list is atomic: it accepts that)."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        p = plan(now, wl, snap, s, last)
        if p.decision is None or not p.decision.nominees:
            return p
        doubled = [*p.decision.nominees, p.decision.nominees[0]]
        return replace(p, decision=replace(p.decision, nominees=doubled))

    return planner


def too_many_names() -> Planner:
    """CORE-02: no cap on the list: a workload's first nomination is the reference's
    nominees padded to 21 names (the API allows 20) with clusters that do not exist, as a
    dispatcher nominating every cluster of a config of more than 20 would. The API refuses
    that write (422); after the refusal it nominates as the reference does."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        p = plan(now, wl, snap, s, last)
        if p.decision is None or not p.decision.nominees:
            return p
        real = p.decision.nominees
        padding = [f"{MISSING}-{i}" for i in range(1, MAX_NOMINEES + 2 - len(real))]
        return replace(p, decision=replace(p.decision, nominees=[*real, *padding]))

    return planner


def writes_after_placement(delay: float = 2.0) -> Planner:
    """CORE-03: a stale round timer: ``delay`` seconds after it sees the workload placed,
    it writes the last nominees again, once (past the check's observation skew)."""
    seen: dict[tuple[str, str], float] = {}
    done: set[tuple[str, str]] = set()

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        p = plan(now, wl, snap, s, last)
        placed = str((wl.get("status") or {}).get("clusterName") or "")
        mark = (p.key, placed)
        state = _state_of(wl, s)
        if not placed or p.route is None or mark in done or state is None:
            return p
        first = seen.setdefault(mark, now)
        if now < first + delay:
            wait = _decision(writes.nominees_of(wl), state, first + delay - now, "placed; wait")
            return replace(p, not_pending=None, decision=wait)
        done.add(mark)
        stale = list(state.nominees) or [placed]
        why = f"round timer fired after placement on {placed}; re-writing {stale}"
        return replace(p, not_pending=None, decision=_decision(stale, state, LATER, why))

    return planner


def ignores_eviction() -> Planner:
    """CORE-06: a workload that was ever evicted (an Evicted condition, any status) is
    treated as done and never dispatched again."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        p = plan(now, wl, snap, s, last)
        if p.decision is not None and model.condition(wl, "Evicted") is not None:
            return replace(p, not_pending="FAULT: evicted once, never again", decision=None)
        return p

    return planner


def _as_pending(wl: Obj, check: str) -> dict[str, Any]:
    """The workload as a view that missed its eviction sees it: not Evicted, its quota
    reserved, its MultiKueue check Pending."""
    out = _without_condition(_without_condition(wl, "Evicted"), "QuotaReserved")
    status = out["status"]
    status["conditions"].append({"type": "QuotaReserved", "status": "True", "reason": "Faulty"})
    status["admissionChecks"] = [
        {**s, "state": "Pending"} if s.get("name") == check else s
        for s in status.get("admissionChecks") or []
    ] or [{"name": check, "state": "Pending"}]
    return out


def nominates_while_evicted() -> Planner:
    """CORE-10: plans a workload that is evicted, holds no quota or whose MultiKueue check
    is not Pending as if it were still pending (the stale view of kueue#11062, always);
    placed, finished or deleted ones it still leaves alone."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        p = plan(now, wl, snap, s, last)
        status = wl.get("status") or {}
        if p.not_pending is None or p.route is None or status.get("clusterName"):
            return p
        if model.condition_true(wl, "Finished") or (wl.get("metadata") or {}).get(
            "deletionTimestamp"
        ):
            return p
        return plan(now, _as_pending(wl, p.route.check), snap, s, last)

    return planner


def ignores_config_change() -> Planner:
    """CORE-07: reads each MultiKueueConfig's cluster list once, the first time a workload
    of it is planned, and never again."""
    cache: dict[str, list[str]] = {}

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        route = model.route_of(
            wl, snap["localqueues"], snap["clusterqueues"], snap["admissionchecks"]
        )
        config = snap["multikueueconfigs"].get(route.config) if route else None
        if route is None or config is None:
            return plan(now, wl, snap, s, last)
        current = list((config.get("spec") or {}).get("clusters") or [])
        clusters = cache.setdefault(route.config, current)
        frozen = copy.deepcopy(dict(config))
        frozen.setdefault("spec", {})["clusters"] = list(clusters)
        configs = {**snap["multikueueconfigs"], route.config: frozen}
        return plan(now, wl, {**snap, "multikueueconfigs": configs}, s, last)

    return planner


def foreign_writer() -> Planner:
    """CORE-08: forgets to check for the MultiKueue admission check: a workload of a plain
    ClusterQueue gets the dispatch-state annotation written (once)."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        p = plan(now, wl, snap, s, last)
        if p.route is not None:
            return p
        decision = _decision(writes.nominees_of(wl), DispatchState(), LATER, "no route, wrote")
        return replace(p, not_pending=None, decision=decision)

    return planner


def stalls_under_burst(
    delay: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
) -> Planner:
    """CORE-09: a slow synchronous call (``delay`` seconds, one at a time) before a
    workload's first dispatch: invisible with a few workloads, a stall under a burst (at
    5 s, the 100th waits over 8 minutes; at 2 s, the burst's creation, itself a minute or
    more on a loaded machine, hid most of the stall)."""
    lock, seen = threading.Lock(), set[str]()

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        p = plan(now, wl, snap, s, last)
        if p.decision is None or p.key in seen:
            return p
        with lock:
            sleep(delay)
            seen.add(p.key)
        return plan(clock(), wl, snap, s, last)

    return planner


def big_step() -> Planner:
    """EXT-01..04: nominates every usable cluster in the first round (step 20) while the
    profile claims stepSize 1."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        return plan(now, wl, snap, replace(s, step=MAX_STEP), last)

    return planner


def never_escalates() -> Planner:
    """EXT-05 (and CORE-04): every timeout, global or annotated, is taken as "never"; only
    a failure moves the workload on."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        forever = replace(
            s,
            round_timeout=NEVER,
            cluster_timeout_annotation=UNUSED,
            config_timeout_annotation=UNUSED,
            workload_timeout_annotation=UNUSED,
        )
        return plan(now, wl, snap, forever, last)

    return planner


def escalates_early(factor: float = 4.0) -> Planner:
    """EXT-06 (and EXT-08): every timeout, global or annotated, divided by ``factor``."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        short = replace(s, round_timeout=s.round_timeout / factor)
        snap = _with_objects(
            snap, "multikueueclusters", lambda o: _scaled(o, s.cluster_timeout_annotation, factor)
        )
        snap = _with_objects(
            snap, "multikueueconfigs", lambda o: _scaled(o, s.config_timeout_annotation, factor)
        )
        return plan(now, _scaled(wl, s.workload_timeout_annotation, factor), snap, short, last)

    return planner


def ignores_order() -> Planner:
    """EXT-07: tries the config's clusters last first, and ignores tiers."""

    def reverse(config: Obj) -> Obj:
        out = copy.deepcopy(dict(config))
        spec = out.setdefault("spec", {})
        spec["clusters"] = list(reversed(spec.get("clusters") or []))
        return out

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        snap = _with_objects(snap, "multikueueconfigs", reverse)
        return plan(now, wl, snap, replace(s, tier_label=UNUSED), last)

    return planner


def ignores_cluster_timeouts() -> Planner:
    """EXT-08: reads no per-cluster timeout; every round lasts the global timeout."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        return plan(now, wl, snap, replace(s, cluster_timeout_annotation=UNUSED), last)

    return planner


def retries_failed_first() -> Planner:
    """EXT-09: never records a failure (the Evicted condition is not read), so the cluster
    that just failed is nominated again, alone, until its round times out."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        return plan(now, _without_condition(wl, "Evicted"), snap, s, None)

    return planner


def nominates_inactive() -> Planner:
    """EXT-10: takes every MultiKueueCluster for Active."""

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        return plan(now, wl, _with_objects(snap, "multikueueclusters", _active), s, last)

    return planner


def resets_on_restart() -> Planner:
    """EXT-11: keeps the dispatch state in process memory only (it never reads the
    annotation, nor the nominations' write time managedFields give, from which the
    reference re-derives its rounds), so a restart starts every round afresh."""
    memory: dict[str, str] = {}

    def planner(now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None) -> Plan:
        key = model.key_of(wl)
        forgetful = _annotated(wl, s.state_annotation, memory.get(key))
        forgetful["metadata"].pop("managedFields", None)
        p = plan(now, forgetful, snap, s, last)
        if p.decision is not None:
            memory[key] = p.decision.state.to_json()
        return p

    return planner


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Fault:
    """One faulty dispatcher: its name, the promise it breaks, and how to build it."""

    name: str
    breaks: str
    planner: Callable[[], Planner] = lambda: plan
    controller: type[Controller] = Controller
    replicas: int = 1  # 2: runs as reference-ha does
    shared: bool = False  # judged with clusterScope shared (scenarios taking turns)


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault("outside-config", "nominates a cluster outside the config", outside_config),
        Fault("config-blind", "tries every cluster by name, never reads the config",
              config_blind),
        Fault("duplicate-names", "nominates the same cluster twice", duplicate_names),
        Fault("too-many-names", "nominates more names than the API allows", too_many_names,
              controller=TrimsWhenRefused),
        Fault("writes-after-placement", "writes nominations after placement",
              writes_after_placement),
        Fault("ignores-eviction", "never re-dispatches an evicted workload", ignores_eviction),
        Fault("ignores-config-change", "caches the config's clusters", ignores_config_change),
        Fault("nominates-while-evicted", "nominates evicted workloads and ones without quota",
              nominates_while_evicted),
        Fault("foreign-writer", "writes workloads without a MultiKueue check", foreign_writer),
        Fault("stalls-under-burst", "one slow call per new workload, serialised",
              stalls_under_burst),
        Fault("big-step", "nominates every cluster at once, claiming step 1", big_step),
        Fault("never-escalates", "never escalates", never_escalates),
        Fault("escalates-early", "escalates at a quarter of the timeout", escalates_early),
        Fault("ignores-order", "tries clusters in reverse order, no tiers", ignores_order),
        Fault("ignores-cluster-timeouts", "ignores per-cluster timeouts",
              ignores_cluster_timeouts),
        Fault("retries-failed-first", "re-nominates the cluster that just failed",
              retries_failed_first),
        Fault("nominates-inactive", "nominates inactive clusters", nominates_inactive),
        Fault("resets-on-restart", "keeps round state in memory only", resets_on_restart),
        Fault("both-replicas-write", "two replicas, both write", controller=IgnoresLeader,
              replicas=2),
        Fault("stale-watch", "never re-watches Workloads after a dropped connection",
              controller=StaleWatch),
        Fault("drops-refused-writes", "gives up on a workload whose write the server refused",
              controller=DropsRefusedWrites),
        Fault("leaves-workloads", "keeps every workload it nominates with a finalizer",
              controller=LeavesWorkloads, shared=True),
        Fault("dies-uncaught", "dies on an uncaught exception at its first escalation",
              controller=DiesUncaught),
    )
}  # fmt: skip
