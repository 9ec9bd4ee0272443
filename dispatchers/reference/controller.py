"""The reconcile loop: cached objects in, one decision per workload, guarded writes out.

A decision's state is persisted only where the status cannot tell it: with our own field
manager, the nominations and the time managedFields give their write are enough to replay
``decide`` from the last stored state to the round that wrote them (``rounds_written``).
So a first dispatch and a plain escalation are one Workload write (the nominations); the
DispatchState annotation is written only for what a replay cannot find (a failure, a new
cycle, a changed config), and then before the nominations it implies, so a crash between
the two re-derives the same nominees from the state instead of starting a new round. Every
write carries the resourceVersion it was computed from; a 409 means "re-read and decide
again", never "force". Under a burst of pending workloads the manager's apiserver is the
bottleneck and a Workload write its dearest request (CEL rules, admission policy, managed
fields): halving the writes of an escalation leaves that much more for first nominations.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubernetes.client.rest import ApiException

from dispatchers.reference import model, policy, writes
from dispatchers.reference.events import EventSink
from dispatchers.reference.kube import Forbidden, ForbiddenGrace, Informer, Kube
from dispatchers.reference.leader import LeaderElector
from dispatchers.reference.metrics import Metrics
from dispatchers.reference.settings import Settings
from dispatchers.reference.workqueue import Slots, WorkQueue

log = logging.getLogger("mkdc.reference")
PLURALS = (
    "workloads",
    "localqueues",
    "clusterqueues",
    "admissionchecks",
    "multikueueconfigs",
    "multikueueclusters",
)
MAX_CONFLICTS = 5
# A failed reconcile (the apiserver restarting, Kueue's webhook down) is retried with
# backoff up to this: an escalation due during an outage lands within 2 s of its end
# (a reset round would land a whole timeout later). The client's QPS limit bounds what
# many failing workloads send meanwhile.
RETRY_MAX_SECONDS = 2.0
REPLAY_STEP = 1e9  # seconds: past any round's timeout, so each replayed decide escalates
Snapshot = Mapping[str, Mapping[str, Mapping[str, Any]]]  # plural -> key -> object


@dataclass(frozen=True)
class Plan:
    """Everything known about one workload at one instant, and what to do."""

    key: str
    route: model.Route | None
    not_pending: str | None  # why the workload is left alone; None: dispatch it
    state: policy.DispatchState = policy.DispatchState()
    state_problem: str = ""
    failure: model.Failure | None = None  # a new failure, recorded into ``state``
    decision: policy.Decision | None = None
    clusters: tuple[policy.ClusterInfo, ...] = ()
    order: tuple[str, ...] = ()
    view: policy.WorkloadView | None = None


def plan(
    now: float,
    workload: Mapping[str, Any],
    snap: Snapshot,
    settings: Settings,
    last_cluster: str | None = None,
) -> Plan:
    """Pure: the decision for ``workload`` given cached objects (shared with ``explain``)."""
    key = model.key_of(workload)
    route = model.route_of(
        workload, snap["localqueues"], snap["clusterqueues"], snap["admissionchecks"]
    )
    why = model.not_pending_because(workload, route)
    if why is not None or route is None:
        return Plan(key, route, why)
    meta = workload.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    config = snap["multikueueconfigs"].get(route.config) or {}
    order = tuple(str(n) for n in (config.get("spec") or {}).get("clusters") or [])
    clusters = tuple(
        policy.ClusterInfo.from_metadata(
            name,
            model.cluster_active(obj),
            (obj.get("metadata") or {}).get("labels"),
            (obj.get("metadata") or {}).get("annotations"),
            settings,
        )
        for name in order
        if (obj := snap["multikueueclusters"].get(name)) is not None
    )
    view = policy.WorkloadView.from_metadata(
        key, annotations, route.config, (config.get("metadata") or {}).get("annotations"), settings
    )
    state, problem = policy.DispatchState(), ""
    if settings.state_annotation in annotations:
        try:
            state = policy.DispatchState.from_json(annotations[settings.state_annotation])
        except policy.StateError as err:
            problem = f"{err}; starting afresh"
    if status_first(settings):
        at = writes.status_written_at(workload, settings.field_manager)
        written = writes.nominees_of(workload)
        state = rounds_written(state, written, at, view, clusters, order, settings) or state
    failure = model.failure_of(workload, last_cluster)
    if failure is not None and failure.mark != state.failure_mark:
        state = replace(
            policy.record_failure(state, failure.cluster, now), failure_mark=failure.mark
        )
    else:
        failure = None
    decision = policy.decide(now, view, clusters, order, settings, state)
    return Plan(key, route, None, state, problem, failure, decision, clusters, order, view)


def status_first(settings: Settings) -> bool:
    """Whether the status can stand for the state (see ``rounds_written``): only where our
    own field manager writes the nominations, so managedFields record when. Kueue's
    ``kueue-admission`` manager is shared with Kueue."""
    return settings.write_mode != writes.KUEUE_ADMISSION


def rounds_written(
    stored: policy.DispatchState,
    written: list[str],
    at: float | None,
    view: policy.WorkloadView,
    clusters: tuple[policy.ClusterInfo, ...],
    order: tuple[str, ...],
    settings: Settings,
) -> policy.DispatchState | None:
    """The state whose nominations are ``written`` (by our field manager, at ``at`` as
    managedFields give it), replayed from the ``stored`` annotation's state: the rounds
    that followed it, as ``decide`` starts them, until one nominates ``written``; the last
    one started at ``at`` rounded up to the next second, so a round resumed from it never
    ends early. None when no round of the stored state's cycle nominates ``written`` (a
    write that came before the stored state, another writer, a changed config): the
    stored state then stands.

    This is what lets a round's state go unwritten when ``decide`` re-derives it from the
    status alone: a first dispatch and each escalation cost one Workload write, not two."""
    if written == list(stored.nominees):
        return stored
    if not written or at is None:
        return None
    state, now, cycle = stored, stored.round_start, max(stored.cycle, 1)
    for _ in range(len(order) + 2):
        now += REPLAY_STEP
        d = policy.decide(now, view, clusters, order, settings, state)
        if not d.new_round or d.state.cycle != cycle:
            return None
        state = d.state
        if d.nominees == written:
            return replace(state, round_start=float(int(at) + 1))
    return None


def state_to_store(
    stored: str | None, p: Plan, d: policy.Decision, now: float, s: Settings
) -> bool:
    """Whether ``d``'s state must be written to the annotation (``stored``: its text now):
    unless it is stored already, or a replay of ``decide`` from the stored state to the
    nominations ``d`` writes finds it again (``rounds_written``)."""
    if stored == d.state.to_json():
        return False
    if not status_first(s) or p.view is None:
        return True
    try:
        base = policy.DispatchState.from_json(stored) if stored else policy.DispatchState()
    except policy.StateError:
        return True  # written afresh, so nobody reads a broken state again
    found = rounds_written(base, d.nominees, now, p.view, p.clusters, p.order, s)
    return found is None or replace(found, round_start=0.0) != replace(d.state, round_start=0.0)


class Controller:
    """Informers feed a work queue; workers reconcile one workload key at a time."""

    def __init__(
        self,
        settings: Settings,
        kube: Kube,
        metrics: Metrics,
        elector: LeaderElector | None,
        stop: threading.Event,
        clock: Callable[[], float] = time.time,
        planner: Callable[..., Plan] = plan,
    ) -> None:
        self.settings, self.kube, self.metrics = settings, kube, metrics
        self.elector, self.stop, self.clock = elector, stop, clock
        self.planner = planner  # ``plan`` or a drop-in with its signature (faulty dispatchers)
        self.queue = WorkQueue(max_delay=RETRY_MAX_SECONDS)
        self.escalation_slots = Slots(settings.escalation_writes, self.queue.add)
        self.fatal: str | None = None
        # a restarted apiserver answers 403 for a while: see ForbiddenGrace
        self.write_grace, self.lease_grace = ForbiddenGrace(), ForbiddenGrace()
        self.events = EventSink(
            lambda wl, reason, msg: kube.event(wl, reason, msg, "mkdc-reference-dispatcher"),
            self._on_fatal,
            on_drop=metrics.events_dropped.inc,
        )
        self.informers = {
            plural: Informer(
                kube,
                plural,
                self._on_workload if plural == "workloads" else self._on_other,
                self._on_fatal,
                stop,
            )
            for plural in PLURALS
        }
        self.last_cluster: dict[str, str] = {}  # placement seen, for failure attribution
        # states decided and left unwritten because the status implies them (see
        # ``rounds_written``), with the annotation they went beside: decisions read them as
        # if annotated while that annotation stands, with their exact round start
        # (managedFields give whole seconds); a restart re-derives them
        self.unwritten: dict[str, tuple[str | None, policy.DispatchState]] = {}
        # what our last write of a workload returned, and the resourceVersions our writes
        # superseded: until the watch brings it, decisions read it instead of the cached
        # copy, whose next write would start from a version already gone (a certain 409)
        self.own_writes: dict[str, tuple[frozenset[str], Mapping[str, Any]]] = {}
        self._inputs: dict[str, str] = {}  # kind/key -> what decisions read of that object
        self._inputs_lock = threading.Lock()
        self._leading = False

    # --- wiring -------------------------------------------------------------------------

    def start(self) -> list[threading.Thread]:
        threads = [
            threading.Thread(target=inf.run, name=f"watch-{p}", daemon=True)
            for p, inf in self.informers.items()
        ]
        kept = self.settings.kept_for_first_dispatch  # for workloads awaiting a first nominee
        threads += [
            threading.Thread(target=self._work, args=(i < kept,), name=f"worker-{i}", daemon=True)
            for i in range(self.settings.workers)
        ]
        threads.append(
            threading.Thread(target=self.events.run, args=(self.stop,), name="events", daemon=True)
        )
        if self.elector is not None:
            threads.append(threading.Thread(target=self._elect, name="leader", daemon=True))
        for thread in threads:
            thread.start()
        return threads

    def _on_fatal(self, err: Exception) -> None:
        if self.fatal is None:
            self.fatal = str(err)
        self.stop.set()
        self.queue.shutdown()

    def _elect(self) -> None:
        assert self.elector is not None
        while not self.stop.is_set():
            try:
                leading = self.elector.tick()
                self.lease_grace.allowed()
            except ApiException as err:
                if err.status == 403 and self.lease_grace.fatal():
                    lease = f"leases.coordination.k8s.io {self.settings.lease_name}"
                    self._on_fatal(_lease_forbidden(err, lease, self.settings.lease_namespace))
                    return
                log.warning("lease request failed", extra={"error": str(err)[:200]})
                leading = self.elector.is_leader
            except Exception as err:
                log.warning("lease request failed", extra={"error": str(err)[:200]})
                leading = self.elector.is_leader
            if leading != self._leading:
                self._leading = leading
                self.metrics.leader.set(1 if leading else 0)
                log.info("leadership changed", extra={"leader": leading})
                if leading:
                    self._enqueue_all()
            self.stop.wait(self.elector.retry_period)
        self.elector.release()

    def may_write(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def _on_workload(self, kind: str, obj: dict[str, Any]) -> None:
        key = model.key_of(obj)
        if kind == "DELETED":
            self.last_cluster.pop(key, None)
            self.unwritten.pop(key, None)
            self.own_writes.pop(key, None)
            return
        placed = (obj.get("status") or {}).get("clusterName")
        if placed and self.last_cluster.get(key) != placed:
            if key in self.last_cluster or kind != "SYNC":
                self.metrics.placement.observe(_age(obj, self.clock()))
            self.last_cluster[key] = str(placed)
        self.queue.add(key, urgent=_awaits_first_nominee(obj))

    def _on_other(self, kind: str, obj: dict[str, Any]) -> None:
        """A queue, check, config or cluster changed: look at all workloads again, but only
        when something a decision reads changed. Kueue rewrites ClusterQueue and LocalQueue
        status (usage, pending counts) at every admission; re-reading every pending
        workload for each of those made a burst quadratic."""
        key = f"{obj.get('kind')}/{model.key_of(obj)}"
        seen = _decision_inputs(obj) if kind != "DELETED" else None
        with self._inputs_lock:
            before = self._inputs.get(key)
            if seen is None:
                self._inputs.pop(key, None)
            else:
                self._inputs[key] = seen
        if kind != "SYNC" and (seen is None or seen != before):
            self._enqueue_all()

    def _enqueue_all(self) -> None:
        for key, obj in self.informers["workloads"].snapshot().items():
            if model.condition_true(obj, "QuotaReserved") and not (obj.get("status") or {}).get(
                "clusterName"
            ):
                self.queue.add(key)

    def snapshot(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Cached objects a decision reads (not the workloads: each decision reads its own)."""
        return {p: inf.snapshot() for p, inf in self.informers.items() if p != "workloads"}

    # --- the loop -----------------------------------------------------------------------

    def _work(self, urgent_only: bool = False) -> None:
        for inf in self.informers.values():
            while not inf.synced.wait(0.5):
                if self.stop.is_set():
                    return
        while not self.stop.is_set():
            key = self.queue.get(timeout=1.0, urgent_only=urgent_only)
            if key is None:
                continue
            try:
                delay = self.reconcile(key)
                self.write_grace.allowed()
                self.queue.forget(key)
                if delay is not None:
                    self.queue.add_after(key, delay)
            except Forbidden as err:
                if self.write_grace.fatal():
                    self._on_fatal(err)
                else:
                    log.warning("write refused (403), retrying", extra={"workload": key})
                    self.queue.rate_limited(key)
            except Exception as err:
                wait = self.queue.rate_limited(key)
                log.warning(
                    "reconcile failed",
                    extra={"workload": key, "error": str(err)[:300], "retry": wait},
                )
            finally:
                self.queue.done(key)

    def reconcile(self, key: str) -> float | None:
        """Dispatch one workload; returns when to look again (None: only on change)."""
        try:
            return self._reconcile_key(key)
        finally:
            self.escalation_slots.settle(key)

    def _reconcile_key(self, key: str) -> float | None:
        queued = self.queue.waited(key)
        self.kube.take_timings()  # from here on: this reconcile's requests, for the log
        workload = self._newest(key, self.informers["workloads"].get(key))
        for _ in range(MAX_CONFLICTS):
            if workload is None or not self.may_write():
                return None
            try:
                return self._reconcile(workload, queued)
            except ApiException as err:
                if err.status != 409:
                    raise
                self.metrics.conflicts.inc()
                ns, name = key.split("/", 1)
                workload = self.kube.get_workload(ns, name)
        raise RuntimeError(f"{MAX_CONFLICTS} write conflicts in a row")

    def _reconcile(self, workload: Mapping[str, Any], queued: float = 0.0) -> float | None:
        """Decide, and write what the decision changes. An escalation is written only
        holding an escalation slot; with none free the workload is parked, queued again
        when one frees, and then decided anew (its round starts when it is written)."""
        now = self.clock()
        snap = self.snapshot()
        key = model.key_of(workload)
        seen = self._with_unwritten_state(key, workload)
        p = self.planner(now, seen, snap, self.settings, self.last_cluster.get(key))
        if p.not_pending is not None or p.decision is None:
            log.debug("skipped", extra={"workload": p.key, "why": p.not_pending})
            return None
        before = writes.nominees_of(workload)
        if not adds_copies(before, p.decision.nominees):
            return self._write(p, p.decision, workload, before, now, queued)
        slot_wait = self.escalation_slots.take(key)
        if slot_wait is None:
            return None
        try:
            self.metrics.escalation_wait.observe(slot_wait)
            return self._write(p, p.decision, workload, before, now, queued, slot_wait)
        finally:
            self.escalation_slots.release()

    def _write(
        self,
        p: Plan,
        d: policy.Decision,
        workload: Mapping[str, Any],
        before: list[str],
        now: float,
        queued: float,
        slot_wait: float | None = None,
    ) -> float | None:
        """The writes of decision ``d`` (from ``before``, the nominees the workload shows),
        in order, its log line and its Event."""
        key = model.key_of(workload)
        if p.state_problem:
            log.warning("bad dispatch state", extra={"workload": p.key, "error": p.state_problem})
        if p.failure is not None:
            self.metrics.failures.inc()
            log.info("failure recorded", extra={"workload": p.key, "why": p.failure.why})
        meta = workload["metadata"]
        ns, name = meta["namespace"], meta["name"]
        current = workload
        text = d.state.to_json()
        stored = (meta.get("annotations") or {}).get(self.settings.state_annotation)
        # a round held on: its state was found implied when it was left unwritten
        known = self.unwritten.get(key) == (stored, d.state)
        annotate = not known and state_to_store(stored, p, d, now, self.settings)
        # The state goes first, so a crash between the writes re-derives the same nominees;
        # a first dispatch's state is always implied by its status (see ``rounds_written``).
        if annotate:
            body = writes.annotation_write(current, self.settings.state_annotation, text)
            written = self.kube.patch_workload(ns, name, body, self.settings.field_manager)
            current = self._wrote(key, current, written)
        if before != d.nominees:
            ctype, body, params = writes.status_write(
                self.settings.write_mode, current, d.nominees, self.settings.field_manager
            )
            written = self.kube.patch_workload_status(ns, name, ctype, body, params)
            current = self._wrote(key, current, written)
            self.metrics.nominations.labels(self.settings.write_mode).inc()
            if not before and d.nominees and d.state.round == 1:
                self.metrics.first_nomination.observe(_age(workload, now))
        if annotate or stored == text:
            self.unwritten.pop(key, None)
        else:
            self.unwritten[key] = (stored, d.state)
        if d.new_round:
            self.metrics.rounds.inc()
        changed = before != d.nominees or d.new_round or p.failure is not None
        timings = {"queued_s": round(queued, 4), **self.kube.take_timings()}
        if slot_wait is not None:
            timings["slot_wait_s"] = round(slot_wait, 4)
        log.log(
            logging.INFO if changed else logging.DEBUG,
            "decision",
            extra={
                "workload": p.key,
                "round": d.state.round,
                "nominees": d.nominees,
                "changed": before != d.nominees,
                "requeue_after": d.requeue_after,
                "reason": d.reason,
                **timings,
            },
        )
        if changed:
            self.events.emit(current, "Failover" if p.failure else "Nominated", d.reason)
        return d.requeue_after

    def _wrote(
        self, key: str, base: Mapping[str, Any], written: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        """Remember what a write from ``base`` returned (see ``_newest``); returns it."""
        superseded, _ = self.own_writes.get(key, (frozenset(), written))
        self.own_writes[key] = (superseded | {model.resource_version(base)}, written)
        return written

    def _newest(self, key: str, cached: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The cached copy, or what our last write returned while the cache still holds a
        version that write superseded. In a burst the watch brought our first write (the
        state annotation) while the second was on its way, and the reconcile it queued
        wrote the same nominees again from that copy: refused with 409 and read again,
        on 234 of 1010 writes."""
        mine = self.own_writes.get(key)
        if cached is None or mine is None:
            return cached
        superseded, written = mine
        if model.resource_version(cached) in superseded:
            return written
        self.own_writes.pop(key, None)  # the cache has it, or a newer version: it decides
        return cached

    def _with_unwritten_state(self, key: str, workload: Mapping[str, Any]) -> Mapping[str, Any]:
        """``workload`` as a decision reads it: with the state we left unwritten, unless
        the annotation changed since (another replica, leading meanwhile, wrote it)."""
        stored, state = self.unwritten.get(key, (None, None))
        annotations = (workload.get("metadata") or {}).get("annotations") or {}
        if state is None or annotations.get(self.settings.state_annotation) != stored:
            return workload
        meta = {**workload["metadata"], "annotations": dict(annotations)}
        meta["annotations"][self.settings.state_annotation] = state.to_json()
        return {**workload, "metadata": meta}


def _decision_inputs(obj: Mapping[str, Any]) -> str:
    """What ``plan`` reads of a queue, check, config or cluster (labels, annotations,
    spec, the Active condition), as one comparable string; status counters are left out."""
    meta = obj.get("metadata") or {}
    active = model.condition(obj, "Active") or {}
    return json.dumps(
        [meta.get("labels"), meta.get("annotations"), obj.get("spec"), active.get("status")],
        sort_keys=True,
        default=str,
    )


def adds_copies(before: Sequence[str], after: Sequence[str]) -> bool:
    """Whether a write from ``before`` to ``after`` nominates a cluster more for a workload
    that already has nominees: one more remote copy for Kueue to make (an escalation or a
    failover), not its first."""
    return bool(before) and not set(after) <= set(before)


def _awaits_first_nominee(obj: Mapping[str, Any]) -> bool:
    """Quota reserved, not placed, nobody nominated: the workload every burst should favour."""
    status = obj.get("status") or {}
    return (
        not status.get("clusterName")
        and not status.get("nominatedClusterNames")
        and model.condition_true(obj, "QuotaReserved")
    )


def _age(obj: Mapping[str, Any], now: float) -> float:
    import calendar

    created = (obj.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return 0.0
    stamp = calendar.timegm(time.strptime(str(created), "%Y-%m-%dT%H:%M:%SZ"))
    return max(now - stamp, 0.0)


def _lease_forbidden(err: ApiException, resource: str, namespace: str) -> Forbidden:
    from dispatchers.reference.kube import forbidden

    return forbidden(err, "get/create/update", resource, namespace)
