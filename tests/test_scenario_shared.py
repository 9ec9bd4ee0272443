"""clusterScope shared: scenarios use the environment's own MultiKueueClusters and one
config made before the dispatcher started, put knobs back as they found them, and cannot
change the cluster set."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from harness.profile import load_profile
from harness.recording.recorder import Recorder as HarnessRecorder
from harness.scenarios import context, documents
from harness.scenarios import scenario as scenario_module
from harness.scenarios.context import Context
from harness.scenarios.documents import SHARED_SCOPE
from harness.scenarios.scenario import Scenario
from tests.test_scenario_workers import NAMES, FakeCluster, Items, Recorder, environment


class PatchingCluster(FakeCluster):
    """A fake manager that also takes merge patches (recorded, and applied to metadata)."""

    def __init__(self, name: str, objects: dict[str, list[dict[str, Any]]]) -> None:
        super().__init__(name, objects)
        self.patches: list[tuple[str, dict[str, Any]]] = []

    def resource(self, api_version: str, kind: str) -> Any:
        base = super().resource(api_version, kind)

        def patch(name: str, body: dict[str, Any], **_: Any) -> Items:
            self.patches.append((name, body))
            obj = next(i for i in self.objects[kind] if i["metadata"]["name"] == name)
            for key, values in body.get("metadata", {}).items():
                current = obj["metadata"].setdefault(key, {})
                for k, v in values.items():
                    current.pop(k, None) if v is None else current.__setitem__(k, v)
            return Items(obj)

        return SimpleNamespace(get=base.get, patch=patch)


class SharedScenario(Scenario):
    """A scenario that keeps the queues it waited for (cluster queue, local queue)."""

    waited: list[tuple[str, str]]


def shared_scenario(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[SharedScenario, list[dict[str, Any]]]:
    created: list[dict[str, Any]] = []
    monkeypatch.setattr(scenario_module.kube, "apply", lambda dyn, doc: created.append(doc))
    monkeypatch.setattr(scenario_module.kube, "delete", lambda *a, **k: None)
    waited: list[tuple[str, str]] = []
    monkeypatch.setattr(
        scenario_module.multikueue,
        "wait_queue_active",
        lambda cluster, cq, ns, local_queue_name=None, timeout=0: waited.append(
            (cq, local_queue_name or cq)
        ),
    )
    env = environment(NAMES)
    mkcs = [{"metadata": {"name": n, "labels": {"team": "x"}, "annotations": {}}} for n in NAMES]
    env.manager = PatchingCluster("manager", {"MultiKueueCluster": mkcs})
    recorder = cast(HarnessRecorder, Recorder())
    ctx = Context(env=env, profile=load_profile("reference"), recorder=recorder, run_id="r")
    sc = SharedScenario(ctx, "ordered-dispatch-ab12", shared=True)
    sc.waited = waited
    return sc, created


def test_a_shared_scenario_uses_the_environments_clusters_and_config(monkeypatch) -> None:
    sc, created = shared_scenario(monkeypatch)
    assert sc.cluster("west-cluster") == "west-cluster"
    assert sc.config_order(["gpu-reserved-cluster", "east-cluster"]) == NAMES
    sc.with_workers(["west-cluster"], capacity={"west-cluster": 1})
    assert sc.order == NAMES and sc.members == {n: n for n in NAMES}
    kinds = [d["kind"] for d in created]
    assert "MultiKueueCluster" not in kinds and "MultiKueueConfig" not in kinds
    assert "AdmissionCheck" not in kinds
    local_queues = [d for d in created if d["kind"] == "LocalQueue"]
    manager_queue = local_queues[-1]
    assert manager_queue["spec"]["clusterQueue"] == SHARED_SCOPE
    assert sc.waited == [(SHARED_SCOPE, sc.name)]  # the queue the Job webhook needs
    # every worker of the config gets queues, so a copy can land anywhere; capacity as asked
    worker_cqs = [d for d in created if d["kind"] == "ClusterQueue"]
    assert len(worker_cqs) == len(NAMES)
    quotas = [
        d["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
        for d in worker_cqs
    ]
    assert quotas == ["0", "1", "0"]


def test_knobs_on_shared_clusters_are_put_back(monkeypatch) -> None:
    sc, _ = shared_scenario(monkeypatch)
    sc.with_workers(NAMES, tiers={"east-cluster": 2}, timeouts={"west-cluster": "20s"})
    manager = sc.manager
    assert isinstance(manager, FakeCluster)
    east = manager.objects["MultiKueueCluster"][0]["metadata"]
    assert east["labels"] == {"team": "x", "mkdc.example/tier": "2"}
    assert sc.tiers == {"east-cluster": 2} and sc.timeouts == {"west-cluster": 20.0}
    sc.cleanup()
    assert east["labels"] == {"team": "x"}
    west = manager.objects["MultiKueueCluster"][1]["metadata"]
    assert west["annotations"] == {}


def test_a_shared_scenario_cannot_change_the_cluster_set(monkeypatch) -> None:
    sc, _ = shared_scenario(monkeypatch)
    with pytest.raises(RuntimeError, match="own_clusters"):
        sc.add_to_config("west-cluster")
    with pytest.raises(RuntimeError, match="own_clusters"):
        sc.make_inactive("west-cluster")


def test_the_shared_config_lists_the_environment_in_its_order(monkeypatch) -> None:
    created: list[dict[str, Any]] = []
    monkeypatch.setattr(scenario_module.kube, "apply", lambda dyn, doc: created.append(doc))
    waited: list[Any] = []
    monkeypatch.setattr(
        scenario_module.multikueue, "wait_active", lambda m, c, a, timeout: waited.append((c, a))
    )
    shape = context.Shape(resource="nvidia.com/gpu", flavor="gpu-flavor")
    documents.create_shared_scope(environment(NAMES), shape, "r")
    config = next(d for d in created if d["kind"] == "MultiKueueConfig")
    assert config["spec"]["clusters"] == NAMES
    queue = next(d for d in created if d["kind"] == "ClusterQueue")
    assert queue["spec"]["admissionChecksStrategy"]["admissionChecks"] == [{"name": SHARED_SCOPE}]
    assert all(d["metadata"]["labels"]["mkdc.x-k8s.io/run"] == "r" for d in created)
    assert waited == [(NAMES, [SHARED_SCOPE])]
