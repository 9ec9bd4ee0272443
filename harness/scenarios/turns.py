"""Clean turns on shared clusters: a scenario starts only when the earlier ones left nothing.

In clusterScope shared (or with a fixed worker ClusterQueue) scenarios take turns on the
same ClusterQueues. A Workload an earlier scenario left admitted keeps holding quota there,
and the next scenario's set-up then waits for capacity that never comes: its checks would
be judged on a world the dispatcher did not make. So before a scenario starts, the harness
waits (bounded) until the earlier scenarios' Workloads (manager and worker copies), Jobs
and ProvisioningRequests are gone and every ClusterQueue of the run holds no quota; if they
are not, the scenario decides nothing and says, in one line, what is left and whose it is.

The pure part (`held`, `holders`, `reason`) reads Kueue objects as dicts; `survey` and
`wait_clean` read them from the clusters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client.rest import ApiException
from kubernetes.utils.quantity import parse_quantity

from harness.cluster import inventory, kube
from harness.cluster.environment import Environment
from harness.cluster.multikueue import API
from harness.scenarios.autoscaler import API as PROVISIONING_API

CLEAN_TURN = 90.0  # seconds: Kueue and the namespace controller finish a cleanup in a few
# what an earlier scenario may leave in its namespace, in the order a reader cares about
LEFT_KINDS = (
    ("batch/v1", "Job"),
    (API, "Workload"),
    (PROVISIONING_API, "ProvisioningRequest"),
)

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Held:
    """Quota a ClusterQueue still holds on a cluster, and the Workload holding it if found."""

    cluster: str
    cluster_queue: str
    resource: str
    amount: str
    workload: str = ""  # namespace/name, "" when no admitted Workload was found


@dataclass(frozen=True)
class Left:
    """An object an earlier scenario left in its namespace."""

    cluster: str
    kind: str
    key: str  # namespace/name; the namespace is the scenario's name


def held(cluster_queue: Obj) -> dict[str, str]:
    """resource -> the quantity a ClusterQueue's status says is reserved (nonzero only)."""
    out: dict[str, str] = {}
    for flavor in (cluster_queue.get("status") or {}).get("flavorsReservation") or []:
        for r in flavor.get("resources") or []:
            total = str(r.get("total", "0"))
            if parse_quantity(total) > 0:
                out[r["name"]] = total
    return out


def holders(cluster_queue: str, workloads: Iterable[Obj]) -> dict[str, dict[str, str]]:
    """namespace/name -> resource usage, of the Workloads holding quota in `cluster_queue`."""
    out: dict[str, dict[str, str]] = {}
    for wl in workloads:
        admission = (wl.get("status") or {}).get("admission") or {}
        if admission.get("clusterQueue") != cluster_queue:
            continue
        usage: dict[str, str] = {}
        for assignment in admission.get("podSetAssignments") or []:
            usage.update({k: str(v) for k, v in (assignment.get("resourceUsage") or {}).items()})
        meta = wl["metadata"]
        out[f"{meta['namespace']}/{meta['name']}"] = usage
    return out


def quota_held(cluster: str, cluster_queue: Obj, workloads: Iterable[Obj]) -> list[Held]:
    """What a ClusterQueue holds, each resource put on the Workload that holds it."""
    name = cluster_queue["metadata"]["name"]
    by_workload = holders(name, workloads)
    out = []
    for resource, amount in sorted(held(cluster_queue).items()):
        who = next((k for k, usage in sorted(by_workload.items()) if resource in usage), "")
        amount = by_workload[who][resource] if who else amount
        out.append(Held(cluster, name, resource, amount, who))
    return out


def _scenario(key: str) -> str:
    return key.split("/", 1)[0]


def reason(held_quota: Iterable[Held], left: Iterable[Left]) -> str:
    """One line naming what the earlier scenarios left behind ("" when nothing): quota
    first (it is what stops the next scenario), the memory a Workload holds only when it
    holds nothing else, then objects still present; the rest counted."""
    held_quota, left = list(held_quota), list(left)
    shown = [h for h in held_quota if h.resource != "memory"] or held_quota[:1]
    parts = []
    for h in shown:
        whose = (
            f" for {h.workload} from scenario {_scenario(h.workload)}"
            if h.workload
            else " (no Workload found holding it)"
        )
        parts.append(
            f"{h.cluster}: ClusterQueue {h.cluster_queue} still holds {h.amount} "
            f"{h.resource}{whose}"
        )
    named = {h.workload for h in shown}
    for o in left:
        if o.key not in named or o.kind != "Workload":
            parts.append(f"{o.cluster}: {o.kind} {o.key} from scenario {_scenario(o.key)} remains")
    if not parts:
        return ""
    more = f" (and {len(parts) - 2} more)" if len(parts) > 2 else ""
    return "; ".join(parts[:2]) + more


def survey(env: Environment, run_id: str, current: str = "") -> tuple[list[Held], list[Left]]:
    """What the run's earlier scenarios left on every cluster: quota its ClusterQueues
    still hold, and Jobs, Workloads and ProvisioningRequests in its namespaces other than
    `current` (the scenario about to start). Scenarios take turns here, so every other
    namespace of the run is an earlier scenario's."""
    quota: list[Held] = []
    left: list[Left] = []
    for cluster in env.clusters:
        workloads = inventory.items(cluster, API, "Workload")
        for cq in inventory.items(
            cluster, API, "ClusterQueue", label_selector=inventory.selector(run_id)
        ):
            quota += quota_held(cluster.name, cq, workloads)
        namespaces = {
            ns["metadata"]["name"]
            for ns in inventory.items(
                cluster, "v1", "Namespace", label_selector=inventory.selector(run_id)
            )
        } - {current}
        for api_version, kind in LEFT_KINDS:
            objs = workloads if kind == "Workload" else inventory.items(cluster, api_version, kind)
            left += [
                Left(cluster.name, kind, f"{o['metadata']['namespace']}/{o['metadata']['name']}")
                for o in objs
                if o["metadata"].get("namespace") in namespaces
            ]
    return quota, left


def wait_clean(
    env: Environment, run_id: str, current: str = "", timeout: float = CLEAN_TURN
) -> str:
    """Wait until the earlier scenarios left nothing (`survey`); "" then, else the
    `reason` naming what is still there after `timeout` seconds (or why the clusters
    could not be surveyed: a cluster that stays unreachable is no clean turn either)."""
    seen = ["nothing surveyed"]

    def clean() -> None:
        try:
            seen[0] = reason(*survey(env, run_id, current))
        except (ApiException, *kube.UNREACHABLE) as err:
            seen[0] = f"the clusters could not be surveyed for leftovers ({type(err).__name__})"
            raise
        if seen[0]:
            raise kube.NotYet(seen[0])

    try:
        kube.wait_for("the earlier scenarios' leftovers to go", clean, timeout=timeout)
    except TimeoutError:
        return seen[0]
    return ""
