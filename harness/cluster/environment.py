"""What a provider hands to the suite: kubeconfigs for a manager and its workers."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, dynamic

from harness.cluster import kube

ENV_FILE = "environment.json"


@dataclass
class Cluster:
    """One cluster as the harness reaches it."""

    name: str
    kubeconfig: Path
    role: str  # "manager" | "worker"
    endpoints: dict[str, int] = field(default_factory=dict)  # component -> port
    # The kubeconfig context the harness uses (None: its current-context). A worker's
    # current-context is how the manager's Kueue reaches it, which may differ (kind).
    context: str | None = None

    @functools.cached_property
    def api(self) -> client.ApiClient:
        return kube.api_client(self.kubeconfig, self.context)

    @functools.cached_property
    def dyn(self) -> dynamic.DynamicClient:
        return kube.dynamic_client(self.api)

    def resource(self, api_version: str, kind: str) -> Any:
        return kube.resource(self.dyn, api_version, kind)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kubeconfig": str(self.kubeconfig),
            "role": self.role,
            "endpoints": self.endpoints,
            "context": self.context,
        }


@dataclass
class Environment:
    """A running manager + workers, whichever provider made it."""

    provider: str
    run_dir: Path
    manager: Cluster
    workers: list[Cluster]
    kubernetes_version: str
    kueue_version: str
    dispatcher_name: str | None
    nomination_write_mode: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def worker(self, name: str) -> Cluster:
        for w in self.workers:
            if w.name == name:
                return w
        raise KeyError(name)

    @property
    def clusters(self) -> list[Cluster]:
        return [self.manager, *self.workers]

    def save(self) -> Path:
        path = self.run_dir / ENV_FILE
        path.write_text(
            json.dumps(
                {
                    "provider": self.provider,
                    "run_dir": str(self.run_dir),
                    "manager": self.manager.to_dict(),
                    "workers": [w.to_dict() for w in self.workers],
                    "kubernetes_version": self.kubernetes_version,
                    "kueue_version": self.kueue_version,
                    "dispatcher_name": self.dispatcher_name,
                    "nomination_write_mode": self.nomination_write_mode,
                    "info": self.info,
                },
                indent=2,
            )
        )
        path.chmod(0o600)
        return path

    @classmethod
    def load(cls, run_dir: Path) -> Environment:
        raw = json.loads((run_dir / ENV_FILE).read_text())

        def cluster(c: dict[str, Any]) -> Cluster:
            return Cluster(
                c["name"],
                Path(c["kubeconfig"]),
                c["role"],
                c.get("endpoints", {}),
                c.get("context"),
            )

        return cls(
            provider=raw["provider"],
            run_dir=Path(raw["run_dir"]),
            manager=cluster(raw["manager"]),
            workers=[cluster(w) for w in raw["workers"]],
            kubernetes_version=raw["kubernetes_version"],
            kueue_version=raw["kueue_version"],
            dispatcher_name=raw.get("dispatcher_name"),
            nomination_write_mode=raw.get("nomination_write_mode"),
            info=raw.get("info", {}),
        )
