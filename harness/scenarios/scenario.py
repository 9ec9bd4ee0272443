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

import base64
import contextlib
import copy
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from kubernetes.client.rest import ApiException
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from harness.cluster import faults, inventory, kube, multikueue, workloads
from harness.cluster.environment import Cluster, Environment
from harness.cluster.kueue_install import NAMESPACE, PROVISIONING_CONTROLLER
from harness.cluster.multikueue import API
from harness.durations import parse_duration
from harness.errors import EnvironmentLimit
from harness.profile import Profile
from harness.recording.recorder import Recorder
from harness.recording.timeline import MANAGER, Event, Kind, Timeline
from harness.scenarios import turns
from harness.scenarios.autoscaler import Behaviour, FakeAutoscaler

Quota = Mapping[str, str]
NO_CAPACITY: Quota = {}
CLOSED_SERVER = "https://127.0.0.1:1"  # nothing listens: the cluster becomes inactive
HOLD_INACTIVE = 2.0  # seconds an inactive cluster must stay so before a scenario uses it
SHARED_SCOPE = "mkdc-shared"  # the one MultiKueueConfig (and its queue) of clusterScope shared
QUOTA_KEPT = 60.0  # Kueue releases an evicted workload's quota within a second


@dataclass
class Shape:
    """The environment shape a dispatcher expects (profile spec.environment)."""

    resource: str = "cpu"
    flavor: str = multikueue.DEFAULT_FLAVOR
    worker_cluster_queue: str | None = None  # one fixed name: scenarios run serially
    secret_pattern: str = "{cluster}-kubeconfig"
    priority_classes: tuple[str, ...] = ("mkdc-low", "mkdc-high")

    @classmethod
    def of(cls, profile: Profile) -> Shape:
        env = profile.environment
        classes = tuple(env.priority_classes or ()) or cls.priority_classes
        return cls(
            resource=env.resource or "cpu",
            flavor=env.flavor or multikueue.DEFAULT_FLAVOR,
            worker_cluster_queue=env.worker_cluster_queue,
            secret_pattern=env.worker_kubeconfig_secret or cls.secret_pattern,
            priority_classes=classes if len(classes) >= 2 else cls.priority_classes,
        )

    def to_report(self) -> dict[str, Any]:
        """The report's `environment.shape`."""
        return {
            "resource": self.resource,
            "flavor": self.flavor,
            "workerClusterQueue": self.worker_cluster_queue or "per scenario",
            "workerKubeconfigSecret": self.secret_pattern,
            "priorityClasses": list(self.priority_classes),
        }

    def quota(self, units: int) -> dict[str, str]:
        """Room for `units` standard workloads (1 unit of the resource, 1Gi each)."""
        quota = {self.resource: str(units), "memory": f"{max(units, 0)}Gi"}
        return quota if self.resource != "memory" else {"memory": f"{units}Gi"}

    def request(self) -> dict[str, str]:
        return (
            {self.resource: "1", "memory": "1Gi"}
            if self.resource != "memory"
            else {"memory": "1Gi"}
        )


@dataclass
class Context:
    """What every scenario of a run shares: the environment, profile, recorder."""

    env: Environment
    profile: Profile
    recorder: Recorder
    run_id: str
    slacks: Mapping[str, float | str] = field(default_factory=dict)  # durations allowed
    dispatcher_users: frozenset[str] = frozenset()
    capabilities: frozenset[str] = frozenset()
    control: Any = None  # harness.orchestrate.control.Client when the runner offers one
    worker_secrets: dict[str, str] = field(default_factory=dict)  # worker -> base Secret

    def known_users(self) -> frozenset[str]:
        """The dispatcher's users, with each Pod's where replicas share a ServiceAccount
        (seen by the recorder so far)."""
        return self.dispatcher_users | self.recorder.users()


