"""The Kubernetes objects scenarios make beyond their queues: what every scenario of a
run shares (ResourceFlavor, priority classes, clusterScope shared's one config), a
worker's kubeconfig Secret, ProvisioningRequest checks; and how a wait for them reads
when it times out."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from harness.cluster import inventory, kube, multikueue
from harness.cluster.environment import Environment
from harness.cluster.kueue_install import NAMESPACE, PROVISIONING_CONTROLLER
from harness.cluster.multikueue import API
from harness.scenarios import turns
from harness.scenarios.context import Shape

SHARED_SCOPE = "mkdc-shared"  # the one MultiKueueConfig (and its queue) of clusterScope shared


# A cluster whose apiserver is restarting (an injected fault) refuses connections for a
# while: a scenario's setup waits for it rather than breaking (an apply is idempotent).
UNREACHABLE = kube.UNREACHABLE
WHEN_REACHABLE = Retrying(
    retry=retry_if_exception_type(UNREACHABLE),
    wait=wait_exponential(multiplier=0.5, max=5),
    stop=stop_after_delay(60),
    reraise=True,
)


def name_before(taken: Iterable[str], base: str) -> str:
    """A valid object name ("0-" + dashes + `base`) that sorts before every name in
    `taken`: "0" is the smallest first character of a name, "-" the smallest after it."""
    first = min(taken, default=None)
    name = f"0-{base}"
    while first is not None and name >= first and len(name) < 253:
        name = f"0--{name[2:]}"
    return name


def waiting_for_quota(
    worker: str,
    cluster_queue: dict[str, Any],
    items: list[dict[str, Any]],
    everywhere: list[dict[str, Any]],
) -> str:
    """What a wait for local admission saw, in the environment's own names: each of the
    scenario's Workloads (`items`) not admitted, with Kueue's reason, and what the worker's
    ClusterQueue holds and for which Workloads (of `everywhere`, any namespace)."""
    name = cluster_queue["metadata"]["name"]
    pending = []
    for wl in items:
        if kube.condition_true(wl, "Admitted"):
            continue
        cond = kube.condition(wl, "QuotaReserved") or kube.condition(wl, "Admitted") or {}
        why = cond.get("message") or "no reason given by Kueue yet"
        pending.append(f"{wl['metadata']['namespace']}/{wl['metadata']['name']} pending ({why})")
    used = turns.held(cluster_queue)
    holds = ", ".join(f"{v} {k}" for k, v in sorted(used.items())) or "nothing"
    by = sorted(turns.holders(name, everywhere))
    whose = f" for {', '.join(by)}" if by and used else ""
    terminating = " (being deleted)" if cluster_queue["metadata"].get("deletionTimestamp") else ""
    return (
        f"{'; '.join(pending) or 'no Workload yet'}; "
        f"ClusterQueue {name}{terminating} holds {holds}{whose}"
    )


def scaled(quantity: str, units: int) -> str:
    """`units` times a quantity of whole units or Gi ("2Gi", 3 -> "6Gi")."""
    if quantity.endswith("Gi"):
        return f"{int(quantity[:-2]) * units}Gi"
    return str(int(quantity) * units)


def worker_secret(name: str, data: dict[str, str]) -> dict[str, Any]:
    """A worker's kubeconfig Secret in Kueue's namespace, holding `data` (a copy of another's)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": dict(data),
    }


def shared_documents(shape: Shape) -> list[dict[str, Any]]:
    """Cluster-scoped objects every scenario uses, made once per run on every cluster."""
    low, high = shape.priority_classes[:2]
    return [
        multikueue.resource_flavor(shape.flavor),
        workload_priority_class(low, 100),
        workload_priority_class(high, 1000),
    ]


def shared_scope_documents(env: Environment, shape: Shape) -> list[dict[str, Any]]:
    """clusterScope shared: one MultiKueueConfig over the environment's own
    MultiKueueClusters, in their order, behind one AdmissionCheck and manager ClusterQueue."""
    return [
        multikueue.multikueue_config(SHARED_SCOPE, [w.name for w in env.workers]),
        multikueue.multikueue_admission_check(SHARED_SCOPE, SHARED_SCOPE),
        multikueue.cluster_queue(
            SHARED_SCOPE,
            multikueue.DEFAULT_QUOTA | {shape.resource: "1000"},
            flavor=shape.flavor,
            admission_checks=[SHARED_SCOPE],
        ),
    ]


def create_shared_scope(env: Environment, shape: Shape, run_id: str) -> None:
    """The shared scope's objects (`shared_scope_documents`), all Active before the
    dispatcher starts. Scenarios then only add namespaces, queues and capacity, which a
    dispatcher that discovers clusters once at start does not need to see."""
    for doc in shared_scope_documents(env, shape):
        kube.apply(env.manager.dyn, inventory.label(doc, run_id))
    names = [w.name for w in env.workers]
    timeout = multikueue.active_timeout(len(names), floor=90.0)
    multikueue.wait_active(env.manager, names, [SHARED_SCOPE], timeout=timeout)


def workload_priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def provisioning_request_config(name: str) -> dict[str, Any]:
    """Kueue's default retry strategy (a failed request is retried after 60 s, doubling).
    A 1 s base makes the worker evict at once, and then the manager's eviction can start
    before the worker Job's stop reaches the manager Job: the manager keeps the quota and
    the workload is stranded (seen on v0.19.2), so failover scenarios keep the default."""
    return {
        "apiVersion": API,
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": name},
        "spec": {"provisioningClassName": "queued-provisioning.gke.io", "managedResources": []},
    }


def provisioning_admission_check(name: str) -> dict[str, Any]:
    return multikueue.admission_check(
        name, PROVISIONING_CONTROLLER, "ProvisioningRequestConfig", name
    )
