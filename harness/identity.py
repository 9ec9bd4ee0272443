"""A least-privilege identity for an external dispatcher on the manager.

Each replica gets its own ServiceAccount (so the audit log tells replicas apart)
bound to one ClusterRole that allows only what a dispatcher needs, and a
kubeconfig with a token from the TokenRequest API. ServiceAccounts work on every
provider, unlike client certificates that need the cluster's CA key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from harness import kube, pki
from harness.environment import Cluster

ROLE = "mkdc-dispatcher"
TOKEN_SECONDS = 24 * 3600

# What a dispatcher may do: read MultiKueue state, write workload status, say why.
RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": [
            "workloads",
            "multikueueclusters",
            "multikueueconfigs",
            "admissionchecks",
            "clusterqueues",
            "localqueues",
        ],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["workloads", "workloads/status"],
        "verbs": ["patch", "update"],
    },
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
]
LEASE_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["get", "list", "watch", "create", "update", "patch"],
    }
]


def account_name(replica: int) -> str:
    return f"mkdc-dispatcher-{replica}"


def username(namespace: str, replica: int) -> str:
    """How the apiserver (and so the audit log) names replica `replica`."""
    return f"system:serviceaccount:{namespace}:{account_name(replica)}"


def rbac_documents(namespace: str, replicas: int, labels: dict[str, str]) -> list[dict[str, Any]]:
    subjects = [
        {"kind": "ServiceAccount", "name": account_name(i), "namespace": namespace}
        for i in range(replicas)
    ]
    meta = {"labels": dict(labels)}
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": account_name(i), "namespace": namespace, **meta},
        }
        for i in range(replicas)
    ]
    rbac = "rbac.authorization.k8s.io/v1"
    docs += [
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": ROLE, **meta},
            "rules": RULES,
        },
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": ROLE, **meta},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": ROLE,
            },
            "subjects": subjects,
        },
        {
            "apiVersion": rbac,
            "kind": "Role",
            "metadata": {"name": ROLE, "namespace": namespace, **meta},
            "rules": LEASE_RULES,
        },
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": {"name": ROLE, "namespace": namespace, **meta},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE},
            "subjects": subjects,
        },
    ]
    return docs


def token_kubeconfig(admin_kubeconfig: Path, user: str, token: str) -> dict[str, Any]:
    """The admin kubeconfig's cluster (server + CA) with a token user instead."""
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    context = next(c for c in admin["contexts"] if c["name"] == admin["current-context"])
    cluster = next(c for c in admin["clusters"] if c["name"] == context["context"]["cluster"])
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": cluster["name"], "user": user}}],
        "current-context": user,
    }


def create(
    manager: Cluster, namespace: str, replicas: int, out_dir: Path, labels: dict[str, str]
) -> list[Path]:
    """Create the identities and write one private kubeconfig per replica."""
    kube.apply_all(manager.dyn, rbac_documents(namespace, replicas, labels))
    core = client.CoreV1Api(manager.api)
    paths = []
    for i in range(replicas):
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=None, expiration_seconds=TOKEN_SECONDS)
        )
        token = kube.wait_for(
            f"a token for {account_name(i)}",
            lambda i=i, request=request: (
                core.create_namespaced_service_account_token(
                    account_name(i), namespace, request
                ).status.token
            ),
            timeout=30,
        )
        config = token_kubeconfig(manager.kubeconfig, account_name(i), token)
        paths.append(pki.write_kubeconfig(out_dir / f"dispatcher-{i}.kubeconfig", config))
    return paths
