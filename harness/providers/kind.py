"""The kind provider: a manager and N worker kind clusters with Kueue's release manifests.

Planning is pure (the commands and manifests for each step), execution is a thin
loop over a command runner, so every command is unit-tested without Docker.
Worker kubeconfig files hold two contexts: `internal` (current; what the manager's
Kueue uses, https://<name>-control-plane:6443 on the kind docker network) and
`external` (127.0.0.1, what the harness and kubectl use via Cluster.context).
Modes: `ci` creates fresh clusters, named `mkdc-<4 hex digits>-<cluster>` so that two runs
at once never collide, and deletes them at down(); `dev` reuses clusters named
`mkdc-<cluster>` and keeps them.
Images: `release` uses kind's published node image and Kueue's released manifests (a
registry in reach); `built` builds the node, Kueue and KWOK images here from the same
Go-module binaries as the local provider (kind_images.py) and renders the manifests from
the modules; `auto` picks `built` when registry.k8s.io does not answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.cluster import audit, inventory, kueue_install, kwok, multikueue, rundir, toolchain
from harness.cluster.environment import Cluster, Environment
from harness.cluster.versions import Versions
from harness.errors import UserError
from harness.providers import kind_images

CONFIG_DIR = Path(__file__).resolve().parent / "kind_configs"  # package data
KUEUE_URL = "https://github.com/kubernetes-sigs/kueue/releases/download/v{version}/manifests.yaml"
KWOK_URL = "https://github.com/kubernetes-sigs/kwok/releases/download/v{version}/kwok.yaml"
NS = kueue_install.NAMESPACE
KUEUE_DEPLOYMENT = "kueue-controller-manager"
KWOK_DEPLOYMENT = "kwok-controller"
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
HASH_ANNOTATION = "mkdc.x-k8s.io/config-hash"
INTERNAL, EXTERNAL = "internal", "external"
MODES = ("ci", "dev")
IMAGES = ("auto", "built", "release")
KIND_NETWORK = "kind"  # the docker network kind puts every cluster's node on
FIX = {
    "kind": "install kind (https://kind.sigs.k8s.io/docs/user/quick-start/#installation)",
    "docker": "install Docker (https://docs.docker.com/engine/install/), or run"
    " scripts/docker-engine as root on Debian or Ubuntu",
    "kubectl": "install kubectl (https://kubernetes.io/docs/tasks/tools/)",
}
# Kubernetes 1.35+ kubelets refuse a cgroup v1 host unless told otherwise.
CGROUP_V1_PATCH = "kind: KubeletConfiguration\nfailCgroupV1: false\n"
# etcd without fsync, as on the local provider: a throwaway test cluster loses nothing
# it needs on a crash, and several clusters' fsyncs on one disk made etcd time out
# requests while Kueue's CRDs were applied ("etcdserver: request timed out").
ETCD_NO_FSYNC_PATCH = (
    "kind: ClusterConfiguration\netcd:\n  local:\n    extraArgs:\n"
    '    - name: unsafe-no-fsync\n      value: "true"\n'
)
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
AUDIT_DIR = "/var/log/mkdc-audit"  # in the manager's node, a folder of the run directory
AUDIT_POLICY_FILE, AUDIT_LOG_FILE = "audit-policy.yaml", "audit.log"
Progress = Callable[[str], None]


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


# --------------------------------------------------------------- pure planning


def node_image(v: Versions) -> str:
    return f"kindest/node:v{v.kubernetes}"


def built_node_patches(v: Versions) -> list[str]:
    """kubeadm patches for a node image built here: our etcd's and CoreDNS's own tags
    (the images in the node's store; nothing is pulled)."""
    return [
        "kind: InitConfiguration\nskipPhases: [preflight]\n",
        f"kind: ClusterConfiguration\netcd:\n  local:\n    imageTag: {v.etcd}-0\n"
        f"dns:\n  imageTag: v{v.coredns}\n",
    ]


def audit_patch() -> str:
    """The manager's kube-apiserver keeps an audit log, as the local provider's does, in
    a folder of the host mounted into the node (AUDIT_DIR): the recorder tails it there."""
    args = {
        "audit-policy-file": f"{AUDIT_DIR}/{AUDIT_POLICY_FILE}",
        "audit-log-path": f"{AUDIT_DIR}/{AUDIT_LOG_FILE}",
        "audit-log-format": "json",
        "audit-log-maxbackup": "0",
    }
    server = {
        "extraArgs": [{"name": k, "value": v} for k, v in args.items()],
        "extraVolumes": [
            {"name": "mkdc-audit", "hostPath": AUDIT_DIR, "mountPath": AUDIT_DIR},
        ],
    }
    return yaml.safe_dump({"kind": "ClusterConfiguration", "apiServer": server})


def audit_policy() -> dict[str, Any]:
    """The local provider's policy, less Kueue's own requests beyond Workloads: on kind
    Kueue is a ServiceAccount of kueue-system, the group whose every request is logged
    for the dispatcher's sake."""
    rules = list(audit.POLICY["rules"])
    kueue = f"system:serviceaccount:{NS}:{KUEUE_DEPLOYMENT}"
    rules.insert(2, {"level": "None", "users": [kueue]})
    return {**audit.POLICY, "rules": rules}


def render_kind_config(
    role: str,
    v: Versions,
    config_dir: Path = CONFIG_DIR,
    *,
    image: str | None = None,
    built: bool = False,
    cgroup_v1: bool = False,
    audit_dir: Path | None = None,
) -> dict[str, Any]:
    """kind_configs/<role>.yaml with every node pinned to the node image (kind's for the
    selected Kubernetes version, or `image` built here) and the patches this host needs;
    with `audit_dir` (the manager) its apiserver's audit log is written there."""
    path = config_dir / f"{role}.yaml"
    if not path.is_file():
        raise UserError(f"kind config {path} is missing: reinstall mkdc (it ships them)")
    cfg = yaml.safe_load(path.read_text())
    for node in cfg.setdefault("nodes", [{"role": "control-plane"}]):
        node["image"] = image or node_image(v)
        if audit_dir is not None:
            mount = {"hostPath": str(audit_dir), "containerPath": AUDIT_DIR}
            node.setdefault("extraMounts", []).append(mount)
    patches = cfg.setdefault("kubeadmConfigPatches", [])
    patches.append(ETCD_NO_FSYNC_PATCH)
    if audit_dir is not None:
        patches.append(audit_patch())
    if cgroup_v1:
        patches.append(CGROUP_V1_PATCH)
    if built:
        patches += built_node_patches(v)
        cfg.setdefault("networking", {})["disableDefaultCNI"] = True  # the image's bridge
    return cfg


INOTIFY = Path("/proc/sys/fs/inotify")
INOTIFY_INSTANCES_PER_CLUSTER = 100  # kubelet, kube-proxy, containerd and the pods' watches


def inotify_too_low(clusters: int, proc: Path = INOTIFY) -> str | None:
    """kind's known limit: every node shares the host's inotify instances, and a node
    short of them fails with "too many open files" (kube-proxy first, then all that
    needs Services). One line saying the sysctl that fixes it, or None."""
    try:
        instances = int((proc / "max_user_instances").read_text())
    except (OSError, ValueError):
        return None
    need = clusters * INOTIFY_INSTANCES_PER_CLUSTER
    if instances >= need:
        return None
    return (
        f"fs.inotify.max_user_instances is {instances}, {clusters} kind clusters need about"
        f" {need}: run `sudo sysctl -w fs.inotify.max_user_instances={max(need, 1024)}"
        " fs.inotify.max_user_watches=524288` (scripts/docker-engine sets both)"
    )


def host_has_cgroup_v1() -> bool:
    return not Path("/sys/fs/cgroup/cgroup.controllers").exists()


def registry_answers(host: str = "registry.k8s.io", timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def kueue_configuration(
    defaults: dict[str, Any],
    *,
    kueue_version: str,
    manager: bool,
    dispatcher_name: str | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The release's configuration, reduced to batch/job, plus MultiKueue and the profile's extra.

    Kueue runs in a pod here, so the release's leader election, internal certificates,
    webhook and metrics ports stay as shipped (unlike the local provider's processes).
    """
    cfg = kueue_install.deep_merge(
        defaults,
        {
            "apiVersion": kueue_install.config_api_version(kueue_version),
            "kind": "Configuration",
            "namespace": NS,
            "leaderElection": {"leaderElect": True},
            "internalCertManagement": {"enable": True},
            "integrations": {"frameworks": ["batch/job"]},
        },
    )
    if manager:
        multikueue_cfg: dict[str, Any] = {"gcInterval": "30s", "workerLostTimeout": "2m"}
        if dispatcher_name:
            multikueue_cfg["dispatcherName"] = dispatcher_name
        cfg = kueue_install.deep_merge(cfg, {"multiKueue": multikueue_cfg})
    return kueue_install.deep_merge(cfg, extra or {})


def config_hash(cfg: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]


def pin_patch(cfg_hash: str | None = None) -> dict[str, Any]:
    """Run a deployment on the real node (tolerating its taint), never on a KWOK node.

    A changed config hash in the pod template restarts Kueue; an unchanged one
    (dev mode, same profile) leaves the running pod alone.
    """
    template: dict[str, Any] = {
        "spec": {
            "nodeSelector": {CONTROL_PLANE: ""},
            "tolerations": [{"key": CONTROL_PLANE, "operator": "Exists", "effect": "NoSchedule"}],
        }
    }
    if cfg_hash:
        template["metadata"] = {"annotations": {HASH_ANNOTATION: cfg_hash}}
    return {"spec": {"template": template}}


def _single(kc: dict[str, Any], name: str) -> dict[str, list[dict[str, Any]]]:
    """The current context of a kind kubeconfig, renamed to `name`."""
    ctx = next(c for c in kc["contexts"] if c["name"] == kc["current-context"])["context"]
    cluster = next(c for c in kc["clusters"] if c["name"] == ctx["cluster"])["cluster"]
    user = next(u for u in kc["users"] if u["name"] == ctx["user"])["user"]
    return {
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }


def merged_kubeconfig(current: str, parts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One kubeconfig holding each named part as a context; `current` is the current one."""
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [],
        "users": [],
        "contexts": [],
        "current-context": current,
        "preferences": {},
    }
    for name, kc in parts.items():
        for section, entries in _single(kc, name).items():
            out[section] += entries
    return out


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


def by_address(kc: dict[str, Any], address: str) -> dict[str, Any]:
    """`kind get kubeconfig --internal` with the node's address for its host name: a pod
    resolves the container's name only through CoreDNS forwarding to Docker's DNS, which
    no check here relies on; the address needs no DNS, and the apiserver's certificate
    names both."""
    for entry in kc["clusters"]:
        entry["cluster"]["server"] = re.sub(
            r"^https://[^:/]+", f"https://{address}", entry["cluster"]["server"]
        )
    return kc


def _yaml_stream(docs: Sequence[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(list(docs), sort_keys=False)


def kwok_stages(man: toolchain.Manifests) -> str:
    """The local provider's stages plus node heartbeats (kind runs a node lifecycle controller)."""
    node_dir = man.kwok_stages[0].parent.parent  # .../kustomize/stage/node
    files = [*man.kwok_stages, node_dir / "heartbeat-with-lease/node-heartbeat-with-lease.yaml"]
    return "\n---\n".join(p.read_text().strip() for p in files) + "\n"


def probe_cluster_queue() -> dict[str, Any]:
    return {
        "apiVersion": multikueue.API,
        "kind": "ClusterQueue",
        "metadata": {"name": "mkdc-probe"},
    }


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
    man: toolchain.Manifests,
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


# ------------------------------------------------------------------- executor


class KindProvider:
    """Creates (or, in dev mode, reuses) kind clusters and installs Kueue and KWOK."""

    name = "kind"
    capabilities: frozenset[str] = frozenset()
    discards_clusters = True

    def __init__(
        self,
        versions: Versions,
        workers: int = 4,
        dispatcher_name: str | None = None,
        kueue_extra: dict[str, Any] | None = None,
        mode: str = "ci",
        name_prefix: str | None = None,
        *,
        write_mode: str | None = None,
        nodes_per_worker: int = 2,
        node_capacity: dict[str, str] | None = None,
        runner: Runner = subprocess_runner,
        which: Callable[[str], str | None] = shutil.which,
        manifests: Callable[[Versions], toolchain.Manifests] = toolchain.manifests,
        wire: Callable[[Environment], None] = multikueue.wire,
        sleep: Callable[[float], None] = time.sleep,
        progress: Progress | None = None,
        parallel: bool = True,
        images: str = "auto",
        cgroup_v1: bool | None = None,
        build_images: Callable[[Versions, Path, Progress], kind_images.Built] = kind_images.prepare,
        registry_answers: Callable[[], bool] = registry_answers,
        inotify: Path | None = INOTIFY,
    ) -> None:
        if workers < 1:
            raise UserError("--workers must be at least 1")
        if images not in IMAGES:
            raise UserError(f"kind images {images!r} is not one of {', '.join(IMAGES)}")
        if mode not in MODES:
            raise UserError(f"kind mode {mode!r} is not one of {', '.join(MODES)}")
        if name_prefix is None:  # ci: a run's own names, so two runs at once never collide
            name_prefix = "mkdc" if mode == "dev" else f"mkdc-{secrets.token_hex(2)}"
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?", name_prefix):
            raise UserError(f"kind name prefix {name_prefix!r} must be a short DNS label")
        self.versions = versions
        self.worker_count = workers
        self.dispatcher_name = dispatcher_name
        self.kueue_extra = kueue_extra or {}
        self.write_mode = write_mode  # nominationWrites; None: the default for these versions
        self.mode = mode
        self.prefix = name_prefix
        self.nodes_per_worker = nodes_per_worker
        self.node_capacity = node_capacity or {"cpu": "64", "memory": "256Gi", "pods": "250"}
        self.runner, self.which, self.manifests = runner, which, manifests
        self.wire, self.sleep = wire, sleep
        self.progress = progress or (lambda _msg: None)
        self.parallel = parallel
        self.images = images
        self.build_images, self.registry_answers = build_images, registry_answers
        self.inotify = inotify
        self.cgroup_v1 = host_has_cgroup_v1() if cgroup_v1 is None else cgroup_v1
        self.node_image: str | None = None  # built here (images == "built")
        self.sources: Sources | None = None
        self.run_dir: Path | None = None
        self.created: list[str] = []  # kind clusters this provider created (ci deletes them)
        self.made_network = False  # the kind docker network did not exist before
        self.stopping = threading.Event()  # set when a parallel step failed or was interrupted

    # ---------------------------------------------------------------- lifecycle

    def up(self) -> Environment:
        self.preflight()
        man = self.manifests(self.versions)
        self._resolve_write_mode(man)
        self.run_dir = rundir.create("mkdc-kind-")  # created 0700
        try:
            self._prepare_images()
            return self._up(man)
        except BaseException:
            try:
                self.down()
            except UserError as exc:  # keep the original error; say what is left
                self.progress(str(exc))
            raise

    def down(self) -> None:
        """ci: delete the clusters this provider created; dev: keep them. Drop the run dir."""
        failed = []
        if self.mode == "ci":
            for kind_name in reversed(self.created):
                if self.runner(delete_cmd(kind_name)).returncode != 0:
                    failed.append(kind_name)
                elif self.run_dir is not None:
                    rundir.drop_cleanup(self.run_dir, self._delete_argv(kind_name))
            self.created = failed
            if self.made_network and not failed:
                self.runner(network_rm_cmd())  # refused while another kind cluster uses it
                self.made_network = False
        if self.run_dir is not None:
            rundir.remove(self.run_dir)
        if failed:
            names = ", ".join(failed)
            raise UserError(f"could not delete kind cluster(s) {names}: use `kind delete cluster`")

    def save_logs(self) -> None:
        """Each cluster's Kueue log into the run directory's logs/, where a failed run's
        artifacts are copied from (Kueue runs in a pod here, not as a process of ours)."""
        if self.run_dir is None:
            return
        logs = self.run_dir / "logs"
        logs.mkdir(exist_ok=True)
        for c in self.plan_clusters(self.run_dir):
            if c.kind_name not in self.created and self.mode == "ci":
                continue
            args = ("-n", NS, "logs", f"deployment/{KUEUE_DEPLOYMENT}", "--tail=-1")
            r = self.runner(Cmd(kubectl(c, *args)))
            text = r.stdout if r.returncode == 0 else f"kubectl logs failed: {_last_line(r)}\n"
            (logs / f"{c.name}-kueue.log").write_text(text)

    def _delete_argv(self, kind_name: str) -> list[str]:
        """`kind delete cluster` by the kind binary's full path: a later `mkdc down` may
        run without the cached kind on its PATH."""
        argv = list(delete_cmd(kind_name).argv)
        argv[0] = self.which(argv[0]) or argv[0]
        return argv

    def interrupt(self, process: str, how: str) -> None:
        raise UserError(
            f"the kind provider cannot take {process} out (faults need --provider local)"
        )

    def resume(self, process: str) -> None:
        raise UserError(f"the kind provider cannot bring {process} back")

    # ------------------------------------------------------------------- pieces

    def preflight(self) -> None:
        """docker on PATH, enough inotify instances, and a Docker engine that answers, then
        kind and kubectl on PATH: built from their Go modules (cached) when they are not."""
        if not self.which("docker"):
            raise UserError(f"docker is not on PATH: {FIX['docker']}, or use --provider local")
        low = self.inotify and inotify_too_low(self.worker_count + 1, self.inotify)
        if low:
            raise UserError(low)
        r = self.runner(Cmd(("docker", "info", "--format", "{{.ServerVersion}}")))
        if r.returncode != 0:
            raise UserError(
                f"the Docker engine does not answer (`docker info`: {_last_line(r)}): start it"
                " (e.g. `sudo systemctl start docker`, or `sudo scripts/docker-engine`) or fix"
                " DOCKER_HOST, or use --provider local"
            )
        if self.which is shutil.which and not (shutil.which("kind") and shutil.which("kubectl")):
            from harness.providers import kind_images

            tools = kind_images.node_binaries(self.versions, self.progress)
            dirs = dict.fromkeys(str(tools[name].parent) for name in ("kind", "kubectl"))
            os.environ["PATH"] = os.pathsep.join([*dirs, os.environ.get("PATH", "")])
        for tool, fix in FIX.items():
            if not self.which(tool):
                raise UserError(f"{tool} is not on PATH: {fix}, or use --provider local")

    def _prepare_images(self) -> None:
        """`built`: the node image and Kueue's and KWOK's images and manifests, made here
        (always for a Kueue source tree: no registry has its image)."""
        if self.versions.source is not None and self.images != "built":
            self.images = "built"
            self.progress("kind images: built (Kueue from a source tree)")
        if self.images == "auto":
            self.images = "release" if self.registry_answers() else "built"
            self.progress(
                f"kind images: {self.images} (registry.k8s.io "
                f"{'answers' if self.images == 'release' else 'is not in reach'})"
            )
        if self.images != "built":
            return
        assert self.run_dir is not None
        built = self.build_images(self.versions, self.run_dir, self.progress)
        self.node_image = built.node_image
        self.sources = Sources(
            kueue=str(built.kueue_manifest),
            kwok=str(built.kwok_manifest),
            images=built.images,
            worker_images=built.worker_images,
        )

    def _resolve_write_mode(self, man: toolchain.Manifests) -> None:
        """The same nominationWrites rules as the local provider, before any cluster exists."""
        minor = self.versions.kubernetes_minor
        self.write_mode = self.write_mode or kueue_install.default_write_mode(man, minor)
        why_not = kueue_install.write_mode_supported(self.write_mode, man, minor)
        if why_not:
            raise UserError(
                f"nominationWrites {self.write_mode}: {why_not} ({self.versions.describe()})"
            )
        self.kueue_extra = kueue_install.deep_merge(
            self.kueue_extra, kueue_install.write_mode_config(self.write_mode)
        )

    def plan_clusters(self, run_dir: Path) -> list[KindCluster]:
        names = ["manager", *(f"worker{i}" for i in range(1, self.worker_count + 1))]
        return [
            KindCluster(n, f"{self.prefix}-{n}", "manager" if n == "manager" else "worker", run_dir)
            for n in names
        ]

    def _up(self, man: toolchain.Manifests) -> Environment:
        assert self.run_dir is not None
        clusters = self.plan_clusters(self.run_dir)
        present = set(self._run(Cmd(("kind", "get", "clusters"))).split())
        to_create = [c for c in clusters if c.kind_name not in present]
        reused = [c.kind_name for c in clusters if c.kind_name in present]
        if reused and self.mode == "ci":
            raise UserError(
                f"kind cluster(s) {', '.join(reused)} already exist: delete them"
                f" (`kind delete cluster --name NAME`), run in dev mode to reuse them,"
                " or choose another name prefix"
            )
        if reused:
            self.progress(f"reusing kind clusters {', '.join(reused)}")
        made_network = self.mode == "ci" and self.runner(network_inspect_cmd()).returncode != 0
        if self.mode == "ci":  # a killed run's clusters go with its directory (rundir.sweep)
            for c in to_create:  # here, not in the parallel creates: one writer of the file
                rundir.add_cleanup(self.run_dir, self._delete_argv(c.kind_name))
        if made_network:  # kind makes it and never removes it: down() does, after the nodes
            self.made_network = True
            rundir.add_cleanup(self.run_dir, list(network_rm_cmd().argv))
        self._each(to_create, self._create)
        for c in clusters:
            self._write_kubeconfig(c)
        self.progress("installing Kueue (and KWOK on workers)")
        defaults = kueue_install.release_defaults(man)
        self._each(clusters, lambda c: self._install(c, man, defaults))
        env = self.environment(clusters)
        self.progress("wiring MultiKueue")
        self.wire(env)
        env.save()
        return env

    def environment(self, clusters: list[KindCluster]) -> Environment:
        assert self.run_dir is not None
        as_cluster = [Cluster(c.name, c.kubeconfig, c.role, context=EXTERNAL) for c in clusters]
        workers = as_cluster[1:]
        return Environment(
            provider=self.name,
            run_dir=self.run_dir,
            manager=as_cluster[0],
            workers=workers,
            kubernetes_version=f"v{self.versions.kubernetes}",
            kueue_version=self.versions.kueue_label,
            dispatcher_name=self.dispatcher_name,
            nomination_write_mode=self.write_mode,
            info={
                "runId": inventory.new_run_id(),
                "kindMode": self.mode,
                "kindClusters": {c.name: c.kind_name for c in clusters},
                "workerSecrets": {w.name: multikueue.worker_secret_name(w.name) for w in workers},
                **self._audit_info(clusters[0]),
            },
        )

    def _audit_info(self, manager: KindCluster) -> dict[str, str]:
        """The manager's audit log, where this run made the cluster with one (a reused dev
        cluster may predate it)."""
        audit_dir = self._audit_dir(manager)
        if audit_dir is None or manager.kind_name not in self.created:
            return {}
        return {"auditLog": str(audit_dir / AUDIT_LOG_FILE)}

    def _audit_dir(self, c: KindCluster) -> Path | None:
        """The manager's audit folder in the run directory; None for a worker, and in dev
        mode, whose clusters outlive the run directory their node would mount."""
        if c.is_worker or self.mode != "ci":
            return None
        return c.run_dir / f"{c.name}-audit"

    def _create(self, c: KindCluster) -> None:
        config = c.run_dir / f"{c.name}.kind.yaml"
        audit_dir = self._audit_dir(c)
        if audit_dir is not None:  # the log made first, so whoever runs mkdc can read it
            audit_dir.mkdir(mode=0o755, exist_ok=True)
            (audit_dir / AUDIT_POLICY_FILE).write_text(yaml.safe_dump(audit_policy()))
            (audit_dir / AUDIT_LOG_FILE).touch(mode=0o644)
        cfg = render_kind_config(
            c.role,
            self.versions,
            image=self.node_image,
            built=self.node_image is not None,
            cgroup_v1=self.cgroup_v1,
            audit_dir=audit_dir,
        )
        config.write_text(yaml.safe_dump(cfg))
        self.created.append(c.kind_name)  # before: an interrupted create leaves containers
        self.progress(f"creating kind cluster {c.kind_name}")
        self._run(create_cmd(c, config))

    def _write_kubeconfig(self, c: KindCluster) -> None:
        parts = {EXTERNAL: yaml.safe_load(self._run(kubeconfig_cmd(c.kind_name)))}
        if c.is_worker:
            internal = yaml.safe_load(self._run(kubeconfig_cmd(c.kind_name, True)))
            address = self._run(node_address_cmd(c)).strip()
            parts[INTERNAL] = by_address(internal, address)
        kc = merged_kubeconfig(INTERNAL if c.is_worker else EXTERNAL, parts)
        c.kubeconfig.write_text(yaml.safe_dump(kc))
        c.kubeconfig.chmod(0o600)

    def _install(self, c: KindCluster, man: toolchain.Manifests, defaults: dict[str, Any]) -> None:
        cfg = kueue_configuration(
            defaults,
            kueue_version=self.versions.kueue,
            manager=not c.is_worker,
            dispatcher_name=self.dispatcher_name,
            extra=None if c.is_worker else self.kueue_extra,
        )
        nodes = [
            kwok.fake_node(f"{c.name}-kwok-node{i}", self.node_capacity)
            for i in range(1, self.nodes_per_worker + 1)
        ]
        policy = self.write_mode == kueue_install.ADMISSION_POLICY and not c.is_worker
        extra = [kueue_install.admission_policy_path(man)] if policy else []
        worker_nodes = nodes if c.is_worker else ()
        for cmd in install_plan(c, self.versions, man, cfg, worker_nodes, extra, self.sources):
            self._run(cmd)

    def _each(self, clusters: list[KindCluster], fn: Callable[[KindCluster], None]) -> None:
        if not self.parallel or len(clusters) < 2:
            for c in clusters:
                fn(c)
            return
        pool = ThreadPoolExecutor(max_workers=len(clusters))
        try:
            for future in [pool.submit(fn, c) for c in clusters]:
                future.result()
        except BaseException:
            # an interrupt or a failed cluster: the others' commands stop at their next
            # step (down() deletes their clusters), nobody waits for their retries
            self.stopping.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()

    def _run(self, cmd: Cmd) -> str:
        """Run cmd (retrying up to cmd.attempts, and a kubectl command the server was only
        too busy for up to TRANSIENT_ATTEMPTS); its stdout, or UserError with stderr's tail."""
        attempt = 0
        while True:
            attempt += 1
            if self.stopping.is_set():
                raise UserError(f"`{_show(cmd.argv)}` not run: the bring-up is stopping")
            r = self.runner(cmd)
            if r.returncode == 0:
                return r.stdout
            busy = transient(cmd, r) and attempt < TRANSIENT_ATTEMPTS
            if attempt >= cmd.attempts and not busy:
                raise UserError(f"`{_show(cmd.argv)}` failed: {_last_line(r)}{self._why(cmd)}")
            self.sleep(2 * min(attempt, 4) if busy else 2)

    def _why(self, cmd: Cmd) -> str:
        """For a rollout that never finished: the namespace's last warning (a pod that
        cannot be scheduled, an image that is missing, a crashing container), so the
        error line says why and not only that it timed out."""
        if "rollout" not in cmd.argv:
            return ""
        events = (
            *cmd.argv[: cmd.argv.index("rollout")],  # kubectl, its kubeconfig, -n NAMESPACE
            "get",
            "events",
            "--field-selector=type=Warning",
            "--sort-by=.lastTimestamp",
            "-o",
            'jsonpath={range .items[*]}{.involvedObject.name}: {.reason}: {.message}{"\\n"}{end}',
        )
        lines = self.runner(Cmd(events)).stdout.strip().splitlines()
        return f" (last warning: {lines[-1].strip()})" if lines else ""


def transient(cmd: Cmd, r: Result) -> bool:
    """A kubectl command that failed because the server was busy, not because it refused."""
    return cmd.argv[:1] == ("kubectl",) and any(e in r.stderr for e in TRANSIENT_KUBECTL_ERRORS)


def _show(argv: Sequence[str]) -> str:
    """The command for an error line: no kubeconfig/context noise, long arguments cut."""
    out, skip = [], False
    for arg in argv:
        if skip or arg in ("--kubeconfig", "--context"):
            skip = not skip
            continue
        out.append(arg if len(arg) < 60 else arg[:57] + "...")
    return " ".join(out[:9])


def _last_line(r: Result) -> str:
    """What failed, in one line: kind's own `ERROR:` line when it printed one (its output
    ends in a Go stack trace, whose last line says nothing), else the last line."""
    lines = (r.stderr or r.stdout).strip().splitlines()
    errors = [line.strip() for line in lines if line.startswith("ERROR:")]
    if errors:
        return errors[0]
    return lines[-1].strip() if lines else f"exit status {r.returncode}"
