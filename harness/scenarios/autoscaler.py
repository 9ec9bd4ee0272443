"""A fake cluster autoscaler: answers ProvisioningRequests the way a scenario wants.

Nothing sets ProvisioningRequest conditions in a test cluster, so each scenario
says per worker what "autoscaling" does there: provision after a delay, fail
after a delay, or keep the request pending; and it can fail a request that was
already provisioned (the capacity is lost after admission): the one provisioning
failure a manager-side dispatcher sees, because only an admitted workload's
eviction reaches the manager. Kueue retries the check, the worker evicts and
requeues its copy, and the manager evicts the workload.

Not CapacityRevoked, and never failing every retry: when Kueue rejects the check
it deactivates the worker copy, MultiKueue deletes it, and the manager's eviction
never completes (its Job keeps the active count last copied from the deleted
worker Job), so the workload is stranded (Kueue v0.19.2 and v0.17.1).
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass

from harness.cluster.environment import Cluster

API = "autoscaling.x-k8s.io/v1"
PENDING = "pending"
PROVISION = "provision"
FAIL = "fail"


@dataclass(frozen=True)
class Behaviour:
    action: str = PENDING  # provision | fail | pending
    after: float = 2.0  # seconds after the request appears


class FakeAutoscaler:
    """Polls one namespace's ProvisioningRequests on some workers and answers them."""

    def __init__(
        self, workers: dict[str, Cluster], namespace: str, behaviour: dict[str, Behaviour]
    ) -> None:
        self.workers = workers
        self.namespace = namespace
        self.behaviour = dict(behaviour)
        self._seen: dict[tuple[str, str], float] = {}
        self._answered: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="fake-autoscaler", daemon=True)

    def start(self) -> FakeAutoscaler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def set(self, worker: str, behaviour: Behaviour) -> None:
        """Change what happens on a worker from now on (e.g. finally provision)."""
        self.behaviour[worker] = behaviour
        self._answered = {k for k in self._answered if k[0] != worker}

    def lose_capacity(self, worker: str) -> list[str]:
        """Fail every provisioned request on ``worker`` (Kueue retries the check, which
        evicts the workload there); later requests there fail too. Take the worker's quota
        away as well (Scenario.set_capacity): a copy that reserves quota again at once
        loses its Evicted condition before the manager has synced the stopped worker Job,
        and the manager's eviction never completes (Kueue v0.19.2 with a pending retry,
        v0.17.1 with a failing one). With Kueue's default 60 s retry backoff the retries
        are not exhausted within a scenario (see the module docstring)."""
        self.set(worker, Behaviour(FAIL, after=0))
        resource = self.workers[worker].resource(API, "ProvisioningRequest")
        revoked = []
        for pr in resource.get(namespace=self.namespace).to_dict()["items"]:
            conditions = (pr.get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Provisioned" and c["status"] == "True" for c in conditions):
                continue
            name = pr["metadata"]["name"]
            self._answered.add((worker, name))
            resource.status.patch(
                name=name,
                namespace=self.namespace,
                body={"status": {"conditions": [*conditions, _condition("Failed", pr)]}},
                content_type="application/merge-patch+json",
            )
            revoked.append(name)
        return revoked

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            for worker, cluster in self.workers.items():
                try:
                    self._answer(worker, cluster)
                except Exception:  # an apiserver may be down in some scenarios
                    continue

    def _answer(self, worker: str, cluster: Cluster) -> None:
        behaviour = self.behaviour.get(worker, Behaviour())
        resource = cluster.resource(API, "ProvisioningRequest")
        for pr in resource.get(namespace=self.namespace).to_dict()["items"]:
            key = (worker, pr["metadata"]["name"])
            first = self._seen.setdefault(key, time.monotonic())
            if key in self._answered or behaviour.action == PENDING:
                continue
            if time.monotonic() - first < behaviour.after:
                continue
            condition = "Provisioned" if behaviour.action == PROVISION else "Failed"
            resource.status.patch(
                name=key[1],
                namespace=self.namespace,
                body={"status": {"conditions": [_condition(condition, pr)]}},
                content_type="application/merge-patch+json",
            )
            self._answered.add(key)


def _condition(kind: str, pr: dict) -> dict:
    return {
        "type": kind,
        "status": "True",
        "reason": f"Fake{kind}",
        "message": f"mkdc fake autoscaler: {kind.lower()}",
        "lastTransitionTime": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "observedGeneration": pr["metadata"].get("generation", 1),
    }
