"""A scenario's world: its own namespace, the objects it made (deleted at cleanup, newest
first) and its view of the run's timeline, with its workers by position and its
MultiKueueClusters by name. The first building block of a Scenario; ClusterSet
(clusters.py) builds its queues and clusters on it, Scenario (scenario.py) its workloads.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Sequence
from typing import Any

from kubernetes.client.rest import ApiException

from harness.cluster import faults, inventory, kube
from harness.cluster.environment import Cluster
from harness.cluster.multikueue import API
from harness.errors import EnvironmentLimit
from harness.recording.timeline import MANAGER, Event, Kind, Timeline
from harness.scenarios.autoscaler import FakeAutoscaler
from harness.scenarios.context import Context, Shape
from harness.scenarios.documents import (
    UNREACHABLE,
    WHEN_REACHABLE,
)


class World:
    """One test's world: what it made, what it sees."""

    def __init__(self, ctx: Context, name: str, *, shared: bool = False) -> None:
        self.ctx = ctx
        self.name = name
        self.ns = name
        # clusterScope shared: the environment's own MultiKueueClusters and one config
        self.shared = shared
        self.shape = Shape.of(ctx.profile)
        self.members: dict[str, str] = {}  # MultiKueueCluster name -> worker name
        self.decoys: dict[str, str] = {}  # outside the config: MultiKueueCluster -> worker
        self.order: list[str] = []  # MultiKueueConfig order (cluster names)
        self.tiers: dict[str, int] = {}
        self.timeouts: dict[str, float] = {}
        self.jobs: dict[str, str] = {}  # job name -> workload key
        self.foreign: set[str] = set()
        self.started = ctx.recorder.now()
        self._saved_secrets: dict[str, dict[str, str]] = {}
        self._autoscaler: FakeAutoscaler | None = None
        self._created: list[tuple[Cluster, dict[str, Any]]] = []
        self._knobs_before: dict[str, dict[str, Any]] = {}  # shared cluster -> its metadata

    @property
    def manager(self) -> Cluster:
        return self.ctx.env.manager

    def workers(self, n: int | None = None, *, at_least: int = 1, why: str = "") -> list[str]:
        """The environment's first `n` workers (all of them when None), by position.

        A scenario states how many it needs; an environment with fewer cannot run it,
        which is an EnvironmentLimit (its checks are skipped with this reason)."""
        names = [w.name for w in self.ctx.env.workers]
        need = max(n or 0, at_least)
        if len(names) < need:
            reason = f" ({why})" if why else ""
            raise EnvironmentLimit(
                f"the scenario needs {need} worker clusters{reason}, the environment has "
                f"{len(names)}: run with more workers (--workers)"
            )
        return names[:n] if n is not None else names

    def cluster(self, worker: str) -> str:
        """This scenario's MultiKueueCluster name for a worker (shared: the worker's own)."""
        return worker if self.shared else f"{self.name}-{worker}"

    def config_order(self, workers: Sequence[str]) -> list[str]:
        """The workers in the order this scenario's config will list them: as asked, or,
        sharing the environment's config, all of the environment's workers in its order."""
        return [w.name for w in self.ctx.env.workers] if self.shared else list(workers)

    def worker_queue(self) -> str:
        return self.shape.worker_cluster_queue or self.name

    # ------------------------------------------------------------------ naming

    def _create(self, cluster: Cluster, doc: dict[str, Any]) -> None:
        doc = inventory.label(copy.deepcopy(doc), self.ctx.run_id)
        WHEN_REACHABLE(kube.apply, cluster.dyn, doc)
        self._created.append((cluster, doc))

    # --------------------------------------------------------------- observing

    def timeline(self) -> Timeline:
        """This scenario's events, worker names rewritten to its MultiKueueCluster names."""
        by_worker = {w: c for c, w in {**self.decoys, **self.members}.items()}
        keys = set(self.jobs.values())
        events: list[Event] = []
        for e in self.ctx.recorder.snapshot(self.ns):
            if e.t < self.started - 1:
                continue
            if e.workload and e.workload not in keys and e.kind != Kind.PREEMPTION:
                continue
            if not e.workload and not self._mine(e):
                continue
            cluster = by_worker.get(e.cluster, e.cluster) if e.cluster != MANAGER else MANAGER
            events.append(Event(e.t, cluster, e.kind, e.workload, e.data))
        return Timeline(events)

    def environment_faults(self) -> list[faults.Window]:
        """The injected faults (`mkdc run --inject`) that could have disturbed this scenario,
        from shortly before it started (what a fault disturbs takes time to settle)."""
        logged = [
            {**e.data, "t": e.t}
            for e in self.ctx.recorder.snapshot()
            if e.kind == Kind.ACTION and e.what == faults.ACTION
        ]
        return faults.overlapping(faults.windows(logged), self.started, self.ctx.recorder.now())

    def _mine(self, e: Event) -> bool:
        if e.kind == Kind.CLUSTER_ACTIVE:
            return e.about_cluster in self.members or e.about_cluster in self.decoys
        if e.kind == Kind.CONFIG_CHANGED:
            return e.config == self.name
        if e.kind == Kind.ACTION:
            return e.data.get("scenario") in (None, self.name)
        # the dispatcher serves every scenario
        return e.kind in (Kind.READ, Kind.FORBIDDEN)

    def wait_until(
        self, what: str, predicate: Callable[[Timeline], bool], timeout: float
    ) -> Timeline:
        def probe() -> Timeline:
            tl = self.timeline()
            if not predicate(tl):
                raise kube.NotYet(what)
            return tl

        return kube.wait_for(
            what, probe, timeout=timeout, retry_on=(kube.NotYet,), max_interval=0.5
        )

    def observe(self, seconds: float) -> None:
        """Let time pass while the recorder watches."""
        time.sleep(max(0.0, seconds))

    def observe_until(self, t: float) -> None:
        """Let time pass until the recorder's time ``t`` (a timeline event's)."""
        self.observe(t - self.ctx.recorder.now())

    def mark(self, what: str, **data: Any) -> Event:
        return self.ctx.recorder.mark(what, scenario=self.name, **data)

    # ----------------------------------------------------------------- cleanup

    def cleanup(self) -> None:
        """Delete everything this scenario created, newest first; namespaces last."""
        if self._autoscaler is not None:
            self._autoscaler.stop()
        for name, before in self._knobs_before.items():  # shared clusters as they were
            with contextlib.suppress(ApiException):
                self.manager.resource(API, "MultiKueueCluster").patch(
                    name=name,
                    body={"metadata": before},
                    content_type="application/merge-patch+json",
                )
        namespaces = []
        for cluster, doc in reversed(self._created):
            if doc["kind"] == "Namespace":
                namespaces.append((cluster, doc))
                continue
            meta = doc["metadata"]
            try:
                kube.delete(
                    cluster.dyn, doc["apiVersion"], doc["kind"], meta["name"], meta.get("namespace")
                )
            except (ApiException, *UNREACHABLE):  # the run's purge removes what is left
                pass
        for cluster, doc in namespaces:
            try:
                kube.delete(cluster.dyn, "v1", "Namespace", doc["metadata"]["name"])
            except (ApiException, *UNREACHABLE):
                pass
