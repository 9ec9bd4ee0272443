"""Shared hand-made Kueue objects for the reference dispatcher tests (no tests here)."""

from __future__ import annotations

import copy
from typing import Any

T = "2026-11-30T15:42:42Z"


def cond(kind: str, status: str = "True", reason: str = "R", message: str = "", at: str = T):
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
        "observedGeneration": 1,
    }


def workload(name: str = "job-a", **status: Any) -> dict[str, Any]:
    """A workload with quota reserved in CQ mkdc and the MultiKueue check Pending."""
    base: dict[str, Any] = {
        "admission": {"clusterQueue": "mkdc", "podSetAssignments": [{"name": "main", "count": 1}]},
        "admissionChecks": [
            {"name": "mk", "state": "Pending", "message": "", "lastTransitionTime": T}
        ],
        "conditions": [cond("QuotaReserved"), cond("PodsReady", "False", "WaitForStart")],
    }
    base.update(status)
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "10",
            "creationTimestamp": T,
            "annotations": {},
        },
        "spec": {"queueName": "lq"},
        "status": base,
    }


def snapshot(**extra: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """Queue lq -> CQ mkdc -> check mk (MultiKueue) -> config cfg [w1, w2, w3], all active."""
    snap: dict[str, dict[str, dict[str, Any]]] = {
        "localqueues": {"ns/lq": {"metadata": {"name": "lq"}, "spec": {"clusterQueue": "mkdc"}}},
        "clusterqueues": {
            "mkdc": {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "mk"}]}}},
            "plain": {"spec": {}},
        },
        "admissionchecks": {
            "mk": {
                "spec": {
                    "controllerName": "kueue.x-k8s.io/multikueue",
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "MultiKueueConfig",
                        "name": "cfg",
                    },
                }
            }
        },
        "multikueueconfigs": {
            "cfg": {"metadata": {"name": "cfg"}, "spec": {"clusters": ["w1", "w2", "w3"]}}
        },
        "multikueueclusters": {
            n: {"metadata": {"name": n}, "status": {"conditions": [cond("Active")]}}
            for n in ("w1", "w2", "w3")
        },
        "workloads": {},
    }
    for key, value in extra.items():
        snap[key].update(copy.deepcopy(value))
    return snap
