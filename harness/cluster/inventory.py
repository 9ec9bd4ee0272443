"""What the suite created, found by one label, so cleanup never touches anything else.

Every object the suite creates carries `mkdc.x-k8s.io/run=<run id>`. On clusters
the harness does not own (the existing provider) cleanup is "delete exactly the
objects with this run's label"; snapshots let a test prove nothing was left behind.
"""

from __future__ import annotations

import copy
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from harness.cluster import kube
from harness.cluster.environment import Cluster, Environment
from harness.cluster.kueue_install import NAMESPACE
from harness.cluster.multikueue import API

RUN_LABEL = "mkdc.x-k8s.io/run"
RBAC = "rbac.authorization.k8s.io/v1"


@dataclass(frozen=True)
class Kind:
    """One kind the suite may create; `namespace` limits where namespaced ones are looked for."""

    api_version: str
    kind: str
    namespaced: bool = False
    namespace: str | None = None  # None with namespaced=True: every namespace

    def key(self, obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        return f"{meta['namespace']}/{meta['name']}" if self.namespaced else meta["name"]


# Deletion order: namespaces first (their Jobs and Workloads release the queues),
# then the Kueue objects that reference others, then what they reference.
KINDS: tuple[Kind, ...] = (
    Kind("v1", "Namespace"),
    Kind(API, "AdmissionCheck"),
    Kind(API, "MultiKueueConfig"),
    Kind(API, "ClusterQueue"),
    Kind(API, "Cohort"),
    Kind(API, "MultiKueueCluster"),
    Kind(API, "ResourceFlavor"),
    Kind(API, "WorkloadPriorityClass"),
    Kind(API, "ProvisioningRequestConfig"),
    Kind("scheduling.k8s.io/v1", "PriorityClass"),
    Kind("v1", "Secret", namespaced=True, namespace=NAMESPACE),
    Kind(RBAC, "ClusterRoleBinding"),
    Kind(RBAC, "ClusterRole"),
    Kind(RBAC, "RoleBinding", namespaced=True),
    Kind(RBAC, "Role", namespaced=True),
)


def new_run_id() -> str:
    """A label-safe id, sortable by start time and unique across parallel runs."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def selector(run_id: str) -> str:
    return f"{RUN_LABEL}={run_id}"


def label(doc: dict[str, Any], run_id: str) -> dict[str, Any]:
    """A copy of doc carrying the run label (other labels kept)."""
    out = copy.deepcopy(doc)
    meta = out.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), RUN_LABEL: run_id}
    return out


def items(cluster: Cluster, api_version: str, kind: str, **query: Any) -> list[dict[str, Any]]:
    """Objects of one kind, [] when the cluster does not serve it (CRD not installed)."""
    try:
        resource = cluster.dyn.resources.get(api_version=api_version, kind=kind)
    except ResourceNotFoundError:
        return []
    return list(resource.get(**query).to_dict().get("items") or [])


def _list(cluster: Cluster, kind: Kind, label_selector: str | None) -> list[dict[str, Any]]:
    return items(
        cluster,
        kind.api_version,
        kind.kind,
        namespace=kind.namespace,
        label_selector=label_selector,
    )


def owned(
    cluster: Cluster, run_id: str, keep: Iterable[tuple[str, str]] = ()
) -> list[tuple[Kind, dict[str, Any]]]:
    """Every object on cluster with this run's label, in deletion order, but for the
    `keep` ones ((kind, name) pairs)."""
    kept = set(keep)
    return [
        (k, obj)
        for k in KINDS
        for obj in _list(cluster, k, selector(run_id))
        if (k.kind, k.key(obj)) not in kept
    ]


def leftovers(
    env: Environment, run_id: str, keep: Iterable[tuple[str, str]] = ()
) -> dict[str, list[str]]:
    """cluster -> ["Kind/name", ...] still carrying the run label, but for the `keep` ones
    ((kind, name) pairs); empty when clean."""
    out = {}
    for cluster in env.clusters:
        names = [f"{k.kind}/{k.key(obj)}" for k, obj in owned(cluster, run_id, keep)]
        if names:
            out[cluster.name] = names
    return out


def purge(
    env: Environment,
    run_id: str,
    *,
    timeout: float = 180,
    wait: bool = True,
    keep: Iterable[tuple[str, str]] = (),
) -> None:
    """Delete exactly the objects labelled with run_id on every cluster, except the `keep`
    ones ((kind, name) pairs), and with `wait` wait until they are gone."""
    kept = set(keep)
    for cluster in env.clusters:
        for kind, obj in owned(cluster, run_id, kept):
            _delete(cluster, kind, obj)
    if not wait:
        return

    def gone() -> None:
        left = leftovers(env, run_id, kept)
        if left:
            raise kube.NotYet(f"still present: {left}")

    kube.wait_for(f"objects of run {run_id} to be deleted", gone, timeout=timeout)


def _delete(cluster: Cluster, kind: Kind, obj: dict[str, Any]) -> None:
    resource = cluster.dyn.resources.get(api_version=kind.api_version, kind=kind.kind)
    meta = obj["metadata"]
    try:
        resource.delete(name=meta["name"], namespace=meta.get("namespace"))
    except ApiException as exc:
        if exc.status != 404:
            raise


def snapshot(env: Environment, kinds: Iterable[Kind] = KINDS) -> dict[str, dict[str, list[str]]]:
    """cluster -> kind -> sorted names of every object of the suite's kinds (any label)."""
    kinds = tuple(kinds)
    return {
        c.name: {k.kind: sorted(k.key(o) for o in _list(c, k, None)) for k in kinds}
        for c in env.clusters
    }


def added(
    before: dict[str, dict[str, list[str]]], after: dict[str, dict[str, list[str]]]
) -> dict[str, dict[str, list[str]]]:
    """What `after` holds that `before` did not: {} when a run left nothing behind."""
    out: dict[str, dict[str, list[str]]] = {}
    for cluster, kinds in after.items():
        for kind, names in kinds.items():
            new = sorted(set(names) - set(before.get(cluster, {}).get(kind, [])))
            if new:
                out.setdefault(cluster, {})[kind] = new
    return out
