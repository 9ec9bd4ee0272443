"""The fake Nodes KWOK runs a worker's pods on, without a kubelet."""

from __future__ import annotations

from typing import Any


def fake_node(name: str, capacity: dict[str, str]) -> dict[str, Any]:
    """A Node that KWOK manages: it becomes Ready and runs pods without a kubelet."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {"kubernetes.io/hostname": name, "type": "kwok"},
        },
        "status": {"capacity": dict(capacity), "allocatable": dict(capacity)},
    }
