"""Reading Kueue objects: which workloads are ours to dispatch, and what failed where.

Pure functions over plain dicts (as the API returns them), so the rules that decide whether
the dispatcher may touch a workload at all are unit-tested without a cluster. The rule is
conservative on purpose: a write to a workload that is not pending MultiKueue work could
break Kueue's own admission (see notes §4-5), a missed write only costs a requeue.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"

Obj = Mapping[str, Any]

# "Workload evicted on worker cluster: \"worker1\", ..." and Kueue's other messages naming one
_CLUSTER_IN_MESSAGE = re.compile(r'evicted on worker cluster: \\?"([^"\\]+)\\?"', re.IGNORECASE)


def key_of(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def resource_version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def condition(obj: Obj, kind: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def condition_true(obj: Obj, kind: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond.get("status") == "True"


@dataclass(frozen=True)
class Route:
    """How a workload reaches MultiKueue: its ClusterQueue, check and config."""

    cluster_queue: str
    check: str  # AdmissionCheck name (controller kueue.x-k8s.io/multikueue)
    config: str  # MultiKueueConfig name


def cluster_queue_of(workload: Obj, local_queues: Mapping[str, Obj]) -> str | None:
    """The ClusterQueue: the admission's when quota is reserved, else via the LocalQueue."""
    status = workload.get("status") or {}
    admitted = (status.get("admission") or {}).get("clusterQueue")
    if admitted:
        return str(admitted)
    meta = workload.get("metadata") or {}
    queue = (workload.get("spec") or {}).get("queueName")
    lq = local_queues.get(f"{meta.get('namespace')}/{queue}") if queue else None
    name = ((lq or {}).get("spec") or {}).get("clusterQueue")
    return str(name) if name else None


def check_names(cluster_queue: Obj) -> list[str]:
    """AdmissionCheck names of a ClusterQueue (v1beta2 strategy, v1beta1 list accepted)."""
    spec = cluster_queue.get("spec") or {}
    strategy = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    names = [str(item.get("name")) for item in strategy if item.get("name")]
    return names + [str(n) for n in spec.get("admissionChecks") or [] if n not in names]


def multikueue_config_of(check: Obj) -> str | None:
    """The MultiKueueConfig a MultiKueue AdmissionCheck points to, None for other checks."""
    spec = check.get("spec") or {}
    if spec.get("controllerName") != MULTIKUEUE_CONTROLLER:
        return None
    params = spec.get("parameters") or {}
    if params.get("kind") != "MultiKueueConfig" or params.get("apiGroup", GROUP) != GROUP:
        return None
    return str(params["name"]) if params.get("name") else None


def route_of(
    workload: Obj,
    local_queues: Mapping[str, Obj],
    cluster_queues: Mapping[str, Obj],
    checks: Mapping[str, Obj],
) -> Route | None:
    """The MultiKueue route of a workload, or None when its queue has no MultiKueue check."""
    cq_name = cluster_queue_of(workload, local_queues)
    cq = cluster_queues.get(cq_name) if cq_name else None
    if cq is None or cq_name is None:
        return None
    for name in check_names(cq):
        config = multikueue_config_of(checks.get(name) or {})
        if config:
            return Route(cq_name, name, config)
    return None


def check_state(workload: Obj, check: str) -> Mapping[str, Any] | None:
    for state in (workload.get("status") or {}).get("admissionChecks") or []:
        if state.get("name") == check:
            return state
    return None


def not_pending_because(workload: Obj, route: Route | None) -> str | None:
    """Why the dispatcher must leave this workload alone; None when it is pending MultiKueue
    work: MultiKueue check Pending, QuotaReserved, no clusterName, not Finished, not being
    deleted, not Evicted."""
    if route is None:
        return "its ClusterQueue has no MultiKueue admission check"
    meta = workload.get("metadata") or {}
    status = workload.get("status") or {}
    state = check_state(workload, route.check)
    reasons = [
        (meta.get("deletionTimestamp") is not None, "it is being deleted"),
        (bool(status.get("clusterName")), f"it is placed on {status.get('clusterName')}"),
        (condition_true(workload, "Finished"), "it is finished"),
        (condition_true(workload, "Evicted"), "it is evicted"),
        (not condition_true(workload, "QuotaReserved"), "it has no quota reservation"),
        (state is None, f"check {route.check} has no state yet"),
        (
            state is not None and state.get("state") != "Pending",
            f"check {route.check} is {(state or {}).get('state')}",
        ),
    ]
    return next((why for hit, why in reasons if hit), None)


def cluster_active(cluster: Obj) -> bool:
    return condition_true(cluster, "Active")


@dataclass(frozen=True)
class Failure:
    """A failure of the workload on one worker, identified by ``mark`` for deduplication."""

    cluster: str
    mark: str  # e.g. "Evicted@2026-01-01T00:00:00Z": one per condition transition
    why: str


_CHECK_EVICTION = "admission check is false"  # v0.17: the worker is not named


def failure_of(workload: Obj, last_cluster: str | None = None) -> Failure | None:
    """The latest failure on a worker that is visible on the manager Workload.

    Kueue evicts the manager Workload when its copy is evicted from the worker (worker
    preemption, or a worker-side admission check such as a ProvisioningRequest going to
    Retry after admission): Evicted=True "... Workload evicted on worker cluster: "w1" ...",
    and once quota is reserved again Evicted=False "Previously: <that message>" with a new
    transition time. The dispatcher only acts on pending workloads, so it sees the second
    form, once per eviction: its transition time is the deduplication mark (the check's
    state is reset to Pending by then, so it is not read). ``last_cluster`` is the placement
    this process saw before, for messages that name no cluster ("Admitting remote lost";
    Kueue v0.17's "At least one admission check is false").
    """
    evicted = condition(workload, "Evicted")
    if evicted is None:
        return None
    message = str(evicted.get("message") or "")
    cluster = cluster_in(message)
    if cluster is None and ("Admitting remote" in message or _CHECK_EVICTION in message.lower()):
        cluster = last_cluster
    if not cluster:
        return None
    mark = f"Evicted@{evicted.get('lastTransitionTime')}"
    return Failure(cluster, mark, f"evicted from {cluster}: {message[:200]}")


def cluster_in(message: str) -> str | None:
    """The cluster named in Kueue's eviction message, if any."""
    match = _CLUSTER_IN_MESSAGE.search(message)
    return match.group(1) if match else None
