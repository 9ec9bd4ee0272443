"""A least-privilege identity for an external dispatcher on the manager.

Each replica gets its own ServiceAccount (so the audit log tells replicas apart)
bound to one ClusterRole that allows only what a dispatcher needs, and a
kubeconfig with a token from the TokenRequest API. ServiceAccounts work on every
provider, unlike client certificates that need the cluster's CA key.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from harness.cluster import kube, pki
from harness.cluster.environment import Cluster

_RBAC = "rbac.authorization.k8s.io/v1"
ROLE = "mkdc-dispatcher"
EXTRA_ROLE = "mkdc-dispatcher-declared"  # the profile's run.rbac, kept apart from the baseline
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


def account_name(replica: int, account: str = ROLE) -> str:
    """Replica `replica`'s ServiceAccount: `account` (the Deployment's, or mkdc's own name)
    and the replica's number, so the audit log tells replicas apart."""
    return f"{account}-{replica}"


def username(namespace: str, replica: int, account: str = ROLE) -> str:
    """How the apiserver (and so the audit log) names replica `replica`."""
    return service_account_user(namespace, account_name(replica, account))


def service_account_user(namespace: str, name: str) -> str:
    """How the apiserver names the ServiceAccount `name` of `namespace`."""
    return f"system:serviceaccount:{namespace}:{name}"


@dataclass(frozen=True)
class Credentials:
    """What one replica authenticates with: a token kubeconfig and the same identity laid
    out as a Pod's service-account directory (token, ca.crt, namespace)."""

    kubeconfig: Path
    serviceaccount_dir: Path
    server: str  # the manager's API server URL


def rbac_documents(
    namespace: str,
    replicas: int,
    labels: dict[str, str],
    cluster_rules: Sequence[dict[str, Any]] = (),
    namespace_rules: Sequence[dict[str, Any]] = (),
    account: str = ROLE,
) -> list[dict[str, Any]]:
    """The baseline role for every replica, and the declared extra rules as roles of their
    own (so a reader of the cluster, like a reader of the report, sees what was added)."""
    subjects = [
        {"kind": "ServiceAccount", "name": account_name(i, account), "namespace": namespace}
        for i in range(replicas)
    ]
    meta = {"labels": dict(labels)}
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": account_name(i, account), "namespace": namespace, **meta},
        }
        for i in range(replicas)
    ]
    docs += _role(ROLE, None, RULES, subjects, meta)
    docs += _role(ROLE, namespace, LEASE_RULES, subjects, meta)
    if cluster_rules:
        docs += _role(EXTRA_ROLE, None, list(cluster_rules), subjects, meta)
    if namespace_rules:
        docs += _role(EXTRA_ROLE, namespace, list(namespace_rules), subjects, meta)
    return docs


def _role(
    name: str,
    namespace: str | None,
    rules: list[dict[str, Any]],
    subjects: list[dict[str, Any]],
    meta: dict[str, Any],
) -> list[dict[str, Any]]:
    """A (Cluster)Role and its binding to every replica's ServiceAccount."""
    kind = "ClusterRole" if namespace is None else "Role"
    metadata = {"name": name, **meta} | ({"namespace": namespace} if namespace else {})
    return [
        {"apiVersion": _RBAC, "kind": kind, "metadata": metadata, "rules": rules},
        {
            "apiVersion": _RBAC,
            "kind": f"{kind}Binding",
            "metadata": metadata,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
            "subjects": subjects,
        },
    ]


def describe_rules(rules: Sequence[dict[str, Any]], namespace: str | None) -> list[str]:
    """Each rule as a reader would say it: "get, list, watch secrets in kueue-system"."""
    where = f"in {namespace}" if namespace else "cluster-wide"
    lines = []
    for rule in rules:
        verbs = ", ".join(rule.get("verbs", []))
        groups = [g or "core" for g in rule.get("apiGroups", [])]
        what = ", ".join(rule.get("resources", []) or rule.get("nonResourceURLs", []))
        names = rule.get("resourceNames")
        named = f" named {', '.join(names)}" if names else ""
        group = f" ({', '.join(groups)} API group)" if groups and groups != ["core"] else ""
        lines.append(f"{verbs} {what}{group}{named} {where}")
    return lines


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
    manager: Cluster,
    namespace: str,
    replicas: int,
    out_dir: Path,
    labels: dict[str, str],
    cluster_rules: Sequence[dict[str, Any]] = (),
    namespace_rules: Sequence[dict[str, Any]] = (),
    account: str = ROLE,
) -> list[Credentials]:
    """Create the identities; write each replica's kubeconfig and service-account files."""
    docs = rbac_documents(namespace, replicas, labels, cluster_rules, namespace_rules, account)
    kube.apply_all(manager.dyn, docs)
    core = client.CoreV1Api(manager.api)
    creds = []
    for i in range(replicas):
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=None, expiration_seconds=TOKEN_SECONDS)
        )
        name = account_name(i, account)
        token = kube.wait_for(
            f"a token for {name}",
            functools.partial(_request_token, core, name, namespace, request),
            timeout=30,
        )
        config = token_kubeconfig(manager.kubeconfig, name, token)
        kubeconfig = pki.write_kubeconfig(out_dir / f"dispatcher-{i}.kubeconfig", config)
        files = {"token": token, "namespace": namespace, "ca.crt": _ca_bundle(config)}
        sa_dir = out_dir / f"dispatcher-{i}-serviceaccount"
        sa_dir.mkdir(mode=0o700, exist_ok=True)
        for name, text in files.items():
            (sa_dir / name).write_text(text)
            (sa_dir / name).chmod(0o600)
        creds.append(Credentials(kubeconfig, sa_dir, config["clusters"][0]["cluster"]["server"]))
    return creds


def _request_token(
    core: client.CoreV1Api,
    account: str,
    namespace: str,
    request: client.AuthenticationV1TokenRequest,
) -> str:
    """A token for `account` from the TokenRequest API (which answers with one or fails)."""
    status = core.create_namespaced_service_account_token(account, namespace, request).status
    if status is None or status.token is None:
        raise ValueError(f"the TokenRequest for {account} came back without a token")
    return status.token


def _ca_bundle(config: dict[str, Any]) -> str:
    """The CA the kubeconfig trusts, as a Pod's ca.crt holds it (PEM)."""
    cluster = config["clusters"][0]["cluster"]
    if "certificate-authority-data" in cluster:
        return base64.b64decode(cluster["certificate-authority-data"]).decode()
    if "certificate-authority" in cluster:
        return Path(cluster["certificate-authority"]).read_text()
    return ""  # a server with a publicly trusted certificate: the system roots apply
