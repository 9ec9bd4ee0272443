"""Server-side apply rides out an overloaded server, and only that."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest
from kubernetes.client.rest import ApiException

from harness.cluster import kube

DOC = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}


def resource_failing(monkeypatch: pytest.MonkeyPatch, statuses: list[int]) -> list[int]:
    """kube.resource gives an object whose apply fails with `statuses`, then succeeds."""
    calls: list[int] = []

    def server_side_apply(**_: Any) -> str:
        calls.append(1)
        if statuses:
            raise ApiException(status=statuses.pop(0), reason="etcdserver: request timed out")
        return "applied"

    monkeypatch.setattr(
        kube, "resource", lambda *a: SimpleNamespace(server_side_apply=server_side_apply)
    )
    monkeypatch.setattr(kube.apply.retry, "sleep", lambda _s: None)
    return calls


def test_an_apply_the_server_was_too_busy_for_is_made_again(monkeypatch):
    calls = resource_failing(monkeypatch, [500, 504, 429])
    assert kube.apply(cast(Any, None), DOC) == "applied" and len(calls) == 4


def test_an_apply_the_server_refused_is_not(monkeypatch):
    calls = resource_failing(monkeypatch, [422])
    with pytest.raises(ApiException):
        kube.apply(cast(Any, None), DOC)
    assert len(calls) == 1


def test_served_resources_lists_each_served_version_of_each_crd():
    def crd(group, plural, versions):
        return {
            "spec": {
                "group": group,
                "names": {"plural": plural},
                "versions": [{"name": n, "served": served} for n, served in versions],
            }
        }

    crds = [
        crd("kueue.x-k8s.io", "workloads", [("v1beta1", True), ("v1beta2", True)]),
        crd("kueue.x-k8s.io", "clusterqueues", [("v1beta2", True), ("v1alpha1", False)]),
        crd("autoscaling.x-k8s.io", "provisioningrequests", [("v1", True)]),
    ]
    assert kube.served_resources(crds) == {
        "kueue.x-k8s.io/v1beta1": {"workloads"},
        "kueue.x-k8s.io/v1beta2": {"workloads", "clusterqueues"},
        "autoscaling.x-k8s.io/v1": {"provisioningrequests"},
    }
