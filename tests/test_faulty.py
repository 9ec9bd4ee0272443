"""Each faulty dispatcher breaks its one rule, and only that, with an injected clock."""

from __future__ import annotations

import copy
import json
import threading
from functools import partial
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from dispatchers.faulty.__main__ import factory, main, split_fault
from dispatchers.faulty.controllers import KEEP, IgnoresLeader, TrimsWhenRefused
from dispatchers.faulty.faults import FAULTS, MISSING, OUTSIDE
from dispatchers.reference.controller import Controller, plan
from dispatchers.reference.metrics import Metrics
from dispatchers.reference.settings import Settings
from tests.test_reference_controller import written_by
from tests.test_reference_fixtures import cond, snapshot, workload

NOW = 1_800_000_000.0
S = Settings(round_timeout=10.0, mode="exclusive")
KEY = S.cluster_timeout_annotation


def decide(fault: str, now: float, wl: dict[str, Any], snap: Any = None, **kw: Any) -> list[str]:
    """Nominees the fault's planner decides (a fresh planner unless one is passed)."""
    planner = kw.pop("planner", None) or FAULTS[fault].planner()
    p = planner(now, wl, snap or snapshot(), S, None)
    assert p.decision is not None, p.not_pending
    return p.decision.nominees


def persisted(fault: str, now: float, wl: dict[str, Any], snap: Any = None, planner=None):
    """Run one decision and persist its state on ``wl`` as the controller would."""
    planner = planner or FAULTS[fault].planner()
    p = planner(now, wl, snap or snapshot(), S, None)
    assert p.decision is not None
    wl = copy.deepcopy(wl)
    wl["metadata"]["annotations"][S.state_annotation] = p.decision.state.to_json()
    wl["status"]["nominatedClusterNames"] = p.decision.nominees
    return wl, p


def reference(now: float, wl: dict[str, Any], snap: Any = None) -> list[str]:
    p = plan(now, wl, snap or snapshot(), S)
    assert p.decision is not None
    return p.decision.nominees


def with_cluster_annotation(name: str, value: str) -> Any:
    snap = snapshot()
    snap["multikueueclusters"][name]["metadata"]["annotations"] = {KEY: value}
    return snap


def test_outside_config_adds_a_cluster_the_config_does_not_list() -> None:
    snap = snapshot(multikueueclusters={"other": {"metadata": {"name": "other"}, "status": {}}})
    assert decide("outside-config", NOW, workload(), snap) == ["w1", "other"]
    assert decide("outside-config", NOW, workload()) == ["w1", OUTSIDE]


def test_config_blind_tries_every_cluster_by_name_and_ignores_tiers() -> None:
    active = snapshot()["multikueueclusters"]["w1"]
    snap = snapshot(multikueueclusters={"0-decoy": active, "a-other": active})
    snap["multikueueclusters"]["w1"]["metadata"]["labels"] = {S.tier_label: "0"}
    snap["multikueueclusters"]["0-decoy"]["metadata"]["labels"] = {S.tier_label: "5"}
    assert reference(NOW, workload(), snap) == ["w1"]
    planner = FAULTS["config-blind"].planner()
    wl, _ = persisted("x", NOW, workload(), snap, planner=planner)
    assert wl["status"]["nominatedClusterNames"] == ["0-decoy"]
    assert decide("x", NOW + 10, wl, snap, planner=planner) == ["a-other"]  # next by name
    assert decide("config-blind", NOW, workload()) == ["w1"]  # only config clusters: as reference


def test_duplicate_names_repeats_the_first_nominee() -> None:
    assert decide("duplicate-names", NOW, workload()) == ["w1", "w1"]


def test_too_many_names_pads_the_list_past_the_api_maximum() -> None:
    names = decide("too-many-names", NOW, workload())
    assert len(names) == 21 and names[0] == "w1" and len(set(names)) == 21
    assert all(n.startswith(MISSING) for n in names[1:])


class RefusingKube:
    """Accepts the annotation; refuses a status write of more than 20 names, as the
    Workload CRD's maxItems does."""

    def __init__(self, wl: dict[str, Any]) -> None:
        self.wl = copy.deepcopy(wl)
        self.written: list[list[str]] = []

    def patch_workload(self, ns: str, name: str, body: dict[str, Any], manager: str):
        self.wl["metadata"]["annotations"].update(body["metadata"]["annotations"])
        return copy.deepcopy(self.wl)

    def patch_workload_status(self, ns: str, name: str, ctype: str, body, params):
        names = body["status"]["nominatedClusterNames"]
        self.written.append(names)
        if len(names) > 20:
            raise ApiException(status=422, reason="Too many: 21: must have at most 20 items")
        self.wl["status"]["nominatedClusterNames"] = names
        return copy.deepcopy(self.wl)

    def event(self, wl: Any, reason: str, message: str, component: str) -> None:
        pass

    def take_timings(self) -> dict[str, float]:
        return {"throttled_s": 0.0, "api_s": 0.0, "requests": 0}


