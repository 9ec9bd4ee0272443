"""The kind provider: a manager and N worker kind clusters with Kueue's release manifests.

Planning is pure (the commands in kind_commands.py, what they write in kind_config.py),
execution here is a thin loop over a command runner, so every command is unit-tested
without Docker.
Worker kubeconfig files hold two contexts: `internal` (current; what the manager's
Kueue uses, https://<name>-control-plane:6443 on the kind docker network) and
`external` (127.0.0.1, what the harness and kubectl use via Cluster.context).
Modes: `ci` creates fresh clusters, named `mkdc-<4 hex digits>-<cluster>` so that two runs
at once never collide, and deletes them at down(); `dev` reuses clusters named
`mkdc-<cluster>` and keeps them.
Images: `release` uses kind's published node image and Kueue's released manifests (a
registry in reach); `built` builds the node, Kueue and KWOK images here from the same
Go-module binaries as the local provider (kind_node.py, kind_images.py) and renders the
manifests from the modules; `auto` picks `built` when registry.k8s.io does not answer.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from harness.cluster import inventory, kueue_install, kwok, multikueue, rundir, upstream
from harness.cluster.environment import Cluster, Environment
from harness.cluster.versions import Versions
from harness.errors import UserError
from harness.providers import kind_node
from harness.providers.kind_commands import (
    TRANSIENT_ATTEMPTS,
    TRANSIENT_KUBECTL_ERRORS,
    Cmd,
    KindCluster,
    Result,
    Runner,
    Sources,
    create_cmd,
    delete_cmd,
    install_plan,
    kubeconfig_cmd,
    kubectl,
    network_inspect_cmd,
    network_rm_cmd,
    node_address_cmd,
    subprocess_runner,
)
from harness.providers.kind_config import (
    AUDIT_LOG_FILE,
    AUDIT_POLICY_FILE,
    EXTERNAL,
    INTERNAL,
    KUEUE_DEPLOYMENT,
    NS,
    audit_policy,
    by_address,
    kueue_configuration,
    merged_kubeconfig,
    render_kind_config,
)

MODES = ("ci", "dev")
IMAGES = ("auto", "built", "release")
FIX = {
    "kind": "install kind (https://kind.sigs.k8s.io/docs/user/quick-start/#installation)",
    "docker": "install Docker (https://docs.docker.com/engine/install/), or run"
    " scripts/docker-engine as root on Debian or Ubuntu",
    "kubectl": "install kubectl (https://kubernetes.io/docs/tasks/tools/)",
}
Progress = Callable[[str], None]


# ------------------------------------------------------------ the host's limits


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
        wanted_gates: Mapping[str, bool] | None = None,
        nodes_per_worker: int = 2,
        node_capacity: dict[str, str] | None = None,
        runner: Runner = subprocess_runner,
        which: Callable[[str], str | None] = shutil.which,
        manifests: Callable[[Versions], upstream.Manifests] = upstream.manifests,
        wire: Callable[[Environment], None] = multikueue.wire,
        sleep: Callable[[float], None] = time.sleep,
        progress: Progress | None = None,
        parallel: bool = True,
        images: str = "auto",
        cgroup_v1: bool | None = None,
        build_images: Callable[[Versions, Path, Progress], kind_node.Built] = kind_node.prepare,
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
        # Kueue feature gates the checks need so (where the profile leaves them unset)
        self.wanted_gates = dict(wanted_gates or {})
        self.feature_gates: dict[str, bool] = {}  # the manager Kueue's, as run
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

    def _resolve_write_mode(self, man: upstream.Manifests) -> None:
        """The same nominationWrites rules as the local provider, before any cluster exists."""
        minor = self.versions.kubernetes_minor
        self.write_mode = self.write_mode or kueue_install.default_write_mode(man, minor)
        why_not = kueue_install.write_mode_supported(self.write_mode, man, minor)
        if why_not:
            raise UserError(
                f"nominationWrites {self.write_mode}: {why_not} ({self.versions.describe()})"
            )
        self.kueue_extra = kueue_install.manager_extra(
            man, self.kueue_extra, self.write_mode, self.wanted_gates
        )

    def plan_clusters(self, run_dir: Path) -> list[KindCluster]:
        names = ["manager", *(f"worker{i}" for i in range(1, self.worker_count + 1))]
        return [
            KindCluster(n, f"{self.prefix}-{n}", "manager" if n == "manager" else "worker", run_dir)
            for n in names
        ]

    def _up(self, man: upstream.Manifests) -> Environment:
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
                "kueueFeatureGates": self.feature_gates,
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

    def _install(self, c: KindCluster, man: upstream.Manifests, defaults: dict[str, Any]) -> None:
        cfg = kueue_configuration(
            defaults,
            kueue_version=self.versions.kueue,
            manager=not c.is_worker,
            dispatcher_name=self.dispatcher_name,
            extra=None if c.is_worker else self.kueue_extra,
        )
        if not c.is_worker:
            self.feature_gates = kueue_install.gates_as_run(man, cfg)
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
