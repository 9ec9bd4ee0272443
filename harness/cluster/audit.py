"""The audit policy of every manager apiserver: the requests the recorder reads back
from its audit log to count what the dispatcher did (see harness.recording)."""

from __future__ import annotations

from typing import Any

from harness.cluster.kueue_install import NAMESPACE

POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {
            "level": "Request",
            "verbs": ["create", "update", "patch", "delete", "deletecollection"],
            "resources": [
                {"group": "kueue.x-k8s.io", "resources": ["workloads", "workloads/status"]}
            ],
        },
        {  # when a (re)started dispatcher is back: its first list or watch of Workloads;
            # a GET of one: whether it re-read a Workload its write was refused for (409)
            "level": "Metadata",
            "verbs": ["list", "watch", "get"],
            "resources": [{"group": "kueue.x-k8s.io", "resources": ["workloads"]}],
        },
        {  # every other request of a dispatcher's identity: what it was refused (403)
            "level": "Metadata",
            "userGroups": [f"system:serviceaccounts:{NAMESPACE}"],
        },
        {"level": "None"},
    ],
}
