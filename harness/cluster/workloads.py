"""Jobs the scenarios submit, and reading their Workloads back."""

from __future__ import annotations

from typing import Any

from harness.cluster import kube
from harness.cluster.environment import Cluster
from harness.cluster.kueue_install import MULTIKUEUE_CONTROLLER
from harness.cluster.multikueue import API

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# KWOK's pod-complete stage reads this annotation: how long a pod "runs"
RUN_FOR = "pod-complete.stage.kwok.x-k8s.io/delay"
JITTER = "pod-complete.stage.kwok.x-k8s.io/jitter-delay"


def job(
    name: str,
    namespace: str,
    queue: str,
    *,
    requests: dict[str, str] | None = None,
    run_for: str = "1s",
    parallelism: int = 1,
    priority_class: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A batch/v1 Job for a LocalQueue; its pods complete after `run_for` on KWOK nodes."""
    meta_labels = {QUEUE_LABEL: queue, **(labels or {})}
    if priority_class:
        meta_labels[PRIORITY_LABEL] = priority_class
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": meta_labels},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "backoffLimit": 0,
            "suspend": True,
            "template": {
                # KWOK uses the jitter as the delay when it is not above it: make them equal
                "metadata": {"annotations": {RUN_FOR: run_for, JITTER: run_for}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.invalid/mkdc/sleep:1",
                            "resources": _resources(requests or {"cpu": "1", "memory": "1Gi"}),
                        }
                    ],
                },
            },
        },
    }


def _resources(requests: dict[str, str]) -> dict[str, dict[str, str]]:
    """Requests, plus equal limits for extended resources (nvidia.com/gpu...), which
    Kubernetes accepts only with a limit equal to the request."""
    extended = {
        k: v for k, v in requests.items() if "/" in k and not k.startswith("kubernetes.io/")
    }
    return {"requests": dict(requests), **({"limits": extended} if extended else {})}


def submit(cluster: Cluster, doc: dict[str, Any]) -> dict[str, Any]:
    resource = cluster.resource(doc["apiVersion"], doc["kind"])
    return resource.create(body=doc, namespace=doc["metadata"].get("namespace")).to_dict()


def workload_for_job(cluster: Cluster, namespace: str, job_name: str) -> dict[str, Any]:
    """The Workload Kueue created for a Job (found through its owner reference)."""
    workloads = cluster.resource(API, "Workload").get(namespace=namespace).to_dict()["items"]
    for wl in workloads:
        for ref in wl["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Job" and ref.get("name") == job_name:
                return wl
    raise kube.NotYet(f"no Workload for Job {namespace}/{job_name} on {cluster.name} yet")


def job_finished(cluster: Cluster, namespace: str, name: str) -> str | None:
    """'Complete' or 'Failed' once the Job has finished, else None."""
    obj = cluster.resource("batch/v1", "Job").get(name=name, namespace=namespace).to_dict()
    for kind in ("Complete", "Failed"):
        if kube.condition_true(obj, kind):
            return kind
    return None


def wait_handed_to_multikueue(
    manager: Cluster,
    namespace: str,
    queue: str,
    *,
    requests: dict[str, str] | None = None,
    timeout: float = 60,
) -> None:
    """Until Kueue's Job webhook hands this queue's Jobs to MultiKueue: a (re)started
    Kueue answers before its queue cache holds the queue, and meanwhile leaves
    `spec.managedBy` unset, so MultiKueue rejects the workload. A server-side dry run of
    a Job shows when it sets it."""
    doc = job("mkdc-probe", namespace, queue, requests=requests)
    jobs = manager.resource("batch/v1", "Job")

    def managed() -> None:
        made = jobs.create(body=doc, namespace=namespace, query_params=[("dryRun", "All")])
        if (made.to_dict().get("spec") or {}).get("managedBy") != MULTIKUEUE_CONTROLLER:
            raise kube.NotYet("Kueue's Job webhook does not hand Jobs to MultiKueue yet")

    kube.wait_for("Kueue to hand Jobs to MultiKueue", managed, timeout=timeout)
