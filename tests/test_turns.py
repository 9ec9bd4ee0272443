"""Clean turns on shared clusters: what an earlier scenario left, named in one line, and a
scenario that cannot have a clean turn is undecided with that line, never run."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.profile import load_profile
from harness.scenarios import turns
from harness.scenarios.scenario import Scenario, waiting_for_quota
from harness.scenarios.session import current as current_session
from suites.checks.scenarios import Conformance
from suites.conformance import conftest
from tests.sessions import FrozenRecorder, offline_context, use_session

ROOT = Path(__file__).resolve().parents[1]
GPU = "nvidia.com/gpu"


def cluster_queue(name: str, **reserved: str) -> dict[str, Any]:
    """`nvidia_com_gpu` stands for nvidia.com/gpu."""
    names = {"nvidia_com_gpu": GPU}
    resources = [{"name": names.get(k, k), "total": v} for k, v in reserved.items()]
    return {
        "metadata": {"name": name},
        "status": {"flavorsReservation": [{"name": "default", "resources": resources}]},
    }


def workload(key: str, cq: str | None, **usage: str) -> dict[str, Any]:
    ns, name = key.split("/")
    wl: dict[str, Any] = {"metadata": {"namespace": ns, "name": name}, "status": {}}
    if cq is not None:
        wl["status"]["admission"] = {
            "clusterQueue": cq,
            "podSetAssignments": [{"name": "main", "resourceUsage": dict(usage)}],
        }
    return wl


HOLDER = workload("fan-out-1a2b/job-job-x1", "gpu-cluster-queue", **{GPU: "1", "memory": "1Gi"})


def test_a_cluster_queue_holds_only_its_nonzero_reservations() -> None:
    cq = cluster_queue("q", cpu="0", memory="0", nvidia_com_gpu="1")
    assert turns.held(cq) == {GPU: "1"}
    assert turns.held({"metadata": {"name": "q"}}) == {}


def test_holders_are_the_workloads_admitted_in_that_cluster_queue() -> None:
    others = [workload("a/pending", None), workload("b/elsewhere", "other-queue", cpu="1")]
    assert turns.holders("gpu-cluster-queue", [HOLDER, *others]) == {
        "fan-out-1a2b/job-job-x1": {GPU: "1", "memory": "1Gi"}
    }


def test_the_reason_names_the_worker_queue_quantity_workload_and_scenario() -> None:
    cq = cluster_queue("gpu-cluster-queue", nvidia_com_gpu="1", memory="1Gi")
    held = turns.quota_held("worker-west3", cq, [HOLDER])
    left = [turns.Left("worker-west3", "Workload", "fan-out-1a2b/job-job-x1")]
    assert turns.reason(held, left) == (
        "worker-west3: ClusterQueue gpu-cluster-queue still holds 1 nvidia.com/gpu for "
        "fan-out-1a2b/job-job-x1 from scenario fan-out-1a2b"
    )


def test_quota_nobody_is_found_holding_is_still_named() -> None:
    held = turns.quota_held("w1", cluster_queue("q", cpu="2"), [])
    assert (
        turns.reason(held, [])
        == "w1: ClusterQueue q still holds 2 cpu (no Workload found holding it)"
    )


def test_objects_left_without_quota_are_named_and_the_rest_counted() -> None:
    left = [
        turns.Left("manager", "Job", "sc-1/job"),
        turns.Left("manager", "Workload", "sc-1/job-job-1"),
        turns.Left("w2", "ProvisioningRequest", "sc-1/pr"),
    ]
    assert turns.reason([], left) == (
        "manager: Job sc-1/job from scenario sc-1 remains; manager: Workload sc-1/job-job-1 "
        "from scenario sc-1 remains (and 1 more)"
    )
    assert turns.reason([], []) == ""


class FakeCluster:
    """A cluster whose objects of each kind are given; listing honours the label selector
    (only objects marked as the run's carry it) and nothing else."""

    def __init__(self, name: str, objects: dict[str, list[dict[str, Any]]]) -> None:
        self.name = name
        self.objects = objects
        self.dyn = SimpleNamespace(resources=SimpleNamespace(get=self._resource))

    def _resource(self, api_version: str, kind: str) -> Any:
        def get(label_selector: str | None = None, **_: Any) -> Any:
            items = [
                o for o in self.objects.get(kind, []) if not label_selector or o.get("run", True)
            ]
            return SimpleNamespace(to_dict=lambda: {"items": items})

        return SimpleNamespace(get=get)


def namespace(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}}


def test_survey_finds_quota_and_objects_of_earlier_scenarios_only() -> None:
    worker = FakeCluster(
        "worker-west3",
        {
            "ClusterQueue": [cluster_queue("gpu-cluster-queue", nvidia_com_gpu="1")],
            "Workload": [HOLDER, workload("now-9f9f/filler", None)],
            "Namespace": [namespace("fan-out-1a2b"), namespace("now-9f9f")],
            "Job": [{"metadata": {"namespace": "now-9f9f", "name": "filler"}}],
        },
    )
    manager = FakeCluster("manager", {"Namespace": [namespace("fan-out-1a2b")]})
    env = SimpleNamespace(clusters=[manager, worker])
    held, left = turns.survey(env, "run", current="now-9f9f")  # type: ignore[arg-type]
    assert held == [
        turns.Held("worker-west3", "gpu-cluster-queue", GPU, "1", "fan-out-1a2b/job-job-x1")
    ]
    assert left == [turns.Left("worker-west3", "Workload", "fan-out-1a2b/job-job-x1")]


