"""``explain NAMESPACE/WORKLOAD``: what the dispatcher would do for one workload, and why.

Read-only by construction: it lists and gets, then runs the same ``plan`` as the controller,
so the answer is the controller's answer at this instant (minus in-memory placement history).
"""

from __future__ import annotations

import time

from dispatchers.reference import policy, writes
from dispatchers.reference.controller import PLURALS, plan, state_to_store
from dispatchers.reference.kube import Kube, connect
from dispatchers.reference.model import key_of
from dispatchers.reference.settings import Settings


def explain_workload(settings: Settings, target: str) -> str:
    kube = Kube(connect(settings.kubeconfig))
    namespace, name = target.split("/", 1)
    workload = kube.get_workload(namespace, name)
    if workload is None:
        return f"workload {target} not found"
    snap = {plural: {key_of(o): o for o in kube.list(plural)[0]} for plural in PLURALS}
    now = time.time()
    p = plan(now, workload, snap, settings)
    status = workload.get("status") or {}
    lines = [
        f"current: nominatedClusterNames {writes.nominees_of(workload)}, "
        f"clusterName {status.get('clusterName')!r}",
    ]
    if p.route is not None:
        lines.append(
            f"route: ClusterQueue {p.route.cluster_queue} -> check {p.route.check} "
            f"-> MultiKueueConfig {p.route.config}"
        )
    if p.not_pending is not None or p.decision is None or p.view is None:
        lines.append(f"not dispatching: {p.not_pending}; nothing would be written")
        return "\n".join(lines)
    if p.state_problem:
        lines.append(f"dispatch state: {p.state_problem}")
    if p.failure is not None:
        lines.append(f"new failure to record: {p.failure.why}")
    lines.append(policy.explain(now, p.view, p.clusters, p.order, settings, p.state))
    stored = (workload["metadata"].get("annotations") or {}).get(settings.state_annotation)
    writing: list[str] = []
    if state_to_store(stored, p, p.decision, now, settings):
        writing.append(f"state annotation {settings.state_annotation}")
    if writes.nominees_of(workload) != p.decision.nominees:
        writing.append(f"nominatedClusterNames via {settings.write_mode}")
    lines.append(f"would write: {', then '.join(writing) or 'nothing'}")
    return "\n".join(lines)
