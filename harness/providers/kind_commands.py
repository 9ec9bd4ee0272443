"""The commands the kind provider runs, as values: each step's argv (kind, kubectl,
docker) planned from the cluster and the versions, and the runner that executes one,
so every command is unit-tested without Docker."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.cluster import kueue_install, upstream
from harness.cluster.versions import Versions
from harness.providers.kind_config import (
    CONTROL_PLANE,
    EXTERNAL,
    KUEUE_DEPLOYMENT,
    NS,
    config_hash,
    kwok_stages,
    pin_patch,
    probe_cluster_queue,
)

KUEUE_URL = "https://github.com/kubernetes-sigs/kueue/releases/download/v{version}/manifests.yaml"
KWOK_URL = "https://github.com/kubernetes-sigs/kwok/releases/download/v{version}/kwok.yaml"
KWOK_DEPLOYMENT = "kwok-controller"


KIND_NETWORK = "kind"  # the docker network kind puts every cluster's node on


# What kubectl prints when the server was only too busy or restarting, not refusing:
# the command is idempotent (apply, patch, wait), so it is made again.
TRANSIENT_KUBECTL_ERRORS = (
    "etcdserver: request timed out",
    "etcdserver: leader changed",
    "(InternalError)",
    "(ServiceUnavailable)",
    "(TooManyRequests)",
    "(Timeout)",
    "TLS handshake timeout",
    "connection refused",
    "http2: client connection lost",
    "i/o timeout",
)
TRANSIENT_ATTEMPTS = 6


@dataclass(frozen=True)
class Cmd:
    """One command; `attempts` > 1 retries it (with a pause) until it succeeds."""

    argv: tuple[str, ...]
    stdin: str | None = None
    attempts: int = 1


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str = ""
    stderr: str = ""


Runner = Callable[[Cmd], Result]


def subprocess_runner(cmd: Cmd) -> Result:
    try:
        p = subprocess.run(
            list(cmd.argv), input=cmd.stdin, capture_output=True, text=True, check=False
        )
    except OSError as exc:
        return Result(127, "", str(exc))
    return Result(p.returncode, p.stdout, p.stderr)


@dataclass(frozen=True)
class KindCluster:
    """One harness cluster (`manager`, `worker1`, ...) and its kind cluster."""

    name: str
    kind_name: str
    role: str
    run_dir: Path

    @property
    def is_worker(self) -> bool:
        return self.role == "worker"

    @property
    def kubeconfig(self) -> Path:
        return self.run_dir / f"{self.name}.kubeconfig"

    @property
    def node(self) -> str:
        return f"{self.kind_name}-control-plane"


def kubectl(c: KindCluster, *args: str) -> tuple[str, ...]:
    return ("kubectl", "--kubeconfig", str(c.kubeconfig), "--context", EXTERNAL, *args)


def create_cmd(c: KindCluster, config_path: Path) -> Cmd:
    """`kind create cluster`, writing its kubeconfig to the run dir, not ~/.kube/config."""
    kind_kubeconfig = c.run_dir / f"{c.name}.kind-kubeconfig"
    args = ["--name", c.kind_name, "--config", str(config_path)]
    args += ["--kubeconfig", str(kind_kubeconfig), "--wait", "300s"]  # a loaded machine
    return Cmd(("kind", "create", "cluster", *args))


def delete_cmd(kind_name: str) -> Cmd:
    return Cmd(("kind", "delete", "cluster", "--name", kind_name))


def kubeconfig_cmd(kind_name: str, internal: bool = False) -> Cmd:
    flags = ("--internal",) if internal else ()
    return Cmd(("kind", "get", "kubeconfig", *flags, "--name", kind_name))


def network_inspect_cmd() -> Cmd:
    return Cmd(("docker", "network", "inspect", "--format", "{{.Name}}", KIND_NETWORK))


def network_rm_cmd() -> Cmd:
    return Cmd(("docker", "network", "rm", KIND_NETWORK))


def node_address_cmd(c: KindCluster) -> Cmd:
    """The node's address on the kind network, which the other clusters' pods reach."""
    template = f'{{{{(index .NetworkSettings.Networks "{KIND_NETWORK}").IPAddress}}}}'
    return Cmd(("docker", "inspect", "--format", template, c.node))


def _yaml_stream(docs: Sequence[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(list(docs), sort_keys=False)


@dataclass(frozen=True)
class Sources:
    """Where Kueue's and KWOK's install manifests come from (a release URL or a file
    rendered here), and image archives to load into the nodes first."""

    kueue: str
    kwok: str
    images: tuple[Path, ...] = ()  # every cluster
    worker_images: tuple[Path, ...] = ()


def release_sources(v: Versions) -> Sources:
    return Sources(KUEUE_URL.format(version=v.kueue), KWOK_URL.format(version=v.kwok))


def install_plan(
    c: KindCluster,
    v: Versions,
    man: upstream.Manifests,
    kueue_cfg: dict[str, Any],
    nodes: Sequence[dict[str, Any]] = (),
    extra_manifests: Sequence[Path] = (),
    sources: Sources | None = None,
) -> list[Cmd]:
    """Every command that installs Kueue (and KWOK on workers) on one cluster, in order.

    `extra_manifests` (e.g. Kueue's clear-nominated-cluster-names admission policy on
    the manager) are applied once the CRDs they may refer to are established.
    """
    src = sources or release_sources(v)

    def k(*args: str, stdin: str | None = None, attempts: int = 1) -> Cmd:
        return Cmd(kubectl(c, *args), stdin, attempts)

    apply = ("apply", "--server-side", "--force-conflicts")
    rollout = ("rollout", "status", "--timeout=300s")
    worker = c.is_worker
    archives = [*src.images, *(src.worker_images if worker else ())]
    loads = [
        Cmd(("kind", "load", "image-archive", str(a), "--name", c.kind_name)) for a in archives
    ]
    kwok = [k(*apply, "-f", src.kwok)] if worker else []
    cmds = [
        *loads,
        k(*apply, "-f", src.kueue),
        k(*apply, "-f", str(man.provisioning_request_crd)),
        *kwok,
        k("wait", "--for=condition=Established", "crd", "--all", "--timeout=120s"),
    ]
    if worker:
        cmds.append(k(*apply, "-f", "-", stdin=kwok_stages(man)))
    cm = _yaml_stream([kueue_install.manager_config_map(kueue_cfg, v.kueue)])
    cmds.append(k(*apply, "--field-manager=mkdc", "-f", "-", stdin=cm))
    cmds += [k(*apply, "-f", str(path)) for path in extra_manifests]
    if worker:  # Job pods must land on KWOK nodes, never pull images on the real one
        cmds.append(k("taint", "node", c.node, f"{CONTROL_PLANE}=:NoSchedule", "--overwrite"))
    patch = json.dumps(pin_patch(config_hash(kueue_cfg)), sort_keys=True)
    cmds.append(k("-n", NS, "patch", "deployment", KUEUE_DEPLOYMENT, "-p", patch))
    if worker:
        patch = json.dumps(pin_patch(), sort_keys=True)
        cmds.append(k("-n", "kube-system", "patch", "deployment", KWOK_DEPLOYMENT, "-p", patch))
    cmds.append(k("-n", NS, *rollout, f"deployment/{KUEUE_DEPLOYMENT}"))
    if worker:
        cmds += [
            k("-n", "kube-system", *rollout, f"deployment/{KWOK_DEPLOYMENT}"),
            k(*apply, "-f", "-", stdin=_yaml_stream(nodes)),
            k("wait", "--for=condition=Ready", "node", "-l", "type=kwok", "--timeout=120s"),
        ]
    # the cluster's DNS answers (it reaches the apiserver through the Service network)
    cmds.append(k("-n", "kube-system", *rollout, "deployment/coredns"))
    # Kueue's webhooks answer only once its certificates are in place
    probe = _yaml_stream([probe_cluster_queue()])
    cmds.append(k("create", "--dry-run=server", "-o", "name", "-f", "-", stdin=probe, attempts=60))
    return cmds
