"""MultiKueue wiring: the objects that connect a manager to its workers.

Builders return plain dicts (server-side applied by `kube.apply`), so the same
shapes serve the default wiring of `mkdc up` and the per-test queues of the suite.
"""

from __future__ import annotations

import base64
from typing import Any

import yaml

from harness import templates
from harness.cluster import kube
from harness.cluster.environment import Cluster, Environment
from harness.cluster.kueue_install import MULTIKUEUE_CONTROLLER, NAMESPACE
from harness.cluster.upstream import KUEUE_API_GROUP, KUEUE_API_VERSION

API = f"{KUEUE_API_GROUP}/{KUEUE_API_VERSION}"
DEFAULT_NAME = "mkdc"
DEFAULT_FLAVOR = "default-flavor"
DEFAULT_QUOTA = {"cpu": "1000", "memory": "4000Gi"}
WORKER_QUOTA = {"cpu": "16", "memory": "64Gi"}
SECRET_PATTERN = "multikueue-{cluster}"
ACTIVE_PER_CLUSTER = 3.0  # seconds more, per MultiKueueCluster, to wait for them to be Active


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": labels or {}},
    }


def resource_flavor(name: str = DEFAULT_FLAVOR) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}}


def cluster_queue(
    name: str,
    quota: dict[str, str],
    *,
    flavor: str = DEFAULT_FLAVOR,
    admission_checks: list[str] | None = None,
    preemption: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": list(quota),
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()],
                    }
                ],
            }
        ],
    }
    if admission_checks:
        spec["admissionChecksStrategy"] = {
            "admissionChecks": [{"name": n} for n in admission_checks]
        }
    if preemption:
        spec["preemption"] = preemption
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, ns: str, cluster_queue_name: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterQueue": cluster_queue_name},
    }


def kubeconfig_secret(name: str, kubeconfig: dict[str, Any]) -> dict[str, Any]:
    data = base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {"kubeconfig": data},
    }


def multikueue_cluster(name: str, secret: str, labels=None, annotations=None) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "MultiKueueCluster",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}},
    }


def multikueue_config(name: str, clusters: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "MultiKueueConfig",
        "metadata": {"name": name},
        "spec": {"clusters": list(clusters)},
    }


def admission_check(
    name: str, controller: str, parameters_kind: str, parameters: str
) -> dict[str, Any]:
    """An AdmissionCheck handled by `controller`, configured by a Kueue parameters object."""
    return {
        "apiVersion": API,
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": {
            "controllerName": controller,
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": parameters_kind,
                "name": parameters,
            },
        },
    }


def multikueue_admission_check(name: str, config: str) -> dict[str, Any]:
    return admission_check(name, MULTIKUEUE_CONTROLLER, "MultiKueueConfig", config)


def worker_secret_name(cluster: str, pattern: str = SECRET_PATTERN) -> str:
    """The name of a worker's kubeconfig Secret on the manager (see harness.templates)."""
    return templates.render(pattern, {"cluster": cluster})


def register_workers(env: Environment, pattern: str = SECRET_PATTERN) -> None:
    """A kubeconfig Secret and a MultiKueueCluster on the manager for every worker."""
    for worker in env.workers:
        secret = worker_secret_name(worker.name, pattern)
        config = yaml.safe_load(worker.kubeconfig.read_text())
        kube.apply(env.manager.dyn, kubeconfig_secret(secret, config))
        kube.apply(env.manager.dyn, multikueue_cluster(worker.name, secret))


def active_timeout(clusters: int, floor: float = 60.0) -> float:
    """How long to wait for `clusters` MultiKueueClusters to be Active: Kueue connects to
    each worker and starts its watches there, so the wait grows with their number."""
    return floor + ACTIVE_PER_CLUSTER * clusters


def wire(
    env: Environment,
    name: str = DEFAULT_NAME,
    timeout: float | None = None,
    secret_pattern: str = SECRET_PATTERN,
) -> None:
    """Default wiring: every worker in one MultiKueueConfig behind one LocalQueue."""
    if timeout is None:
        timeout = active_timeout(len(env.workers), floor=90.0)
    register_workers(env, secret_pattern)
    check = f"{name}-multikueue"
    manager_docs = [
        namespace(name),
        resource_flavor(),
        multikueue_config(name, [w.name for w in env.workers]),
        multikueue_admission_check(check, name),
        cluster_queue(name, DEFAULT_QUOTA, admission_checks=[check]),
        local_queue(name, name, name),
    ]
    kube.apply_all(env.manager.dyn, manager_docs)
    for worker in env.workers:
        kube.apply_all(
            worker.dyn,
            [
                namespace(name),
                resource_flavor(),
                cluster_queue(name, WORKER_QUOTA),
                local_queue(name, name, name),
            ],
        )
    wait_active(env.manager, [w.name for w in env.workers], [check], timeout=timeout)
    for cluster in env.clusters:
        wait_queue_active(cluster, name, name, timeout=timeout)


def wait_active(
    manager: Cluster, clusters: list[str], checks: list[str], *, timeout: float
) -> None:
    """Every named MultiKueueCluster and AdmissionCheck reports Active=True."""

    def probe() -> None:
        for kind, names in (("MultiKueueCluster", clusters), ("AdmissionCheck", checks)):
            resource = manager.resource(API, kind)
            for n in names:
                obj = resource.get(name=n).to_dict()
                if not kube.condition_true(obj, "Active"):
                    cond = kube.condition(obj, "Active") or {}
                    raise kube.NotYet(
                        f"{kind} {n} not Active: {cond.get('message', 'no condition yet')}"
                    )

    kube.wait_for("MultiKueue clusters and admission checks to be Active", probe, timeout=timeout)


def wait_queue_active(
    cluster: Cluster,
    cluster_queue_name: str,
    ns: str,
    *,
    local_queue_name: str | None = None,
    timeout: float,
) -> None:
    """The ClusterQueue and LocalQueue are Active (Kueue's Job webhook needs that)."""

    def probe() -> None:
        cq = cluster.resource(API, "ClusterQueue").get(name=cluster_queue_name).to_dict()
        lq = (
            cluster.resource(API, "LocalQueue")
            .get(name=local_queue_name or cluster_queue_name, namespace=ns)
            .to_dict()
        )
        for what, obj in (("ClusterQueue", cq), ("LocalQueue", lq)):
            if not kube.condition_true(obj, "Active"):
                cond = kube.condition(obj, "Active") or {}
                raise kube.NotYet(f"{cluster.name} {what} not Active: {cond.get('message', '')}")

    kube.wait_for(f"queues on {cluster.name} to be Active", probe, timeout=timeout)
