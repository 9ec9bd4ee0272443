"""The reference dispatcher's reconcile: what it writes, in which order, and when it does not."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.rest import ApiException

from dispatchers.reference.controller import (
    Controller,
    _awaits_first_nominee,
    adds_copies,
    plan,
)
from dispatchers.reference.events import EventSink
from dispatchers.reference.kube import Forbidden
from dispatchers.reference.metrics import Metrics
from dispatchers.reference.policy import DispatchState
from dispatchers.reference.settings import Settings
from tests.test_reference_fixtures import cond, snapshot, workload

NOW = 1_800_000_000.0
SETTINGS = Settings(round_timeout=10.0)
STATE = SETTINGS.state_annotation


def written_by(manager: str, at: float) -> dict[str, Any]:
    """The managedFields entry a status write of nominations leaves (whole seconds)."""
    stamp = datetime.fromtimestamp(int(at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "manager": manager,
        "operation": "Apply",
        "subresource": "status",
        "time": stamp,
        "fieldsV1": {"f:status": {"f:nominatedClusterNames": {}}},
    }


class FakeKube:
    """Records writes; bumps resourceVersion; can refuse the next N writes with 409."""

    def __init__(self, wl: dict[str, Any]) -> None:
        self.wl = copy.deepcopy(wl)
        self.calls: list[tuple[str, Any]] = []
        self.conflicts = 0
        self.now = NOW  # the apiserver's clock, for managedFields

    def _bump(self, body: dict[str, Any]) -> None:
        if self.conflicts:
            self.conflicts -= 1
            self.wl["metadata"]["resourceVersion"] += "0"  # someone else wrote
            raise ApiException(status=409, reason="Conflict")
        if body["metadata"]["resourceVersion"] != self.wl["metadata"]["resourceVersion"]:
            self.calls.append(("refused", body["metadata"]["resourceVersion"]))
            raise ApiException(status=409, reason="Conflict")  # written from a stale copy
        self.wl["metadata"]["resourceVersion"] = str(
            int(self.wl["metadata"]["resourceVersion"]) + 1
        )

    def patch_workload(self, ns: str, name: str, body: dict[str, Any], manager: str):
        self._bump(body)
        self.calls.append(("annotation", json.loads(body["metadata"]["annotations"][STATE])))
        self.wl["metadata"]["annotations"].update(body["metadata"]["annotations"])
        return copy.deepcopy(self.wl)

    def patch_workload_status(self, ns: str, name: str, ctype: str, body, params):
        self._bump(body)
        self.calls.append(("status", body["status"]["nominatedClusterNames"]))
        self.wl["status"]["nominatedClusterNames"] = body["status"]["nominatedClusterNames"]
        self.wl["metadata"]["managedFields"] = [written_by(params["field_manager"], self.now)]
        return copy.deepcopy(self.wl)

    def get_workload(self, ns: str, name: str):
        self.calls.append(("get", name))
        return copy.deepcopy(self.wl)

    def event(self, wl, reason: str, message: str, component: str) -> None:
        self.calls.append(("event", reason))

    def take_timings(self) -> dict[str, float]:
        return {"throttled_s": 0.0, "api_s": 0.0, "requests": 0}


def controller(
    kube: FakeKube,
    leader: bool = True,
    settings: Settings = SETTINGS,
    now: float = NOW,
    clock: Callable[[], float] | None = None,
    planner: Callable[..., Any] = plan,
) -> Controller:
    """A controller whose caches hold the snapshot and ns/job-a; ``clock`` (default: ``now``
    for ever) is its time."""
    elector: Any = type("Elector", (), {"is_leader": leader})()
    kube.now = now
    kube_: Any = kube
    ctl = Controller(
        settings, kube_, Metrics(), elector, threading.Event(), clock or (lambda: now), planner
    )
    for plural, objs in snapshot().items():
        ctl.informers[plural].cache = copy.deepcopy(objs)
    ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(kube.wl)
    return ctl


def reconcile(kube: FakeKube, leader: bool = True) -> float | None:
    """One reconcile of ns/job-a, then the Events it queued are posted."""
    ctl = controller(kube, leader)
    delay = ctl.reconcile("ns/job-a")
    ctl.events.drain()
    return delay


def test_plan_nominates_the_first_cluster_for_pending_work() -> None:
    p = plan(NOW, workload(), snapshot(), SETTINGS)
    assert p.not_pending is None and p.decision is not None
    assert p.decision.nominees == ["w1"] and p.decision.requeue_after == 10.0


def test_plan_skips_inactive_clusters_and_reads_tiers() -> None:
    snap = snapshot()
    snap["multikueueclusters"]["w1"]["status"]["conditions"][0]["status"] = "False"
    snap["multikueueclusters"]["w3"]["metadata"]["labels"] = {SETTINGS.tier_label: "-1"}
    p = plan(NOW, workload(), snap, SETTINGS)
    assert p.decision is not None and p.decision.nominees == ["w3"]


def test_a_first_dispatch_is_one_write_its_state_implied_by_the_status() -> None:
    """Nothing persisted and nothing nominated: the nominations alone (their managedFields
    record the round's start), no state annotation."""
    kube = FakeKube(workload())
    assert reconcile(kube) == 10.0
    assert kube.calls == [("status", ["w1"]), ("event", "Nominated")]


def test_an_escalation_is_one_write_and_a_restart_resumes_its_round() -> None:
    """Round 2 is what a replay of ``decide`` from round 0 reaches when it nominates
    [w1, w2], so only the nominations are written; the running process keeps the exact
    round start, a restarted one takes the write's second rounded up."""
    kube = FakeKube(workload())
    clock = [NOW]
    ctl = controller(kube, clock=lambda: clock[0])

    def step(at: float) -> float | None:
        clock[0] = kube.now = at
        ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(kube.wl)
        return ctl.reconcile("ns/job-a")

    assert step(NOW) == 10.0 and step(NOW + 11.4) == 10.0
    assert [c for c in kube.calls if c[0] != "event"] == [
        ("status", ["w1"]),
        ("status", ["w1", "w2"]),
    ]
    assert kube.wl["metadata"]["annotations"] == {}
    kube.calls.clear()
    assert step(NOW + 12) == 9.4 and kube.calls == []  # the exact start, nothing written
    restarted = controller(kube, now=NOW + 12)
    assert restarted.reconcile("ns/job-a") == 10.0 and kube.calls == []  # from NOW + 12
    assert controller(kube, now=NOW + 22).reconcile("ns/job-a") == 10.0
    assert kube.calls == [("status", ["w1", "w2", "w3"])]


def test_a_stored_state_ahead_of_the_nominations_stands() -> None:
    """State written, then a crash before its nominations: the status shows round 1's
    names, which no round after the stored round 2 nominates, so round 2 resumes."""
    stored = DispatchState(2, NOW - 3, 1, ("w1", "w2"), ("w2",), (), ("w1", "w2"))
    wl = workload(nominatedClusterNames=["w1"])
    wl["metadata"]["annotations"] = {STATE: stored.to_json()}
    wl["metadata"]["managedFields"] = [written_by(SETTINGS.field_manager, NOW - 13)]
    p = plan(NOW, wl, snapshot(), SETTINGS)
    assert p.state == stored and p.decision is not None and not p.decision.new_round
    kube = FakeKube(wl)
    assert reconcile(kube) == 7.0
    assert kube.calls == [("status", ["w1", "w2"]), ("event", "Nominated")]


def test_a_new_cycle_is_annotated_before_its_nominations() -> None:
    """Exclusive mode starting over from w1: a replay stops at a cycle's end, so the
    state is written, and first."""
    exclusive = replace(SETTINGS, mode="exclusive")
    stored = DispatchState(3, NOW - 11, 1, ("w1", "w2", "w3"), ("w3",), (), ("w3",))
    wl = workload(nominatedClusterNames=["w3"])
    wl["metadata"]["annotations"] = {STATE: stored.to_json()}
    kube = FakeKube(wl)
    controller(kube, settings=exclusive).reconcile("ns/job-a")
    assert [c[0] for c in kube.calls] == ["annotation", "status"]
    assert kube.calls[0][1]["cycle"] == 2 and kube.calls[1][1] == ["w1"]


def test_kueue_admission_mode_persists_state_first_even_at_first_dispatch() -> None:
    """Kueue's own field manager writes there too, so managedFields cannot date our write."""
    kube = FakeKube(workload())
    ctl = controller(kube, settings=replace(SETTINGS, write_mode="kueue-admission"))
    ctl.reconcile("ns/job-a")
    assert [c[0] for c in kube.calls] == ["annotation", "status"]


def test_a_first_dispatch_seen_after_a_restart_resumes_its_round() -> None:
    """Nominated 5 s ago by a process that has since restarted: the round is not
    restarted; it resumes from the write's time, rounded up (never ends early). Names
    round 1 would not nominate, or another manager's, start round 1 afresh."""
    wl = workload(nominatedClusterNames=["w1"])
    wl["metadata"]["managedFields"] = [written_by(SETTINGS.field_manager, NOW - 5)]
    p = plan(NOW, wl, snapshot(), SETTINGS)
    assert p.decision is not None and p.decision.nominees == ["w1"]
    assert not p.decision.new_round and p.decision.requeue_after == 6.0
    kube = FakeKube(wl)
    reconcile(kube)
    assert kube.calls == []  # no new round, no new names, the status tells the state
    other = workload(nominatedClusterNames=["w2"])  # not what round 1 nominates
    other["metadata"]["managedFields"] = [written_by(SETTINGS.field_manager, NOW - 5)]
    p = plan(NOW, other, snapshot(), SETTINGS)
    assert p.decision is not None and p.decision.new_round and p.decision.nominees == ["w1"]
    foreign = workload(nominatedClusterNames=["w1"])
    foreign["metadata"]["managedFields"] = [written_by("someone-else", NOW - 5)]
    p = plan(NOW, foreign, snapshot(), SETTINGS)
    assert p.decision is not None and p.decision.new_round


def test_nothing_written_when_nothing_changed() -> None:
    kube = FakeKube(workload())
    reconcile(kube)
    kube.calls.clear()
    ctl = controller(kube)  # cache now holds the written object
    assert ctl.reconcile("ns/job-a") == 10.0
    ctl.events.drain()
    assert kube.calls == []


def test_conflict_rereads_and_retries() -> None:
    kube = FakeKube(workload())
    kube.conflicts = 1
    reconcile(kube)
    assert [c[0] for c in kube.calls] == ["get", "status", "event"]


def test_before_the_watch_brings_its_own_write_a_decision_reads_what_it_returned() -> None:
    """The cache still holds the version the write superseded: deciding from it wrote the
    same nominees again from a version already gone, refused (409) and read again."""
    kube = FakeKube(workload())
    ctl = controller(kube)
    ctl.reconcile("ns/job-a")
    assert [c[0] for c in kube.calls] == ["status"]
    ctl.reconcile("ns/job-a")  # the cache has not seen the write
    assert [c[0] for c in kube.calls] == ["status"]
    # the watch brings a newer version, another writer's: the cache decides again
    kube.wl["status"]["nominatedClusterNames"] = None
    kube.wl["metadata"]["resourceVersion"] += "7"
    ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(kube.wl)
    ctl.reconcile("ns/job-a")
    assert [c[0] for c in kube.calls] == ["status", "status"]
    assert not [c for c in kube.calls if c[0] in ("refused", "get")]


def test_the_state_and_the_nominees_written_one_after_the_other_both_stand() -> None:
    """In kueue-admission mode the state annotation goes first, then the nominees; the
    watch brings the first while the second is on its way, and the reconcile it queues
    reads what the second returned: no write again, no 409, no GET."""
    kube = FakeKube(workload())
    before = copy.deepcopy(kube.wl)
    ctl = controller(kube, settings=replace(SETTINGS, write_mode="kueue-admission"))
    ctl.reconcile("ns/job-a")
    assert [c[0] for c in kube.calls] == ["annotation", "status"]
    annotated = copy.deepcopy(before)  # the version the watch brings first
    annotated["metadata"]["annotations"] = dict(kube.wl["metadata"]["annotations"])
    annotated["metadata"]["resourceVersion"] = str(int(kube.wl["metadata"]["resourceVersion"]) - 1)
    ctl.informers["workloads"].cache["ns/job-a"] = annotated
    kube.calls.clear()
    ctl.reconcile("ns/job-a")
    assert kube.calls == []


def test_foreign_placed_and_standby_are_never_written() -> None:
    placed = workload(clusterName="w1")
    foreign = workload(admission={"clusterQueue": "plain"})
    for wl in (placed, foreign):
        kube = FakeKube(wl)
        assert reconcile(kube) is None and kube.calls == []
    kube = FakeKube(workload())
    assert reconcile(kube, leader=False) is None and kube.calls == []


def test_eviction_is_recorded_once_and_fails_over() -> None:
    kube = FakeKube(workload())
    reconcile(kube)  # round 1: w1
    msg = 'Previously: Evicted due to x: Workload evicted on worker cluster: "w1", resetting'
    kube.wl["status"]["conditions"].append(cond("Evicted", "False", "QuotaReserved", msg, "T9"))
    kube.wl["status"]["nominatedClusterNames"] = None  # Kueue reset it on eviction
    kube.calls.clear()
    reconcile(kube)
    state = kube.calls[0][1]
    assert state["failed"] == ["w1"] and state["mark"] == "Evicted@T9"
    assert kube.calls[1] == ("status", ["w2"]) and ("event", "Failover") in kube.calls
    kube.calls.clear()
    reconcile(kube)
    assert kube.calls == []  # the same eviction is not recorded twice


def test_events_leave_the_reconcile_path_and_overflow_is_counted() -> None:
    kube = FakeKube(workload())
    ctl = controller(kube)
    ctl.events = EventSink(
        lambda wl, r, m: kube.event(wl, r, m, "x"),
        print,
        capacity=1,
        on_drop=ctl.metrics.events_dropped.inc,
    )
    ctl.reconcile("ns/job-a")
    assert [c[0] for c in kube.calls] == ["status"]  # before the event
    ctl.events.emit(kube.wl, "Extra", "no room")
    assert ctl.events.dropped == 1
    assert ctl.metrics.registry.get_sample_value("mkdc_reference_events_dropped_total") == 1
    ctl.events.drain()
    assert kube.calls[-1] == ("event", "Nominated")


def test_missing_event_permission_is_fatal() -> None:
    fatal: list[Exception] = []
    sink = EventSink(
        lambda *_: (_ for _ in ()).throw(Forbidden("missing permission")), fatal.append
    )
    sink.emit({}, "Nominated", "x")
    sink.drain()
    assert [str(e) for e in fatal] == ["missing permission"]


def test_workloads_waiting_for_a_first_nominee_are_urgent() -> None:
    assert _awaits_first_nominee(workload())
    assert not _awaits_first_nominee(workload(nominatedClusterNames=["w1"]))
    assert not _awaits_first_nominee(workload(clusterName="w1"))


def test_status_only_changes_of_queues_do_not_requeue_every_workload() -> None:
    """Kueue rewrites ClusterQueue status at every admission; only what a decision reads
    (labels, annotations, spec, the Active condition) sends every workload back."""
    ctl = controller(FakeKube(workload()))
    cq: dict[str, Any] = {
        "kind": "ClusterQueue",
        "metadata": {"name": "mkdc", "labels": {}},
        "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "mk"}]}},
        "status": {"pendingWorkloads": 0},
    }
    ctl._on_other("SYNC", copy.deepcopy(cq))
    assert len(ctl.queue) == 0
    cq["status"]["pendingWorkloads"] = 7
    ctl._on_other("MODIFIED", copy.deepcopy(cq))
    assert len(ctl.queue) == 0
    cq["spec"]["admissionChecksStrategy"]["admissionChecks"] = []
    ctl._on_other("MODIFIED", copy.deepcopy(cq))
    assert len(ctl.queue) == 1  # ns/job-a, the one pending workload
    cluster: dict[str, Any] = {"kind": "MultiKueueCluster", "metadata": {"name": "w1"}}
    ctl._on_other("SYNC", {**cluster, "status": {"conditions": [cond("Active")]}})
    ctl.queue = type(ctl.queue)()
    ctl._on_other("MODIFIED", {**cluster, "status": {"conditions": [cond("Active", "False")]}})
    assert len(ctl.queue) == 1  # a cluster going inactive matters
    ctl.queue = type(ctl.queue)()
    ctl._on_other("DELETED", cluster)
    ctl._on_other("ADDED", cluster)
    assert len(ctl.queue) == 1


def test_reconcile_logs_where_its_seconds_went(caplog: Any) -> None:
    kube = FakeKube(workload())
    ctl = controller(kube)
    with caplog.at_level("INFO", logger="mkdc.reference"):
        ctl.reconcile("ns/job-a")
    decision = next(r for r in caplog.records if r.getMessage() == "decision")
    assert {"queued_s", "throttled_s", "api_s", "requests"} <= set(vars(decision))


def test_nominations_no_replay_finds_are_annotated_first() -> None:
    """A planner whose nominations differ from its policy's (a faulty one, say): a
    restart could not re-derive the round, so its state is written, and first."""

    def padded(*args: Any) -> Any:
        p = plan(*args)
        assert p.decision is not None
        return replace(p, decision=replace(p.decision, nominees=[*p.decision.nominees, "x"]))

    kube = FakeKube(workload())
    controller(kube, planner=padded).reconcile("ns/job-a")
    assert [c[0] for c in kube.calls] == ["annotation", "status"]
    assert kube.calls[1][1] == ["w1", "x"]


def test_an_unwritten_state_yields_to_an_annotation_written_since() -> None:
    """Another replica led meanwhile and stored a state (a failure it recorded): the
    state this process left unwritten beside the old annotation is not read again."""
    kube = FakeKube(workload())
    ctl = controller(kube)
    ctl.reconcile("ns/job-a")
    assert "ns/job-a" in ctl.unwritten
    theirs = DispatchState(2, NOW, 1, ("w2",), ("w2",), ("w1",), ("w2",), False, "Evicted@T9")
    kube.wl["metadata"]["annotations"] = {STATE: theirs.to_json()}
    kube.wl["status"]["nominatedClusterNames"] = ["w2"]
    ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(kube.wl)
    kube.calls.clear()
    assert ctl.reconcile("ns/job-a") == 10.0 and kube.calls == []  # their round 2 holds


def test_a_held_round_left_unwritten_is_not_replayed_again(monkeypatch: Any) -> None:
    """Its state was found implied by the status when it was left unwritten: holding
    it (every requeue, every watch event) costs one ``decide``, no replay of the policy."""
    from dispatchers.reference import policy

    kube = FakeKube(workload())
    ctl = controller(kube)
    ctl.reconcile("ns/job-a")
    ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(kube.wl)
    decided: list[object] = []
    real = policy.decide

    def counted(*args: Any) -> Any:
        decided.append(args)
        return real(*args)

    monkeypatch.setattr(policy, "decide", counted)
    kube.calls.clear()
    assert ctl.reconcile("ns/job-a") == 10.0 and kube.calls == [] and len(decided) == 1


def test_an_escalation_waits_for_an_escalation_write_and_is_dated_when_written() -> None:
    """Every escalation slot taken (another escalation being written): a due escalation
    writes nothing and is parked, holding no thread; the slot's release queues it again,
    and it decides anew, so its round starts at its write, not when it began to wait."""
    kube = FakeKube(workload())
    clock = [NOW]
    ctl = controller(kube, settings=replace(SETTINGS, escalation_writes=1), clock=lambda: clock[0])
    ctl.reconcile("ns/job-a")
    ctl.queue.get(timeout=0)  # its own requeue, due in 10 s
    ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(kube.wl)
    kube.calls.clear()
    assert ctl.escalation_slots.take("ns/other") == 0.0
    clock[0] = kube.now = NOW + 11
    assert ctl.reconcile("ns/job-a") is None and kube.calls == []
    assert ctl.queue.get(timeout=0) is None  # parked: no timer, no thread
    ctl.escalation_slots.release()  # the other escalation was written
    assert ctl.queue.get(timeout=0) == "ns/job-a"
    clock[0] = kube.now = NOW + 15
    assert ctl.reconcile("ns/job-a") == 10.0
    assert [c for c in kube.calls if c[0] != "event"] == [("status", ["w1", "w2"])]
    ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(kube.wl)
    kube.calls.clear()
    clock[0] = NOW + 24  # round 2 began at NOW + 15, not at NOW + 11
    assert ctl.reconcile("ns/job-a") == 1.0 and kube.calls == []


def test_a_first_dispatch_takes_no_escalation_write() -> None:
    kube = FakeKube(workload())
    ctl = controller(kube, settings=replace(SETTINGS, escalation_writes=1))
    assert ctl.escalation_slots.take("ns/other") == 0.0
    assert ctl.reconcile("ns/job-a") == 10.0 and kube.calls[0] == ("status", ["w1"])


def test_what_adds_a_remote_copy() -> None:
    assert not adds_copies([], ["w1"])  # a first nomination: not an escalation
    assert adds_copies(["w1"], ["w1", "w2"])  # an escalation
    assert adds_copies(["w1"], ["w2"])  # a failover
    assert not adds_copies(["w1", "w2"], ["w2"])  # dropping a nominee