def test_too_many_names_nominates_as_the_reference_once_refused() -> None:
    wl = workload()
    kube = RefusingKube(wl)
    fault = FAULTS["too-many-names"]
    assert fault.controller is TrimsWhenRefused
    kube_: Any = kube
    stop = threading.Event()
    ctl = fault.controller(S, kube_, Metrics(), None, stop, lambda: NOW, fault.planner())
    for plural, objs in snapshot().items():
        ctl.informers[plural].cache = copy.deepcopy(objs)
    ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(wl)
    with pytest.raises(ApiException):
        ctl.reconcile("ns/job-a")
    ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(kube.wl)
    ctl.reconcile("ns/job-a")  # the retry after the refusal
    assert [len(names) for names in kube.written] == [21, 1]
    assert kube.wl["status"]["nominatedClusterNames"] == reference(NOW, wl) == ["w1"]


def test_writes_after_placement_rewrites_once_after_a_delay() -> None:
    planner = FAULTS["writes-after-placement"].planner()
    wl, _ = persisted("writes-after-placement", NOW, workload(), planner=planner)
    placed = copy.deepcopy(wl)
    placed["status"]["clusterName"] = "w1"
    placed["status"]["nominatedClusterNames"] = []
    assert plan(NOW + 1, placed, snapshot(), S).decision is None  # the reference leaves it
    waiting = planner(NOW + 1, placed, snapshot(), S, None)
    assert waiting.decision is not None and waiting.decision.nominees == []
    assert waiting.decision.requeue_after == pytest.approx(2.0)
    late = planner(NOW + 3.5, placed, snapshot(), S, None)
    assert late.decision is not None and late.decision.nominees == ["w1"]
    assert planner(NOW + 9, placed, snapshot(), S, None).decision is None  # only once


def test_ignores_eviction_leaves_an_evicted_workload_alone() -> None:
    msg = 'Previously: Workload evicted on worker cluster: "w1"'
    evicted = workload()
    evicted["status"]["conditions"].append(cond("Evicted", "False", "Preempted", msg))
    assert reference(NOW, evicted) == ["w2"]  # the reference moves on past w1
    p = FAULTS["ignores-eviction"].planner()(NOW, evicted, snapshot(), S, None)
    assert p.decision is None and "FAULT" in (p.not_pending or "")
    assert decide("ignores-eviction", NOW, workload()) == ["w1"]  # otherwise as reference


def test_nominates_while_evicted_plans_an_evicted_workload_without_quota() -> None:
    """Deactivated: Evicted, its quota released, its check back to Pending. The reference
    leaves it alone; the fault nominates it as if nothing had happened, and still leaves a
    placed workload alone (CORE-03's business, not this fault's)."""
    evicted = workload(
        conditions=[cond("Evicted", reason="InactiveWorkload"), cond("QuotaReserved", "False")]
    )
    assert plan(NOW, evicted, snapshot(), S).not_pending == "it is evicted"
    assert decide("nominates-while-evicted", NOW, evicted) == ["w1"]
    unreserved = workload(conditions=[cond("QuotaReserved", "False")])
    assert decide("nominates-while-evicted", NOW, unreserved) == ["w1"]
    retried = workload(admissionChecks=[{"name": "mk", "state": "Retry"}])
    assert decide("nominates-while-evicted", NOW, retried) == ["w1"]
    placed = workload(clusterName="w2")
    p = FAULTS["nominates-while-evicted"].planner()(NOW, placed, snapshot(), S, None)
    assert p.decision is None and p.not_pending == "it is placed on w2"
    assert decide("nominates-while-evicted", NOW, workload()) == ["w1"]  # as the reference


def test_ignores_config_change_keeps_the_first_cluster_list() -> None:
    planner = FAULTS["ignores-config-change"].planner()
    grown = snapshot(multikueueclusters={"w4": snapshot()["multikueueclusters"]["w1"]})
    grown["multikueueconfigs"]["cfg"]["spec"]["clusters"] = ["w4"]
    assert reference(NOW, workload(), grown) == ["w4"]
    assert decide("x", NOW, workload(), snapshot(), planner=planner) == ["w1"]
    assert decide("x", NOW, workload(), grown, planner=planner) == ["w1"]


