"""What every scenario of a run shares: the environment's shape as the dispatcher expects
it (the profile's spec.environment) and the run's context (environment, profile,
recorder, the dispatcher's users, the control channel)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.cluster import multikueue
from harness.cluster.environment import Environment
from harness.profile import Profile
from harness.recording.recorder import Recorder
from harness.scenarios.control import Client

Quota = Mapping[str, str]
NO_CAPACITY: Quota = {}


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
    control: Client | None = None  # the channel to the run that owns the dispatcher
    worker_secrets: dict[str, str] = field(default_factory=dict)  # worker -> base Secret

    def channel(self) -> Client:
        """The control channel to the process that owns the dispatcher and the clusters."""
        if self.control is None:
            raise RuntimeError("this session has no control channel to the run")
        return self.control

    def known_users(self) -> frozenset[str]:
        """The dispatcher's users, with each Pod's where replicas share a ServiceAccount
        (seen by the recorder so far)."""
        return self.dispatcher_users | self.recorder.users()
