"""A scenario's clusters and queues: its MultiKueueConfig over its own MultiKueueClusters
(named `<scenario>-<worker>`, reusing each worker's kubeconfig Secret data), the
dispatcher's knobs on them, decoys outside the config, each worker's ClusterQueue and
its capacity; and the changes a scenario makes to them while workloads wait (a cluster
added to the config, made inactive and active again).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from typing import Self

import yaml

from harness.cluster import kube, multikueue
from harness.cluster.kueue_install import NAMESPACE
from harness.cluster.multikueue import API
from harness.durations import parse_duration
from harness.errors import EnvironmentLimit
from harness.recording.timeline import Kind
from harness.scenarios.documents import (
    SHARED_SCOPE,
    name_before,
    provisioning_admission_check,
    provisioning_request_config,
    worker_secret,
)
from harness.scenarios.world import World

CLOSED_SERVER = "https://127.0.0.1:1"  # nothing listens: the cluster becomes inactive
HOLD_INACTIVE = 2.0  # seconds an inactive cluster must stay so before a scenario uses it


class ClusterSet(World):
    """A scenario's MultiKueueConfig, MultiKueueClusters and queues."""

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
    ) -> Self:
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
    ) -> Self:
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
        self._create(self.manager, worker_secret(secret, data))
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
                "declare it @conformance(..., own_clusters=True)"
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
