"""The run label and purge: exactly the labelled objects go, nothing else is touched."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from harness.cluster import inventory
from harness.cluster.environment import Cluster, Environment
from harness.cluster.inventory import RUN_LABEL
from harness.cluster.multikueue import API


class _Result:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def to_dict(self) -> dict[str, Any]:
        return self.body


class FakeResource:
    def __init__(self, dyn: FakeDyn, api_version: str, kind: str) -> None:
        self.dyn, self.api_version, self.kind = dyn, api_version, kind

    def _mine(self) -> list[dict[str, Any]]:
        return [
            o
            for o in self.dyn.objects
            if o["kind"] == self.kind and o["apiVersion"] == self.api_version
        ]

    def get(self, name=None, namespace=None, label_selector=None, **_: Any) -> _Result:
        self.dyn.calls.append(("get", self.kind, namespace, name, label_selector))
        objs = [o for o in self._mine() if namespace in (None, o["metadata"].get("namespace"))]
        if name is not None:
            for o in objs:
                if o["metadata"]["name"] == name:
                    return _Result(o)
            raise ApiException(status=404, reason="Not Found")
        if label_selector:
            key, _, value = label_selector.partition("=")
            objs = [o for o in objs if (o["metadata"].get("labels") or {}).get(key) == value]
        self.dyn.lists += 1
        return _Result({"items": objs})

    def delete(self, name: str, namespace: str | None = None, **_: Any) -> None:
        self.dyn.deleted.append((self.kind, namespace, name))
        if (self.kind, name) in self.dyn.vanish_on_delete:
            # someone else deleted it between our list and our delete
            self.dyn.objects = [
                o
                for o in self.dyn.objects
                if o not in self._mine() or o["metadata"]["name"] != name
            ]
            raise ApiException(status=404, reason="Not Found")
        for o in self._mine():
            meta = o["metadata"]
            if meta["name"] == name and meta.get("namespace") == namespace:
                if self.kind == "Namespace" and self.dyn.linger:
                    self.dyn.terminating[name] = self.dyn.linger
                    return
                self.dyn.objects.remove(o)
                if self.kind == "Namespace":  # the namespace controller empties it
                    self.dyn.objects = [
                        x for x in self.dyn.objects if x["metadata"].get("namespace") != name
                    ]
                return

    def create(self, *a: Any, **k: Any) -> None:
        self.dyn.writes.append(("create", self.kind))

    def patch(self, *a: Any, **k: Any) -> None:
        self.dyn.writes.append(("patch", self.kind))

    def server_side_apply(self, *a: Any, **k: Any) -> None:
        self.dyn.writes.append(("apply", self.kind))


class FakeDyn:
    """A dynamic client over a list of dicts: get/list by label, delete, and write records."""

    def __init__(
        self,
        objects: list[dict[str, Any]] | None = None,
        *,
        unserved: set[str] | None = None,
        version: str = "v1.36.3",
        linger: int = 0,
    ) -> None:
        self.objects = list(objects or [])
        self.unserved = unserved or set()
        self.version = {"kubernetes": {"gitVersion": version}}
        self.linger = linger  # list calls a deleted namespace stays Terminating
        self.terminating: dict[str, int] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.deleted: list[tuple[str, str | None, str]] = []
        self.writes: list[tuple[str, str]] = []
        self.vanish_on_delete: set[tuple[str, str]] = set()  # (kind, name): gone, then 404
        self.lists = 0
        self.resources = self

    def get(self, *, api_version: str, kind: str) -> FakeResource:
        if kind in self.unserved:
            raise ResourceNotFoundError(f"{api_version}/{kind}")
        self._tick()
        return FakeResource(self, api_version, kind)

    def _tick(self) -> None:
        for name, left in list(self.terminating.items()):
            if left <= 0:
                del self.terminating[name]
                self.objects = [
                    o
                    for o in self.objects
                    if not (o["kind"] == "Namespace" and o["metadata"]["name"] == name)
                    and o["metadata"].get("namespace") != name
                ]
            else:
                self.terminating[name] = left - 1


def obj(
    api_version: str,
    kind: str,
    name: str,
    namespace: str | None = None,
    run: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {RUN_LABEL: run} if run else {"app": "x"}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **extra}


def env_with(tmp_path: Path, dyns: dict[str, FakeDyn]) -> Environment:
    clusters = []
    for name, dyn in dyns.items():
        c = Cluster(
            name, tmp_path / f"{name}.kubeconfig", "manager" if name == "manager" else "worker"
        )
        c.dyn = cast(DynamicClient, dyn)  # replaces the cached client
        clusters.append(c)
    return Environment("fake", tmp_path, clusters[0], clusters[1:], "v1.36.3", "v0.19.2", None)


RUN, OTHER = "run-a", "run-b"


def populated() -> list[dict[str, Any]]:
    return [
        obj("v1", "Namespace", "t1", run=RUN),
        obj("batch/v1", "Job", "j", "t1"),  # goes with its namespace, carries no label
        obj("v1", "Namespace", "users-ns"),
        obj("v1", "Namespace", "t2", run=OTHER),
        obj(API, "ClusterQueue", "cq", run=RUN),
        obj(API, "ClusterQueue", "users-cq"),
        obj(API, "AdmissionCheck", "ac", run=RUN),
        obj(API, "MultiKueueConfig", "mkc", run=RUN),
        obj(API, "MultiKueueCluster", "t1-worker1", run=RUN),
        obj(API, "MultiKueueCluster", "worker1"),
        obj(API, "ResourceFlavor", "rf", run=RUN),
        obj(API, "WorkloadPriorityClass", "wpc", run=RUN),
        obj("scheduling.k8s.io/v1", "PriorityClass", "high", run=RUN),
        obj("scheduling.k8s.io/v1", "PriorityClass", "system-cluster-critical"),
        obj("v1", "Secret", "t1-worker1", "kueue-system", run=RUN),
        obj("v1", "Secret", "multikueue-worker1", "kueue-system"),
        obj("v1", "Secret", "elsewhere", "default", run=RUN),  # not a place the suite writes
        obj(inventory.RBAC, "ClusterRole", "dispatcher", run=RUN),
        obj(inventory.RBAC, "ClusterRoleBinding", "dispatcher", run=RUN),
        obj(inventory.RBAC, "RoleBinding", "dispatcher", "kueue-system", run=RUN),
        obj(inventory.RBAC, "Role", "kueue-leader", "kueue-system"),
    ]


def test_label_adds_the_run_label_without_touching_the_input():
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "n", "labels": {"a": "b"}},
    }
    out = inventory.label(doc, "r1")
    assert out["metadata"]["labels"] == {"a": "b", RUN_LABEL: "r1"}
    assert doc["metadata"]["labels"] == {"a": "b"}
    assert inventory.label({"kind": "X"}, "r1")["metadata"]["labels"] == {RUN_LABEL: "r1"}


def test_run_ids_are_label_values_and_unique():
    ids = {inventory.new_run_id() for _ in range(50)}
    assert len(ids) == 50
    for run_id in ids:
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", run_id)


def test_purge_deletes_exactly_the_runs_objects_on_every_cluster(tmp_path):
    manager = FakeDyn(populated(), unserved={"ProvisioningRequestConfig", "Cohort"})
    worker = FakeDyn(
        [obj("v1", "Namespace", "t1", run=RUN), obj(API, "ClusterQueue", "wcq", run=RUN)]
    )
    env = env_with(tmp_path, {"manager": manager, "worker1": worker})
    inventory.purge(env, RUN, timeout=5)
    assert manager.deleted == [
        ("Namespace", None, "t1"),
        ("AdmissionCheck", None, "ac"),
        ("MultiKueueConfig", None, "mkc"),
        ("ClusterQueue", None, "cq"),
        ("MultiKueueCluster", None, "t1-worker1"),
        ("ResourceFlavor", None, "rf"),
        ("WorkloadPriorityClass", None, "wpc"),
        ("PriorityClass", None, "high"),
        ("Secret", "kueue-system", "t1-worker1"),
        ("ClusterRoleBinding", None, "dispatcher"),
        ("ClusterRole", None, "dispatcher"),
        ("RoleBinding", "kueue-system", "dispatcher"),
    ]
    assert worker.deleted == [("Namespace", None, "t1"), ("ClusterQueue", None, "wcq")]
    left = {(o["kind"], o["metadata"]["name"]) for o in manager.objects}
    assert left == {
        ("Namespace", "users-ns"),
        ("Namespace", "t2"),
        ("ClusterQueue", "users-cq"),
        ("MultiKueueCluster", "worker1"),
        ("PriorityClass", "system-cluster-critical"),
        ("Secret", "multikueue-worker1"),
        ("Secret", "elsewhere"),
        ("Role", "kueue-leader"),
    }
    # labelled Secrets are only looked for in Kueue's namespace
    secret_lists = [c for c in manager.calls if c[1] == "Secret" and c[3] is None]
    assert {c[2] for c in secret_lists} == {"kueue-system"}
    assert inventory.leftovers(env, RUN) == {}


def test_purge_tolerates_objects_that_vanish_meanwhile(tmp_path):
    dyn = FakeDyn(
        [obj(API, "ResourceFlavor", "rf", run=RUN), obj(API, "ClusterQueue", "cq", run=RUN)]
    )
    dyn.vanish_on_delete.add(("ResourceFlavor", "rf"))  # listed, then deleted by someone else
    inventory.purge(env_with(tmp_path, {"manager": dyn, "w": FakeDyn()}), RUN, timeout=5)
    assert dyn.deleted == [("ClusterQueue", None, "cq"), ("ResourceFlavor", None, "rf")]
    assert dyn.objects == []


def test_purge_waits_for_terminating_namespaces(tmp_path):
    dyn = FakeDyn([obj("v1", "Namespace", "t1", run=RUN)], linger=40)
    env = env_with(tmp_path, {"manager": dyn, "w": FakeDyn()})
    inventory.purge(env, RUN, timeout=20)
    assert not dyn.objects
    assert dyn.lists > 2 * len(inventory.KINDS)  # it listed again while waiting


def test_purge_without_waiting_deletes_and_returns_while_namespaces_end(tmp_path):
    dyn = FakeDyn([obj("v1", "Namespace", "t1", run=RUN)], linger=10**9)
    env = env_with(tmp_path, {"manager": dyn, "w": FakeDyn()})
    inventory.purge(env, RUN, timeout=0.5, wait=False)  # no TimeoutError: it did not wait
    assert dyn.deleted == [("Namespace", None, "t1")]
    assert dyn.lists == len(inventory.KINDS)  # one listing to find them, none to wait


def test_purge_keeps_what_the_next_run_uses_and_waits_for_the_rest(tmp_path):
    dyn = FakeDyn(populated(), linger=40)
    env = env_with(tmp_path, {"manager": dyn, "w": FakeDyn()})
    keep = [("ResourceFlavor", "rf"), ("WorkloadPriorityClass", "wpc")]
    inventory.purge(env, RUN, timeout=20, keep=keep)
    assert {(k, n) for k, _, n in dyn.deleted}.isdisjoint(keep)
    assert ("ClusterQueue", None, "cq") in dyn.deleted
    assert inventory.leftovers(env, RUN, keep) == {}
    assert inventory.leftovers(env, RUN) == {
        "manager": ["ResourceFlavor/rf", "WorkloadPriorityClass/wpc"]
    }


def test_purge_times_out_naming_what_is_left(tmp_path):
    dyn = FakeDyn([obj("v1", "Namespace", "t1", run=RUN)], linger=10**9)
    env = env_with(tmp_path, {"manager": dyn, "w": FakeDyn()})
    with pytest.raises(TimeoutError, match="Namespace/t1"):
        inventory.purge(env, RUN, timeout=0.5)


def test_snapshot_before_and_after_shows_what_a_run_left(tmp_path):
    dyn = FakeDyn(populated())
    env = env_with(tmp_path, {"manager": dyn, "w": FakeDyn()})
    before = inventory.snapshot(env)
    assert before["manager"]["Secret"] == [
        "kueue-system/multikueue-worker1",
        "kueue-system/t1-worker1",
    ]
    assert "users-cq" in before["manager"]["ClusterQueue"]
    dyn.objects.append(obj(API, "ClusterQueue", "new", run=RUN))
    dyn.objects.append(obj("v1", "Namespace", "new-ns", run=RUN))
    after = inventory.snapshot(env)
    assert inventory.added(before, after) == {
        "manager": {"ClusterQueue": ["new"], "Namespace": ["new-ns"]}
    }
    inventory.purge(env, RUN, timeout=5)
    assert inventory.added(before, inventory.snapshot(env)) == {}
    assert dyn.writes == []
