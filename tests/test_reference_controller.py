"""The reference dispatcher's reconcile: what it writes, in which order, and when it does not."""

from __future__ import annotations

import copy
import json
import threading
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.rest import ApiException

from dispatchers.reference.controller import Controller, _awaits_first_nominee, plan
from dispatchers.reference.events import EventSink
from dispatchers.reference.kube import Forbidden
from dispatchers.reference.metrics import Metrics
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

    def _bump(self, body: dict[str, Any]) -> None:
        if self.conflicts:
            self.conflicts -= 1
            self.wl["metadata"]["resourceVersion"] += "0"  # someone else wrote
            raise ApiException(status=409, reason="Conflict")
        assert body["metadata"]["resourceVersion"] == self.wl["metadata"]["resourceVersion"]
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
        self.wl["metadata"]["managedFields"] = [written_by(params["field_manager"], NOW)]
        return copy.deepcopy(self.wl)

    def get_workload(self, ns: str, name: str):
        self.calls.append(("get", name))
        return copy.deepcopy(self.wl)

    def event(self, wl, reason: str, message: str, component: str) -> None:
        self.calls.append(("event", reason))

    def take_timings(self) -> dict[str, float]:
        return {"throttled_s": 0.0, "api_s": 0.0, "requests": 0}


def controller(
    kube: FakeKube, leader: bool = True, settings: Settings = SETTINGS, now: float = NOW
) -> Controller:
    elector: Any = type("Elector", (), {"is_leader": leader})()
    kube_: Any = kube
    ctl = Controller(settings, kube_, Metrics(), elector, threading.Event(), clock=lambda: now)
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


def test_a_first_dispatch_nominates_in_one_round_trip_then_persists_its_state() -> None:
    """Nothing persisted and nothing nominated: the status write goes first (its
    managedFields record the round's start), the state annotation right after."""
    kube = FakeKube(workload())
    assert reconcile(kube) == 10.0
    kinds = [c[0] for c in kube.calls]
    assert kinds == ["status", "annotation", "event"]
    assert kube.calls[0][1] == ["w1"] and kube.calls[1][1]["round"] == 1


def test_state_is_persisted_before_nominations_once_a_round_is_running() -> None:
    kube = FakeKube(workload())
    reconcile(kube)
    kube.calls.clear()
    ctl = controller(kube, now=NOW + 11)  # round 1 timed out: escalate
    ctl.reconcile("ns/job-a")
    assert [c[0] for c in kube.calls] == ["annotation", "status"]
    assert kube.calls[0][1]["round"] == 2 and kube.calls[1][1] == ["w1", "w2"]


def test_kueue_admission_mode_persists_state_first_even_at_first_dispatch() -> None:
    """Kueue's own field manager writes there too, so managedFields cannot date our write."""
    kube = FakeKube(workload())
    ctl = controller(kube, settings=replace(SETTINGS, write_mode="kueue-admission"))
    ctl.reconcile("ns/job-a")
    assert [c[0] for c in kube.calls] == ["annotation", "status"]


def test_a_first_dispatch_cut_short_before_its_annotation_resumes_its_round() -> None:
    """Nominated 5 s ago, then a crash before the state was written: the round is not
    restarted; it resumes from the write's time, rounded up (never ends early)."""
    wl = workload(nominatedClusterNames=["w1"])
    wl["metadata"]["managedFields"] = [written_by(SETTINGS.field_manager, NOW - 5)]
    p = plan(NOW, wl, snapshot(), SETTINGS)
    assert p.decision is not None and p.decision.nominees == ["w1"]
    assert not p.decision.new_round and p.decision.requeue_after == 6.0
    kube = FakeKube(wl)
    reconcile(kube)
    assert [c[0] for c in kube.calls] == ["annotation"]  # no new round, no new names
    assert kube.calls[0][1]["round"] == 1 and kube.calls[0][1]["start"] == NOW - 4
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
    assert [c[0] for c in kube.calls] == ["get", "status", "annotation", "event"]


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
    assert [c[0] for c in kube.calls] == ["status", "annotation"]  # both before the event
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