def test_foreign_writer_writes_state_on_a_plain_queue_workload() -> None:
    foreign = workload(admission={"clusterQueue": "plain"})
    assert plan(NOW, foreign, snapshot(), S).decision is None
    p = FAULTS["foreign-writer"].planner()(NOW, foreign, snapshot(), S, None)
    assert p.decision is not None and p.decision.nominees == []  # an annotation write only
    assert decide("foreign-writer", NOW, workload()) == ["w1"]


def test_stalls_under_burst_sleeps_once_per_workload_one_at_a_time() -> None:
    clock = {"t": NOW}
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock["t"] += seconds

    from dispatchers.faulty.faults import stalls_under_burst

    planner = stalls_under_burst(2.0, sleep, lambda: clock["t"])
    for name in ("a", "b", "c"):
        p = planner(clock["t"], workload(name), snapshot(), S, None)
        assert p.decision is not None and p.decision.state.round_start == clock["t"]
    planner(clock["t"], workload("a"), snapshot(), S, None)
    assert slept == [2.0, 2.0, 2.0] and clock["t"] == NOW + 6


def test_big_step_nominates_every_cluster_at_once() -> None:
    assert reference(NOW, workload()) == ["w1"]
    assert decide("big-step", NOW, workload()) == ["w1", "w2", "w3"]


def test_never_escalates_ignores_every_timeout() -> None:
    planner = FAULTS["never-escalates"].planner()
    wl, _ = persisted("x", NOW, workload(), planner=planner)
    snap = with_cluster_annotation("w1", "2s")
    assert reference(NOW + 60, wl, snap) == ["w2"]
    assert decide("x", NOW + 3600, wl, snap, planner=planner) == ["w1"]


def test_escalates_early_at_a_quarter_of_every_timeout() -> None:
    wl, _ = persisted("escalates-early", NOW, workload())
    assert reference(NOW + 3, wl) == ["w1"]
    assert decide("escalates-early", NOW + 2.4, wl) == ["w1"]
    assert decide("escalates-early", NOW + 2.5, wl) == ["w2"]
    snap = with_cluster_annotation("w1", "20s")
    wl, _ = persisted("escalates-early", NOW, workload(), snap)
    assert decide("escalates-early", NOW + 4.9, wl, snap) == ["w1"]
    assert decide("escalates-early", NOW + 5, wl, snap) == ["w2"]


def test_ignores_order_starts_from_the_end_and_drops_tiers() -> None:
    assert decide("ignores-order", NOW, workload()) == ["w3"]
    snap = snapshot()
    snap["multikueueclusters"]["w3"]["metadata"]["labels"] = {S.tier_label: "1"}
    assert reference(NOW, workload(), snap) == ["w1"]
    assert decide("ignores-order", NOW, workload(), snap) == ["w3"]


def test_ignores_cluster_timeouts_uses_the_global_one() -> None:
    snap = with_cluster_annotation("w1", "20s")
    wl, _ = persisted("ignores-cluster-timeouts", NOW, workload(), snap)
    assert reference(NOW + 10, wl, snap) == ["w1"]
    assert decide("ignores-cluster-timeouts", NOW + 10, wl, snap) == ["w2"]


def test_retries_failed_first_renominates_the_failed_cluster() -> None:
    wl, _ = persisted("retries-failed-first", NOW, workload())
    msg = 'Previously: Workload evicted on worker cluster: "w1"'
    wl["status"]["conditions"].append(cond("Evicted", "False", "Failed", msg))
    wl["status"]["nominatedClusterNames"] = []  # Kueue cleared them on eviction
    assert reference(NOW + 2, wl) == ["w2"]
    assert decide("retries-failed-first", NOW + 2, wl) == ["w1"]


def test_nominates_inactive_takes_every_cluster_for_active() -> None:
    snap = snapshot()
    snap["multikueueclusters"]["w1"]["status"]["conditions"][0]["status"] = "False"
    assert reference(NOW, workload(), snap) == ["w2"]
    assert decide("nominates-inactive", NOW, workload(), snap) == ["w1"]


