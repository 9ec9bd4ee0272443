"""Scenario building blocks: one test's own queues, clusters, workloads and timeline.

Every test gets its own namespace, manager ClusterQueue, AdmissionCheck,
MultiKueueConfig and MultiKueueClusters (named `<scenario>-<worker>`, reusing each
worker's kubeconfig Secret data), plus its own worker ClusterQueues. Tests are
therefore isolated from each other and can run in parallel against one set of
clusters; a test can make "its" copy of a worker inactive, annotate it or give it
capacity without touching anybody else's. Scenarios name no worker: they take the
environment's workers by position (`workers(n)`), so any cluster names work.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Self

from harness.cluster import inventory, kube, multikueue, workloads
from harness.cluster.environment import Cluster
from harness.cluster.multikueue import API
from harness.errors import EnvironmentLimit
from harness.recording.timeline import Timeline
from harness.scenarios.autoscaler import Behaviour, FakeAutoscaler
from harness.scenarios.clusters import ClusterSet
from harness.scenarios.documents import (
    scaled,
    waiting_for_quota,
)

QUOTA_KEPT = 60.0  # Kueue releases an evicted workload's quota within a second


class Scenario(ClusterSet):
    """One test's world. Methods read as the scenario's steps."""

    def submit(
        self,
        name: str,
        *,
        run_for: str = "600s",
        priority: str | None = None,
        units: int = 1,
        queue: str | None = None,
    ) -> str:
        """Submit a Job to this scenario's LocalQueue (or `queue`); returns its Workload key."""
        requests = {k: scaled(v, units) for k, v in self.shape.request().items()}
        doc = workloads.job(
            name,
            self.ns,
            queue or self.name,
            requests=requests,
            run_for=run_for,
            priority_class=priority,
        )
        key = self._submit_and_wait(self.manager, doc)
        self.jobs[name] = key
        return key

    def _submit_and_wait(self, cluster: Cluster, doc: dict[str, Any]) -> str:
        """Submit a Job on `cluster` and return the key of the Workload Kueue makes for it."""
        name = doc["metadata"]["name"]
        workloads.submit(cluster, inventory.label(doc, self.ctx.run_id))
        wl = kube.wait_for(
            f"the Workload of Job {name} on {cluster.name}",
            lambda: workloads.workload_for_job(cluster, self.ns, name),
            timeout=30,
        )
        return f"{self.ns}/{wl['metadata']['name']}"

    def submit_many(self, prefix: str, count: int, *, run_for: str = "1s") -> list[str]:
        """Submit `count` Jobs at once; returns their Workload keys."""
        requests = self.shape.request()
        names = [f"{prefix}-{i}" for i in range(count)]
        for name in names:
            doc = workloads.job(name, self.ns, self.name, requests=requests, run_for=run_for)
            workloads.submit(self.manager, inventory.label(doc, self.ctx.run_id))

        def all_workloads() -> dict[str, str]:
            items = self.manager.resource(API, "Workload").get(namespace=self.ns).to_dict()["items"]
            owners = {
                ref["name"]: f"{self.ns}/{wl['metadata']['name']}"
                for wl in items
                for ref in wl["metadata"].get("ownerReferences") or []
                if ref.get("kind") == "Job"
            }
            if not set(names) <= set(owners):
                raise kube.NotYet(f"{len(set(names) - set(owners))} Workloads not created yet")
            return owners

        owners = kube.wait_for(f"{count} Workloads", all_workloads, timeout=120)
        for name in names:
            self.jobs[name] = owners[name]
        return [owners[n] for n in names]

    def with_plain_queue(self) -> Self:
        """A LocalQueue on the manager whose ClusterQueue has no MultiKueue check."""
        plain = f"{self.name}-plain"
        self._create(
            self.manager,
            multikueue.cluster_queue(
                plain,
                multikueue.DEFAULT_QUOTA | {self.shape.resource: "100"},
                flavor=self.shape.flavor,
            ),
        )
        self._create(self.manager, multikueue.local_queue(plain, self.ns, plain))
        multikueue.wait_queue_active(self.manager, plain, self.ns, timeout=60)
        return self

    def submit_foreign(self, name: str) -> str:
        """A Job on the plain queue: a workload no dispatcher may touch."""
        key = self.submit(name, queue=f"{self.name}-plain")
        self.foreign.add(key)
        self.mark("foreign", workload=key)
        return key

    def submit_local(self, worker: str, name: str, *, priority: str, units: int = 1) -> str:
        """A Job submitted on a worker itself (e.g. low-priority filler for preemption)."""
        requests = {k: scaled(v, units) for k, v in self.shape.request().items()}
        doc = workloads.job(
            name, self.ns, self.name, requests=requests, run_for="3600s", priority_class=priority
        )
        return self._submit_and_wait(self.ctx.env.worker(worker), doc)

    def wait_admitted_locally(self, worker: str, count: int, timeout: float = 60) -> None:
        w = self.ctx.env.worker(worker)

        def ours() -> list[dict[str, Any]]:
            return w.resource(API, "Workload").get(namespace=self.ns).to_dict()["items"]

        def admitted() -> None:
            if sum(kube.condition_true(i, "Admitted") for i in ours()) < count:
                raise kube.NotYet(f"fewer than {count} admitted on {worker}")

        what = f"{count} local workloads admitted on {worker}"
        try:
            kube.wait_for(what, admitted, timeout=timeout)
        except TimeoutError as exc:
            # what held the queue, looked up once, when it is said
            try:
                cq = w.resource(API, "ClusterQueue").get(name=self.worker_queue()).to_dict()
                everywhere = w.resource(API, "Workload").get().to_dict()["items"]
                seen = waiting_for_quota(worker, cq, ours(), everywhere)
            except Exception:  # the cluster does not answer: the timeout says enough
                raise exc from None
            raise TimeoutError(f"{exc}: {seen}") from None

    def preempt_on(self, worker: str, name: str) -> str:
        """Evict what runs on `worker` by submitting a higher-priority local Job there."""
        self.ctx.recorder.mark("evict", cluster=self.cluster(worker))
        return self.submit_local(worker, name, priority=self.shape.priority_classes[1])

    # ----------------------------------------------------------------- waiting

    def wait_placed(self, key: str, timeout: float) -> str:
        """Wait until the workload has a clusterName; returns the MultiKueueCluster name."""
        tl = self.wait_until(
            f"{key} to be placed",
            lambda tl: bool(tl.of(key).where_placed()),
            timeout=timeout,
        )
        return tl.of(key).where_placed()[-1].about_cluster

    def wait_after_eviction(
        self, key: str, what: str, done: Callable[[Timeline], bool], timeout: float
    ) -> Timeline:
        """``wait_until(done)`` for a workload the manager evicted. Kueue v0.17.1 may strand
        one that was running (Evicted, quota kept while its Job shows the active pod copied
        from the deleted worker Job; no copy is made anywhere): no dispatcher can place it
        again, so that ends the scenario as an EnvironmentLimit, not as a failed check."""

        def stranded(tl: Timeline) -> bool:
            return tl.of(key).stuck_eviction(time.monotonic(), QUOTA_KEPT) is not None

        tl = self.wait_until(
            what, lambda tl: done(tl) or stranded(tl), timeout=max(timeout, QUOTA_KEPT + 30)
        )
        if not done(tl):
            raise EnvironmentLimit(
                f"Kueue kept the quota of the workload it evicted for over {QUOTA_KEPT:.0f}s"
                " (its Job still shows the active pod copied from the deleted worker Job):"
                " no dispatcher can place it again"
            )
        return tl

    # ------------------------------------------------------------- autoscaling

    def autoscale(self, behaviour: Mapping[str, Behaviour]) -> FakeAutoscaler:
        """Answer this scenario's ProvisioningRequests per worker (others stay pending)."""
        workers = {w: self.ctx.env.worker(w) for w in self.members.values()}
        self._autoscaler = FakeAutoscaler(workers, self.ns, dict(behaviour)).start()
        return self._autoscaler

    # -------------------------------------------------------------- dispatcher

    def kill_dispatcher(
        self, replica: int = 0, what: str = "dispatcher-killed", **data: Any
    ) -> None:
        """SIGKILL a dispatcher replica (the session owns the process)."""
        self.ctx.channel().call("kill-dispatcher", replica=replica)
        self.mark(what, replica=replica, **data)

    def replica_of(self, user: str) -> int:
        """The replica an audit user is (its own ServiceAccount, or its Pod's)."""
        return int(self.ctx.channel().call("dispatcher-replica", user=user))

    def restart_dispatcher(self, replica: int = 0) -> None:
        self.ctx.channel().call("start-dispatcher", replica=replica)
        self.mark("dispatcher-restarted", replica=replica)

    # ------------------------------------------------------------- the manager

    def take_out(self, process: str, how: str = "stop") -> None:
        """Take one of the manager's processes out (`manager-apiserver`, `manager-kueue`):
        `stop` (SIGTERM) or `kill` (SIGKILL, a crash). The scenario's own doing, judged by
        its checks; an ACTION `<process>-down` marks it."""
        self.mark(f"{process}-down", how=how)
        self.ctx.channel().call("interrupt", process=process, how=how)

    def bring_back(self, process: str) -> None:
        """Start it again; returns once it serves (ACTION `<process>-back`) and, for Kueue,
        once its Job webhook hands this scenario's Jobs to MultiKueue again."""
        self.ctx.channel().call("resume", process=process)
        if process.endswith("-kueue"):
            workloads.wait_handed_to_multikueue(
                self.manager, self.ns, self.name, requests=self.shape.request()
            )
        self.mark(f"{process}-back")
