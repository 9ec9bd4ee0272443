"""Environment faults: names, the log, the injector's turns, and what a fault excuses."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.cluster import faults
from harness.errors import UserError
from harness.recording.timeline import Event, Kind, Timeline
from harness.results import Result
from suites import judge
from suites.checks import CATALOGUE


def test_fault_names_parse_and_all_means_every_kind():
    assert faults.parse("etcd-restart, kueue-crash") == ["etcd-restart", "kueue-crash"]
    assert faults.parse("all") == list(faults.KINDS)
    with pytest.raises(UserError, match="not a fault \\(disk-full\\); choose from apiserver"):
        faults.parse("etcd-restart,disk-full")
    with pytest.raises(UserError, match="not a fault \\(empty\\)"):
        faults.parse(" , ")


class FakeTarget:
    """Records what the injector asks of the provider, and lets a test fail a step."""

    def __init__(self, fail: str = "") -> None:
        self.calls: list[tuple[str, ...]] = []
        self.fail = fail
        self.done = threading.Event()

    def interrupt(self, process: str, how: str) -> None:
        self.calls.append(("interrupt", process, how))
        if self.fail and self.fail in process:
            raise RuntimeError(f"{process} cannot be taken out")

    def resume(self, process: str) -> None:
        self.calls.append(("resume", process))
        if len([c for c in self.calls if c[0] == "resume"]) >= 3:
            self.done.set()


def injector(target: FakeTarget, tmp_path: Path, kinds: list[str]) -> faults.Injector:
    clock = iter(float(t) for t in range(100, 200))
    return faults.Injector(
        target,
        ["worker1", "worker2"],
        kinds,
        tmp_path / faults.LOG_FILE,
        every=0.01,
        downtime=0.01,
        first_after=0,
        clock=lambda: next(clock),
    )


def test_the_injector_takes_turns_and_brings_every_process_back(tmp_path):
    target = FakeTarget()
    inj = injector(target, tmp_path, ["apiserver-restart", "kueue-crash"]).start()
    assert target.done.wait(5)
    found = inj.stop()
    assert target.calls[:6] == [
        ("interrupt", "worker1-apiserver", "stop"),
        ("resume", "worker1-apiserver"),
        ("interrupt", "manager-kueue", "kill"),
        ("resume", "manager-kueue"),
        ("interrupt", "worker2-apiserver", "stop"),
        ("resume", "worker2-apiserver"),
    ]
    assert target.calls[-1][0] == "resume"  # stopped between faults, never inside one
    assert found[0] == faults.Window(
        "apiserver-restart", "worker1", "worker1's kube-apiserver restarted", 100.0, 101.0
    )
    logged = faults.read_log(tmp_path / faults.LOG_FILE)
    assert [(r.id, r.phase) for r in logged[:4]] == [
        (1, "start"),
        (1, "end"),
        (2, "start"),
        (2, "end"),
    ]
    assert faults.windows(logged) == found


def test_a_fault_that_cannot_be_injected_is_said_and_its_process_still_brought_back(tmp_path):
    target = FakeTarget(fail="worker1")
    inj = injector(target, tmp_path, ["worker-unreachable"]).start()
    assert target.done.wait(5)
    inj.stop()
    assert ("resume", "worker1-apiserver") in target.calls
    assert inj.errors[0] == "worker-unreachable: worker1-apiserver cannot be taken out"


def test_cpu_starvation_spins_a_process_per_core_and_ends_them(tmp_path):
    inj = faults.Injector(FakeTarget(), ["w1"], ["cpu-starvation"], tmp_path / "f.jsonl")
    inj._busy_loops()
    spinning = list(inj._busy)
    assert spinning and all(p.poll() is None for p in spinning)
    inj._end_busy_loops()
    assert all(p.poll() is not None for p in spinning)


def test_a_fault_disturbs_what_overlaps_it_or_follows_it_before_it_settled():
    w = faults.Window("etcd-restart", "etcd", "etcd restarted", 100.0, 105.0)
    lasting = faults.Window("kueue-crash", "manager-kueue", "Kueue crashed", 300.0, None)
    found = [w, lasting]
    assert faults.overlapping(found, 90, 101) == [w]
    assert faults.overlapping(found, 105 + faults.SETTLE_SECONDS - 1, 200) == [w]
    assert faults.overlapping(found, 105 + faults.SETTLE_SECONDS + 1, 200) == []
    assert faults.overlapping(found, 400, 500) == [lasting]
    assert w.describe(origin=90) == "etcd restarted at t=10.0s to t=15.0s"


class FaultedScenario:
    """What `excused` reads of a scenario: the faults that disturbed it."""

    def __init__(self, hit: list[faults.Window]) -> None:
        self.hit = hit

    def environment_faults(self) -> list[faults.Window]:
        return self.hit


RESTART = faults.Window(
    "apiserver-restart", "worker2", "worker2's kube-apiserver restarted", 12, 17
)


@pytest.mark.parametrize(
    ("check", "result", "excused"),
    [
        ("CORE-04", Result.FAILED, True),  # a placement late while a worker restarted
        ("CORE-09", Result.UNDECIDED, True),
        ("EXT-05", Result.FAILED, True),
        ("CORE-04", Result.PASSED, False),  # a pass stands: the dispatcher rode it out
        ("CORE-01", Result.FAILED, False),  # a name outside the config is the dispatcher's
        ("CORE-02", Result.FAILED, False),
        ("CORE-03", Result.FAILED, False),
        ("CORE-08", Result.FAILED, False),
    ],
)
def test_a_fault_excuses_every_failure_but_of_the_dispatchers_own_writes(check, result, excused):
    sc: Any = FaultedScenario([RESTART])
    why = judge.excused(CATALOGUE[check], result, sc, origin=2.0)
    if excused:
        assert why == "environment: worker2's kube-apiserver restarted at t=10.0s to t=15.0s"
    else:
        assert why == ""
    assert judge.excused(CATALOGUE[check], result, FaultedScenario([]), 0.0) == ""  # type: ignore[arg-type]


def test_the_recorder_turns_the_fault_log_into_actions_on_the_cluster_hit(tmp_path):
    from harness.recording.recorder import Recorder

    env: Any = SimpleNamespace(run_dir=tmp_path, workers=[SimpleNamespace(name="worker2")])
    rec = Recorder(env)
    start = faults.Record(1, "apiserver-restart", "worker2", "start", 12.0, "w2 restarted")
    rec._fault_line(start.to_json())
    rec._fault_line(faults.Record(2, "etcd-restart", "etcd", "start", 20.0, "etcd").to_json())
    [hit, etcd] = list(rec.timeline)
    assert (hit.t, hit.cluster, hit.kind, hit.what) == (12.0, "worker2", Kind.ACTION, faults.ACTION)
    assert etcd.cluster == "manager"
    assert faults.windows([{**e.data, "t": e.t} for e in Timeline([hit, etcd])]) == [
        faults.Window("apiserver-restart", "worker2", "w2 restarted", 12.0, None),
        faults.Window("etcd-restart", "etcd", "etcd", 20.0, None),
    ]
    assert isinstance(hit, Event)


def test_a_scenarios_setup_waits_for_a_cluster_whose_apiserver_restarts():
    import urllib3
    from kubernetes.client.rest import ApiException

    from harness.scenarios import documents

    calls: list[int] = []

    def apply(dyn: Any, doc: dict[str, Any]) -> str:
        calls.append(1)
        if len(calls) < 3:
            raise urllib3.exceptions.MaxRetryError(None, "/", "connection refused")  # type: ignore[arg-type]
        return "applied"

    assert documents.WHEN_REACHABLE(apply, None, {}) == "applied" and len(calls) == 3

    def refused(dyn: Any, doc: dict[str, Any]) -> str:
        calls.append(1)
        raise ApiException(status=422)

    calls.clear()
    with pytest.raises(ApiException):  # a refusal is the scenario's to see, at once
        documents.WHEN_REACHABLE(refused, None, {})
    assert len(calls) == 1