def test_resets_on_restart_never_reads_the_persisted_round() -> None:
    before = FAULTS["resets-on-restart"].planner()
    wl, _ = persisted("x", NOW, workload(), planner=before)
    assert decide("x", NOW + 10, wl, planner=before) == ["w2"]  # escalates in one process
    assert reference(NOW + 10, wl) == ["w2"]  # the reference resumes after a restart
    after = FAULTS["resets-on-restart"].planner()  # a restarted process
    wl2, p = persisted("x", NOW + 10, wl, planner=after)
    assert p.decision.nominees == ["w1"] and p.decision.state.round_start == NOW + 10
    assert json.loads(wl2["metadata"]["annotations"][S.state_annotation])["round"] == 1
    # killed between its first two writes: the reference dates round 1 by managedFields,
    # the faulty one starts it again
    cut = workload(nominatedClusterNames=["w1"])
    cut["metadata"]["managedFields"] = [written_by(S.field_manager, NOW - 5)]
    assert not plan(NOW, cut, snapshot(), S).decision.new_round  # type: ignore[union-attr]
    p = FAULTS["resets-on-restart"].planner()(NOW, cut, snapshot(), S, None)
    assert p.decision is not None and p.decision.new_round and p.decision.state.round_start == NOW


def test_both_replicas_write_ignores_leadership() -> None:
    elector: Any = type("Elector", (), {"is_leader": False})()
    make = factory(FAULTS["both-replicas-write"])
    ctl = make(S, object(), Metrics(), elector, threading.Event())
    assert isinstance(ctl, IgnoresLeader) and ctl.may_write()
    standby = Controller(S, object(), Metrics(), elector, threading.Event())  # type: ignore[arg-type]
    assert not standby.may_write()


def test_every_fault_builds_a_planner_and_runs_one_decision() -> None:
    from dispatchers.faulty.faults import stalls_under_burst

    slept: list[float] = []
    for name, fault in FAULTS.items():
        build = fault.planner
        if build is stalls_under_burst:  # its 5 s call, not slept here: tested on its own above
            build = partial(stalls_under_burst, sleep=slept.append)
        p = build()(NOW, workload(), snapshot(), S, None)
        assert p.decision is not None and p.decision.nominees, name
    assert slept == [5.0]


def test_cli_splits_the_fault_and_rejects_unknown_ones(capsys: pytest.CaptureFixture) -> None:
    assert split_fault(["--fault", "big-step", "--step", "1"]) == ("big-step", ["--step", "1"])
    assert split_fault(["--fault=big-step"]) == ("big-step", [])
    assert main(["--fault", "nope"]) == 2
    assert "not a fault" in capsys.readouterr().err
    assert main(["--fault", "big-step", "--write-mode", "update"]) == 2  # reference's checks


class RefusedWhileKueueIsDown(RefusingKube):
    """Kueue's webhook is down for the first `down` writes: each is refused with a 500."""

    def __init__(self, wl: dict[str, Any], down: int) -> None:
        super().__init__(wl)
        self.down = down

    def _refuse(self) -> None:
        if self.down:
            self.down -= 1
            raise ApiException(status=500, reason='failed calling webhook "vworkload.kb.io"')

    def patch_workload(self, ns: str, name: str, body: dict[str, Any], manager: str):
        self._refuse()
        return super().patch_workload(ns, name, body, manager)

    def patch_workload_status(self, ns: str, name: str, ctype: str, body, params):
        self._refuse()
        return super().patch_workload_status(ns, name, ctype, body, params)


def _controller(fault: str | None, kube: Any) -> Controller:
    make = factory(FAULTS[fault]) if fault else Controller
    ctl = make(S, kube, Metrics(), None, threading.Event())
    for plural, objs in snapshot().items():
        ctl.informers[plural].cache = copy.deepcopy(objs)
    ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(kube.wl)
    return ctl


def test_drops_refused_writes_gives_up_where_the_reference_retries() -> None:
    kube = RefusedWhileKueueIsDown(workload(), down=1)
    faulty = _controller("drops-refused-writes", kube)
    assert faulty.reconcile("ns/job-a") is None  # refused: given up
    assert faulty.reconcile("ns/job-a") is None  # Kueue is back: still given up
    assert kube.written == []
    kube = RefusedWhileKueueIsDown(workload(), down=1)
    ref = _controller(None, kube)
    with pytest.raises(ApiException):  # the work loop retries it with backoff
        ref.reconcile("ns/job-a")
    ref.reconcile("ns/job-a")
    assert kube.written == [["w1"]]