class Scenario:
    """One test's world. Methods read as the scenario's steps."""

    def __init__(self, ctx: Context, name: str, *, shared: bool = False) -> None:
        self.ctx = ctx
        self.name = name
        self.ns = name
        # clusterScope shared: the environment's own MultiKueueClusters and one config
        self.shared = shared
        self.context_note = ""  # said with every result of this scenario that is not passed
        self.shape = Shape.of(ctx.profile)
        self.members: dict[str, str] = {}  # MultiKueueCluster name -> worker name
        self.decoys: dict[str, str] = {}  # outside the config: MultiKueueCluster -> worker
        self.order: list[str] = []  # MultiKueueConfig order (cluster names)
        self.tiers: dict[str, int] = {}
        self.timeouts: dict[str, float] = {}
        self.jobs: dict[str, str] = {}  # job name -> workload key
        self.foreign: set[str] = set()
        self.checks: list[str] = []  # the catalogue checks this scenario decides
        self.recorded: set[str] = set()  # those whose result has been written
        self.failed: dict[str, str] = {}  # check id -> message, of those recorded failed
        self.started = ctx.recorder.now()
        self._saved_secrets: dict[str, dict[str, str]] = {}
        self._autoscaler: FakeAutoscaler | None = None
        self._created: list[tuple[Cluster, dict[str, Any]]] = []
        self._knobs_before: dict[str, dict[str, Any]] = {}  # shared cluster -> its metadata

    # ------------------------------------------------------------------ naming

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

    def _create(self, cluster: Cluster, doc: dict[str, Any]) -> None:
        doc = inventory.label(copy.deepcopy(doc), self.ctx.run_id)
        WHEN_REACHABLE(kube.apply, cluster.dyn, doc)
        self._created.append((cluster, doc))

    # ------------------------------------------------------------------- setup

    def with_workers(
        self,
        workers: Sequence[str],
        *,
        capacity: Mapping[str, int] | None = None,
        tiers: Mapping[str, int] | None = None,
        timeouts: Mapping[str, str] | None = None,
        provisioning: Iterable[str] = (),
        preemption: bool = False,
        wait_active: bool = True,
    ) -> Scenario:
        """Queues for this scenario, with `workers` in this order in its MultiKueueConfig.

        capacity: worker -> how many standard workloads fit (default 0: none).
        tiers/timeouts: the dispatcher's knobs set on this scenario's MultiKueueClusters.
        provisioning: workers whose ClusterQueue has a ProvisioningRequest check.
        Sharing the environment's config (clusterScope shared), the config is that one and
        every worker of it gets queues; `workers` then only says which ones are meant.
        """
        capacity = capacity or {}
        self._create(self.manager, multikueue.namespace(self.ns))
        if self.shared:
            return self._with_shared_workers(
                capacity, tiers or {}, timeouts or {}, set(provisioning), preemption
            )
        for worker in workers:
            self._add_member(worker, (tiers or {}).get(worker), (timeouts or {}).get(worker))
            self._worker_queues(
                worker, capacity.get(worker, 0), worker in set(provisioning), preemption
            )
        self._create(self.manager, multikueue.multikueue_config(self.name, self.order))
        self._create(self.manager, multikueue.multikueue_admission_check(self.name, self.name))
        self._create(
            self.manager,
            multikueue.cluster_queue(
                self.name,
                multikueue.DEFAULT_QUOTA | {self.shape.resource: "1000"},
                flavor=self.shape.flavor,
                admission_checks=[self.name],
            ),
        )
        self._create(self.manager, multikueue.local_queue(self.name, self.ns, self.name))
        if wait_active:
            active = multikueue.active_timeout(len(self.order))
            multikueue.wait_active(self.manager, self.order, [self.name], timeout=active)
            multikueue.wait_queue_active(self.manager, self.name, self.ns, timeout=60)
        return self

    def _with_shared_workers(
        self,
        capacity: Mapping[str, int],
        tiers: Mapping[str, int],
        timeouts: Mapping[str, str],
        provisioning: set[str],
        preemption: bool,
    ) -> Scenario:
        """Queues in this scenario's namespace behind the shared config; knobs set on the
        environment's MultiKueueClusters and put back at cleanup."""
        for worker in self.config_order(()):
            self.members[worker] = worker
            self.order.append(worker)
            self._set_knobs(worker, tiers.get(worker), timeouts.get(worker))
            self._worker_queues(worker, capacity.get(worker, 0), worker in provisioning, preemption)
        self._create(self.manager, multikueue.local_queue(self.name, self.ns, SHARED_SCOPE))
        multikueue.wait_queue_active(
            self.manager, SHARED_SCOPE, self.ns, local_queue_name=self.name, timeout=60
        )
        return self

    def _set_knobs(self, name: str, tier: int | None, timeout: str | None) -> None:
        """Tier label and timeout annotation on an existing MultiKueueCluster, remembered."""
        labels, annotations = self._knob_metadata(tier, timeout)
        if tier is not None:
            self.tiers[name] = tier
        if timeout is not None:
            self.timeouts[name] = parse_duration(timeout) or 0.0
        if not labels and not annotations:
            return
        resource = self.manager.resource(API, "MultiKueueCluster")
        meta = resource.get(name=name).to_dict()["metadata"]
        self._knobs_before[name] = {
            "labels": {k: (meta.get("labels") or {}).get(k) for k in labels},
            "annotations": {k: (meta.get("annotations") or {}).get(k) for k in annotations},
        }
        resource.patch(
            name=name,
            body={"metadata": {"labels": labels, "annotations": annotations}},
            content_type="application/merge-patch+json",
        )

    def _knob_metadata(
        self, tier: int | None, timeout: str | None
    ) -> tuple[dict[str, str], dict[str, str]]:
        """(labels, annotations) that tell this dispatcher a tier and a round timeout."""
        knobs = self.ctx.profile.knobs
        labels = (
            {knobs.cluster_tier_label: str(tier)}
            if tier is not None and knobs.cluster_tier_label
            else {}
        )
        annotations = (
            {knobs.cluster_timeout_annotation: timeout}
            if timeout is not None and knobs.cluster_timeout_annotation
            else {}
        )
        return labels, annotations

    def with_decoys(self, workers: Sequence[str], *, capacity: int = 1) -> list[str]:
        """MultiKueueClusters outside this scenario's config that a dispatcher ignoring the
        config would pick first: Active on real `workers` with room for `capacity`
        workloads now, named to sort before every MultiKueueCluster on the manager, in the
        best tier (the profile's tier label, "0"; give members a higher one), and created
        last. Call after with_workers; returns their names."""
        made = []
        for worker in workers:
            taken = [
                i["metadata"]["name"]
                for i in self.manager.resource(API, "MultiKueueCluster").get().to_dict()["items"]
            ]
            name = name_before(taken, f"{self.name}-{worker}")
            self._worker_queues(worker, capacity, False, False)
            self._multikueue_cluster(name, worker, 0, None)
            self.decoys[name] = worker
            made.append(name)
        multikueue.wait_active(self.manager, made, [], timeout=multikueue.active_timeout(len(made)))
        self.mark("decoys", clusters=made)
        return made

    def _add_member(self, worker: str, tier: int | None, timeout: str | None) -> None:
        name = self.cluster(worker)
        self._multikueue_cluster(name, worker, tier, timeout)
        self.members[name] = worker
        self.order.append(name)
        if tier is not None:
            self.tiers[name] = tier
        if timeout is not None:
            self.timeouts[name] = parse_duration(timeout) or 0.0

    def _multikueue_cluster(
        self, name: str, worker: str, tier: int | None, timeout: str | None
    ) -> None:
        """A MultiKueueCluster `name` reaching `worker` through its own kubeconfig Secret,
        with the dispatcher's knobs (tier label, timeout annotation) set."""
        secret = multikueue.worker_secret_name(name, self.shape.secret_pattern)
        base = self.ctx.worker_secrets.get(worker) or multikueue.worker_secret_name(worker)
        data = (
            self.manager.resource("v1", "Secret")
            .get(name=base, namespace=NAMESPACE)
            .to_dict()["data"]
        )
        self._create(self.manager, _secret(secret, data))
        labels, annotations = self._knob_metadata(tier, timeout)
        self._create(self.manager, multikueue.multikueue_cluster(name, secret, labels, annotations))

    def _worker_queues(self, worker: str, units: int, provisioning: bool, preemption: bool) -> None:
        w = self.ctx.env.worker(worker)
        self._create(w, multikueue.namespace(self.ns))
        checks = []
        if provisioning:
            checks = [f"{self.name}-prov"]
            self._create(w, provisioning_request_config(f"{self.name}-prov"))
            self._create(w, provisioning_admission_check(f"{self.name}-prov"))
        policy = {"withinClusterQueue": "LowerPriority"} if preemption else None
        self._create(
            w,
            multikueue.cluster_queue(
                self.worker_queue(),
                self.shape.quota(units),
                flavor=self.shape.flavor,
                admission_checks=checks,
                preemption=policy,
            ),
        )
        self._create(w, multikueue.local_queue(self.name, self.ns, self.worker_queue()))

    # --------------------------------------------------------- changing things

    def set_capacity(self, worker: str, units: int) -> None:
        """Give a worker room for `units` standard workloads (0 removes it)."""
        w = self.ctx.env.worker(worker)
        cq = w.resource(API, "ClusterQueue").get(name=self.worker_queue()).to_dict()
        flavors = cq["spec"]["resourceGroups"][0]["flavors"]
        flavors[0]["resources"] = [
            {"name": r, "nominalQuota": q} for r, q in self.shape.quota(units).items()
        ]
        w.resource(API, "ClusterQueue").patch(
            name=self.worker_queue(),
            body={"spec": {"resourceGroups": cq["spec"]["resourceGroups"]}},
            content_type="application/merge-patch+json",
        )
        self.ctx.recorder.mark("capacity", cluster=self.cluster(worker), units=units)

    def add_to_config(self, worker: str, *, capacity: int = 0) -> None:
        """Add a worker to this scenario's MultiKueueConfig while workloads are pending."""
        self._own_clusters_needed("add a cluster to the config")
        if self.cluster(worker) not in self.members:
            self._add_member(worker, None, None)
            self._worker_queues(worker, capacity, False, False)
            self.order.remove(self.cluster(worker))
            multikueue.wait_active(self.manager, [self.cluster(worker)], [], timeout=60)
        self.order.append(self.cluster(worker))
        self.manager.resource(API, "MultiKueueConfig").patch(
            name=self.name,
            body={"spec": {"clusters": self.order}},
            content_type="application/merge-patch+json",
        )

    def make_inactive(self, worker: str) -> None:
        """Point this scenario's MultiKueueCluster at a closed port: Kueue loses it."""
        self._own_clusters_needed("make a cluster inactive")
        name = self.cluster(worker)
        secret = multikueue.worker_secret_name(name, self.shape.secret_pattern)
        resource = self.manager.resource("v1", "Secret")
        data = resource.get(name=secret, namespace=NAMESPACE).to_dict()["data"]
        self._saved_secrets[secret] = data
        since = self.ctx.recorder.now()
        config = yaml.safe_load(base64.b64decode(data["kubeconfig"]))
        for c in config["clusters"]:
            c["cluster"]["server"] = CLOSED_SERVER
        resource.patch(
            name=secret,
            namespace=NAMESPACE,
            body={
                "data": {"kubeconfig": base64.b64encode(yaml.safe_dump(config).encode()).decode()}
            },
            content_type="application/merge-patch+json",
        )
        limit = EnvironmentLimit(
            f"Kueue {self.ctx.env.kueue_version} marked {name} inactive, then Active again "
            "while its kubeconfig still points at a closed port: an inactive cluster cannot "
            "be held"
        )
        try:
            self.wait_until(f"{name} to be inactive", lambda tl: not self._active(name), timeout=60)
        except TimeoutError:
            if self._went_inactive(name, since):
                raise limit from None
            raise
        self.observe(HOLD_INACTIVE)  # Kueue v0.17 flips it back within milliseconds
        if self._active(name):
            raise limit

    def _own_clusters_needed(self, what: str) -> None:
        if self.shared:
            raise RuntimeError(
                f"a scenario that shares the environment's clusters cannot {what}: "
                "mark it @pytest.mark.own_clusters"
            )

    def make_active(self, worker: str) -> None:
        name = self.cluster(worker)
        secret = multikueue.worker_secret_name(name, self.shape.secret_pattern)
        self.manager.resource("v1", "Secret").patch(
            name=secret,
            namespace=NAMESPACE,
            body={"data": self._saved_secrets.pop(secret)},
            content_type="application/merge-patch+json",
        )
        multikueue.wait_active(self.manager, [name], [], timeout=60)

    def _went_inactive(self, name: str, since: float) -> bool:
        return any(
            e.about_cluster == name and not e.cluster_active and e.t >= since
            for e in self.timeline().where(Kind.CLUSTER_ACTIVE)
        )

    def _active(self, name: str) -> bool:
        obj = self.manager.resource(API, "MultiKueueCluster").get(name=name).to_dict()
        return kube.condition_true(obj, "Active")

    # ---------------------------------------------------------------- workloads

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
        requests = {k: _times(v, units) for k, v in self.shape.request().items()}
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

    def with_plain_queue(self) -> Scenario:
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
        requests = {k: _times(v, units) for k, v in self.shape.request().items()}
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

    def observe(self, seconds: float) -> None:
        """Let time pass while the recorder watches."""
        time.sleep(max(0.0, seconds))

    def observe_until(self, t: float) -> None:
        """Let time pass until the recorder's time ``t`` (a timeline event's)."""
        self.observe(t - self.ctx.recorder.now())

    def mark(self, what: str, **data: Any) -> Event:
        return self.ctx.recorder.mark(what, scenario=self.name, **data)

    # ------------------------------------------------------------ autoscaling

    def autoscale(self, behaviour: Mapping[str, Behaviour]) -> FakeAutoscaler:
        """Answer this scenario's ProvisioningRequests per worker (others stay pending)."""
        workers = {w: self.ctx.env.worker(w) for w in self.members.values()}
        self._autoscaler = FakeAutoscaler(workers, self.ns, dict(behaviour)).start()
        return self._autoscaler

    # ---------------------------------------------------------------- dispatcher

    def kill_dispatcher(
        self, replica: int = 0, what: str = "dispatcher-killed", **data: Any
    ) -> None:
        """SIGKILL a dispatcher replica (the session owns the process)."""
        self.ctx.control.call("kill-dispatcher", replica=replica)
        self.mark(what, replica=replica, **data)

    def replica_of(self, user: str) -> int:
        """The replica an audit user is (its own ServiceAccount, or its Pod's)."""
        return int(self.ctx.control.call("dispatcher-replica", user=user))

    def restart_dispatcher(self, replica: int = 0) -> None:
        self.ctx.control.call("start-dispatcher", replica=replica)
        self.mark("dispatcher-restarted", replica=replica)

    # ------------------------------------------------------------ the manager

    def take_out(self, process: str, how: str = "stop") -> None:
        """Take one of the manager's processes out (`manager-apiserver`, `manager-kueue`):
        `stop` (SIGTERM) or `kill` (SIGKILL, a crash). The scenario's own doing, judged by
        its checks; an ACTION `<process>-down` marks it."""
        self.mark(f"{process}-down", how=how)
        self.ctx.control.call("interrupt", process=process, how=how)

    def bring_back(self, process: str) -> None:
        """Start it again; returns once it serves (ACTION `<process>-back`) and, for Kueue,
        once its Job webhook hands this scenario's Jobs to MultiKueue again."""
        self.ctx.control.call("resume", process=process)
        if process.endswith("-kueue"):
            workloads.wait_handed_to_multikueue(
                self.manager, self.ns, self.name, requests=self.shape.request()
            )
        self.mark(f"{process}-back")

    # ------------------------------------------------------------------ cleanup

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


def _times(quantity: str, units: int) -> str:
    if quantity.endswith("Gi"):
        return f"{int(quantity[:-2]) * units}Gi"
    return str(int(quantity) * units)


def _secret(name: str, data: dict[str, str]) -> dict[str, Any]:
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