def test_waiting_for_a_clean_turn_ends_when_the_leftovers_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Survey = tuple[list[turns.Held], list[turns.Left]]
    surveys: Iterator[Survey] = iter([([], [turns.Left("m", "Job", "a/j")]), ([], [])])
    monkeypatch.setattr(turns, "survey", lambda *_a, **_k: next(surveys))
    assert turns.wait_clean(None, "run", timeout=5) == ""  # type: ignore[arg-type]


def test_a_turn_that_stays_unclean_returns_what_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    left: tuple[list[turns.Held], list[turns.Left]] = ([], [turns.Left("m", "Job", "a/j")])
    monkeypatch.setattr(turns, "survey", lambda *_a, **_k: left)
    assert turns.wait_clean(None, "run", timeout=0.3) == "m: Job a/j from scenario a remains"  # type: ignore[arg-type]


def test_a_cluster_that_stays_unreachable_is_no_clean_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(*_: Any, **__: Any) -> Any:
        raise ConnectionRefusedError

    monkeypatch.setattr(turns, "survey", refused)
    assert turns.wait_clean(None, "run", timeout=0.3) == (  # type: ignore[arg-type]
        "the clusters could not be surveyed for leftovers (ConnectionRefusedError)"
    )


BOUNDED_PREEMPTION = Conformance("test_fan_out", "test_bounded_preemption", "", ("EXT-04",))


def scenario(profile: str) -> Scenario:
    ctx = offline_context(FrozenRecorder())
    ctx.profile = load_profile(profile)
    sc = Scenario(ctx, "now-9f9f")
    sc.started = 0.0
    return sc


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    report = use_session(tmp_path, monkeypatch)
    shutil.copy(ROOT / "dispatchers/profiles/reference.yaml", report / "profile.yaml")
    return report


def test_a_shared_scope_scenario_after_leftovers_is_undecided_naming_them(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = (
        "worker-west3: ClusterQueue gpu-cluster-queue still holds 1 nvidia.com/gpu for a/b "
        "from scenario a"
    )
    monkeypatch.setattr(turns, "wait_clean", lambda *_a, **_k: line)
    with pytest.raises(pytest.skip.Exception):
        conftest._clean_turn(scenario("example-go-shared"), BOUNDED_PREEMPTION)
    assert current_session().selects("EXT-04")
    (record,) = [json.loads(p.read_text()) for p in (session / "results").glob("*.json")]
    assert record["check"] == "EXT-04" and record["result"] == "undecided"
    assert record["durationSeconds"] == 90.0
    assert record["message"] == (
        f"undecided: {line} (left by an earlier scenario, still there after 90s), so "
        "scenario now-9f9f did not start and decided nothing"
    )


def test_a_clean_turn_or_own_queues_start_at_once(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def wait_clean(*_: Any, **__: Any) -> str:
        asked.append("x")
        return ""

    monkeypatch.setattr(turns, "wait_clean", wait_clean)
    shared, own = scenario("example-go-shared"), scenario("reference")
    conftest._clean_turn(shared, BOUNDED_PREEMPTION)
    conftest._clean_turn(own, BOUNDED_PREEMPTION)
    assert asked == ["x"]  # the reference profile's scenarios have queues of their own
    assert shared.started == shared.ctx.recorder.now() and own.started == 0.0  # from the turn
    assert not list((session / "results").glob("*.json"))


def test_a_set_up_wait_says_what_it_saw_in_the_environments_names() -> None:
    cq = cluster_queue("gpu-cluster-queue", nvidia_com_gpu="1")
    cq["metadata"]["deletionTimestamp"] = "2026-12-06T10:00:00Z"
    filler = workload("now-9f9f/job-filler-1", None)
    filler["status"]["conditions"] = [
        {
            "type": "QuotaReserved",
            "status": "False",
            "message": "couldn't assign flavors to pod set main: insufficient unused quota "
            "for nvidia.com/gpu in flavor default, 1 more needed",
        }
    ]
    assert waiting_for_quota("worker-west3", cq, [filler], [HOLDER, filler]) == (
        "now-9f9f/job-filler-1 pending (couldn't assign flavors to pod set main: "
        "insufficient unused quota for nvidia.com/gpu in flavor default, 1 more needed); "
        "ClusterQueue gpu-cluster-queue (being deleted) holds 1 nvidia.com/gpu for "
        "fan-out-1a2b/job-job-x1"
    )
    empty = cluster_queue("gpu-cluster-queue")
    assert waiting_for_quota("w", empty, [], []) == (
        "no Workload yet; ClusterQueue gpu-cluster-queue holds nothing"
    )