def test_drops_refused_writes_still_raises_what_is_no_refusal() -> None:
    kube = RefusingKube(workload())
    faulty = _controller("drops-refused-writes", kube)
    kube.patch_workload_status = lambda *a: (_ for _ in ()).throw(ApiException(status=403))  # type: ignore[method-assign]
    with pytest.raises(ApiException):
        faulty.reconcile("ns/job-a")


class DroppingWatch:
    """Lists one workload; its first watch ends on time (the server's timeout), the next
    meets a refused connection (the apiserver restarting), then the server is back."""

    def __init__(self) -> None:
        self.watches = 0

    def list(self, plural: str) -> tuple[list[dict[str, Any]], str]:
        return [workload()], "1"

    def watch(self, plural: str, rv: str):
        self.watches += 1
        if self.watches == 2:
            raise ConnectionRefusedError("connection refused")
        if self.watches > 3:
            threading.Event().wait(0.05)
        return iter(())


def test_stale_watch_never_reconnects_after_a_dropped_connection() -> None:
    from dispatchers.faulty.controllers import QuitsOnDrop, StaleWatch
    from dispatchers.reference.kube import Informer

    for informer, quits in ((QuitsOnDrop, True), (Informer, False)):
        kube, stop, seen = DroppingWatch(), threading.Event(), list[str]()
        handler: Any = lambda kind, obj, seen=seen: seen.append(kind)  # noqa: E731
        inf = informer(kube, "workloads", handler, print, stop)  # type: ignore[arg-type]
        t = threading.Thread(target=inf.run, daemon=True)
        t.start()
        t.join(timeout=3 if quits else 2)
        stop.set()
        t.join(timeout=5)
        assert seen == ["SYNC"] and list(inf.cache) == ["ns/job-a"]
        assert (kube.watches == 2) is quits, informer  # the reference is back watching
    ctl = factory(FAULTS["stale-watch"])(S, object(), Metrics(), None, threading.Event())
    assert isinstance(ctl, StaleWatch) and isinstance(ctl.informers["workloads"], QuitsOnDrop)
    assert not isinstance(ctl.informers["multikueueclusters"], QuitsOnDrop)


class KeepingKube(RefusingKube):
    """Records the finalizers the dispatcher writes on the main resource."""

    def patch_workload(self, ns: str, name: str, body: dict[str, Any], manager: str):
        if "finalizers" in body["metadata"]:
            self.wl["metadata"]["finalizers"] = body["metadata"]["finalizers"]
            return copy.deepcopy(self.wl)
        return super().patch_workload(ns, name, body, manager)


def test_leaves_workloads_adds_a_finalizer_of_its_own_once_keeping_others() -> None:
    wl = workload()
    wl["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    kube = KeepingKube(wl)
    ctl = _controller("leaves-workloads", kube)
    ctl.reconcile("ns/job-a")
    assert kube.written == [["w1"]]  # nominates as the reference does
    assert kube.wl["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use", KEEP]
    ref = KeepingKube(wl)
    _controller(None, ref).reconcile("ns/job-a")
    assert ref.wl["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]


def test_dies_uncaught_writes_its_first_nomination_then_dies_at_its_first_escalation(
    capsys: pytest.CaptureFixture,
) -> None:
    """Its first write goes through; its first escalation meets an unanswered apiserver and
    the process ends as an uncaught exception ends Python: traceback, exit code 1."""
    from types import SimpleNamespace

    from dispatchers.faulty.controllers import DiesUncaught

    kube: Any = RefusingKube(workload())
    kube.api = SimpleNamespace(configuration=SimpleNamespace(host="https://127.0.0.1:6443"))
    clock, codes = [NOW], list[int]()
    ctl = DiesUncaught(
        S, kube, Metrics(), None, threading.Event(), lambda: clock[0], die=codes.append
    )
    for plural, objs in snapshot().items():
        ctl.informers[plural].cache = copy.deepcopy(objs)
    ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(kube.wl)
    ctl.reconcile("ns/job-a")
    assert kube.written == [["w1"]] and codes == []
    ctl.informers["workloads"].cache["ns/job-a"] = copy.deepcopy(kube.wl)
    ctl.own_writes.clear()
    clock[0] = NOW + S.round_timeout + 1  # the round is over: escalate
    with pytest.raises(Exception, match="Max retries exceeded") as raised:
        ctl.reconcile("ns/job-a")
    assert type(raised.value).__name__ == "MaxRetryError" and codes == [1]
    assert kube.written == [["w1"]]  # the escalation never reached the apiserver
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='127.0.0.1'")
    assert FAULTS["dies-uncaught"].controller is DiesUncaught
