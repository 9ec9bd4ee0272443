"""The local provider: every cluster is a set of real processes on 127.0.0.1.

One etcd (a distinct key prefix per cluster), and per cluster a kube-apiserver,
a kube-controller-manager (job, garbage collector, namespace, service account
controllers) and the real kueue binary; workers add kube-scheduler and KWOK
with fake nodes so Job pods really run and complete.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import ssl
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from harness.cluster import (
    audit,
    kube,
    kueue_install,
    kwok,
    multikueue,
    pki,
    rundir,
    toolchain,
    upstream,
    workloads,
)
from harness.cluster.environment import Environment
from harness.cluster.procs import Supervisor, free_port
from harness.cluster.versions import Versions
from harness.errors import UserError
from harness.providers import FAULTS
from harness.providers.local_processes import (
    LocalCluster,
    apiserver_command,
    controller_manager_command,
    etcd_command,
    go_runtime,
    kueue_command,
    kwok_command,
    process_kind,
    scheduler_command,
    stop_layer,
)

MANAGER = "manager"
Progress = Callable[[str], None]

NODE_CAPACITY = {"cpu": "64", "memory": "256Gi", "pods": "250"}  # each fake node


class LocalProvider:
    """Starts and stops one manager + N workers as local processes."""

    name = "local"
    capabilities = frozenset({FAULTS})
    discards_clusters = True

    def __init__(
        self,
        versions: Versions,
        *,
        workers: int | Sequence[str] = 4,
        secret_pattern: str | None = None,
        dispatcher_name: str | None = None,
        kueue_extra: dict[str, Any] | None = None,
        wanted_gates: Mapping[str, bool] | None = None,
        write_mode: str | None = None,
        outlive_parent: bool = False,
        nodes_per_worker: int = 2,
        node_capacity: dict[str, str] | None = None,
        progress: Progress | None = None,
    ) -> None:
        names = (
            [f"worker{i}" for i in range(1, workers + 1)] if isinstance(workers, int) else workers
        )
        if len(names) < 1:
            raise UserError("--workers must be at least 1")
        self.versions = versions
        self.worker_names = list(names)
        self.worker_count = len(names)
        # each worker's kubeconfig Secret on the manager, as the dispatcher expects it named
        self.secret_pattern = secret_pattern or multikueue.SECRET_PATTERN
        self.dispatcher_name = dispatcher_name
        self.kueue_extra = kueue_extra or {}
        # Kueue feature gates the checks need so (where the profile leaves them unset)
        self.wanted_gates = dict(wanted_gates or {})
        self.feature_gates: dict[str, bool] = {}  # the manager Kueue's, as run
        self.write_mode = write_mode  # None: the default for these versions
        self.nodes_per_worker = nodes_per_worker
        self.node_capacity = node_capacity or dict(NODE_CAPACITY)
        self.progress = progress or (lambda _msg: None)
        self.outlive_parent = outlive_parent
        self.run_dir: Path | None = None
        self.supervisor: Supervisor | None = None
        self.clusters: dict[str, LocalCluster] = {}
        self.argv: dict[str, list[str]] = {}
        self.env: dict[str, dict[str, str]] = {}
        self.etcd_port = 0
        self._checked: tuple[dict[str, Path], upstream.Manifests, str] | None = None

    # ---------------------------------------------------------------- lifecycle

    def check(self) -> tuple[dict[str, Path], upstream.Manifests, str]:
        """The binaries and manifests a bring-up needs, and the write mode it uses (the
        profile's, or the versions' default) where they support it; UserError saying what
        is missing or wrong. Nothing is started or written; looked up once."""
        if self._checked is None:
            self._checked = self._inputs()
        return self._checked

    def _inputs(self) -> tuple[dict[str, Path], upstream.Manifests, str]:
        bins = self._binaries()
        man = upstream.manifests(self.versions)
        write_mode = self.write_mode or kueue_install.default_write_mode(
            man, self.versions.kubernetes_minor
        )
        why_not = kueue_install.write_mode_supported(
            write_mode, man, self.versions.kubernetes_minor
        )
        if why_not:
            raise UserError(
                f"nominationWrites {write_mode}: {why_not} ({self.versions.describe()})"
            )
        return bins, man, write_mode

    def up(self) -> Environment:
        """Start everything; on any failure stop what was started and re-raise."""
        bins, man, self.write_mode = self.check()
        self.kueue_extra = kueue_install.manager_extra(
            man, self.kueue_extra, self.write_mode, self.wanted_gates
        )
        self.run_dir = rundir.create("mkdc-run-", detached=self.outlive_parent)  # created 0700
        self.supervisor = Supervisor(self.run_dir, outlive_parent=self.outlive_parent)
        try:
            return self._up(bins, man)
        except BaseException as exc:
            kept = None if isinstance(exc, KeyboardInterrupt) else keep_logs(self.run_dir)
            self.down()
            if kept is None:
                raise
            if isinstance(exc, UserError):  # its message names logs the run directory held
                raise UserError(str(exc).replace(str(self.run_dir / "logs"), str(kept))) from None
            self.progress(f"bring-up failed; the components' logs are kept in {kept}")
            raise

    def _up(self, bins: dict[str, Path], man: upstream.Manifests) -> Environment:
        assert self.run_dir is not None
        started = time.monotonic()
        names = [MANAGER, *self.worker_names]
        for name in names:
            d = self.run_dir / name
            d.mkdir(mode=0o700)
            self.clusters[name] = LocalCluster(name, "manager" if name == MANAGER else "worker", d)
        ca = pki.CertificateAuthority()
        self._write_credentials(ca)
        self.progress("starting etcd")
        etcd_port = self._start_etcd(bins["etcd"])
        self.progress(f"starting {len(names)} kube-apiservers")
        for c in self.clusters.values():
            self._start_apiserver(c, bins["kube-apiserver"], etcd_port)
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            list(pool.map(self._wait_apiserver, self.clusters.values()))
            self.progress(f"apiservers ready ({time.monotonic() - started:.1f}s); installing kueue")
            list(
                pool.map(
                    lambda c: self._start_cluster_components(c, bins, man, ca),
                    self.clusters.values(),
                )
            )
        env = Environment(
            provider=self.name,
            run_dir=self.run_dir,
            manager=self.clusters[MANAGER].to_cluster(),
            workers=[c.to_cluster() for c in self.clusters.values() if c.is_worker],
            kubernetes_version=f"v{self.versions.kubernetes}",
            kueue_version=self.versions.kueue_label,
            dispatcher_name=self.dispatcher_name,
            nomination_write_mode=self.write_mode,
            info={
                "auditLog": str(self.run_dir / MANAGER / "audit.log"),
                "kueueFeatureGates": self.feature_gates,
                "workerSecrets": {
                    w: multikueue.worker_secret_name(w, self.secret_pattern)
                    for w in self.worker_names
                },
            },
        )
        self.progress(f"kueue ready ({time.monotonic() - started:.1f}s); wiring MultiKueue")
        multikueue.wire(env, secret_pattern=self.secret_pattern)
        env.save()
        self.progress(f"environment ready in {time.monotonic() - started:.1f}s: {self.run_dir}")
        return env

    def down(self) -> None:
        """Stop every process and remove the run directory."""
        if self.supervisor is not None:
            self.supervisor.stop_all()
        if self.run_dir is not None:
            rundir.remove(self.run_dir)

    # ------------------------------------------------------------ for scenarios

    def interrupt(self, process: str, how: str) -> None:
        """Take one process out, as a fault would: `stop` (SIGTERM, a clean restart),
        `kill` (SIGKILL, a crash) or `freeze` (SIGSTOP: its clients' requests hang, as
        behind a network partition). `resume` brings it back."""
        assert self.supervisor is not None
        if process not in self.argv:
            raise UserError(f"no process {process!r} in this environment")
        if how == "freeze":
            self.supervisor.send_signal(process, signal.SIGSTOP)
        elif how == "kill":
            self.supervisor.kill(process)
        elif how == "stop":
            self.supervisor.stop(process)
        else:
            raise ValueError(f"interrupt: {how!r} is not stop, kill or freeze")

    def resume(self, process: str) -> None:
        """A frozen process continues; a stopped one starts again with the command it first
        had, and this returns once it serves again."""
        assert self.supervisor is not None
        if self.supervisor.running(process):
            self.supervisor.send_signal(process, signal.SIGCONT)
            return
        self.supervisor.start(
            process, self.argv[process], env=self.env.get(process), layer=stop_layer(process)
        )
        kind = process_kind(process)
        cluster = self.clusters.get(process.removesuffix(f"-{kind}"))
        if kind == "etcd":
            self._wait_etcd()
        elif kind == "apiserver" and cluster is not None:
            self._wait_apiserver(cluster)
        elif kind == "kueue" and cluster is not None:
            dyn = kube.dynamic_client(kube.api_client(cluster.kubeconfig))
            self._wait(
                f"{cluster.name} kueue webhooks", lambda: self._probe_webhooks(cluster, dyn), 120
            )

    def twin(self, progress: Progress | None = None) -> LocalProvider:
        """Another provider for an environment of the same shape and settings (a run's
        second environment, for the scenarios that run alone: `harness.orchestrate.environments`).
        This one's inputs are checked first, and handed over: bad input is said before a
        second environment is announced, and once."""
        checked = self.check()
        twin = LocalProvider(
            self.versions,
            workers=self.worker_names,
            secret_pattern=self.secret_pattern,
            dispatcher_name=self.dispatcher_name,
            kueue_extra=self.kueue_extra,
            write_mode=self.write_mode,
            outlive_parent=self.outlive_parent,
            nodes_per_worker=self.nodes_per_worker,
            node_capacity=self.node_capacity,
            progress=progress or self.progress,
        )
        twin._checked = checked  # the same versions and write mode
        return twin

    def hand_over(self, dispatcher_name: str | None, env: Environment) -> None:
        """Ready the environment for the next run: every process a scenario left stopped
        or frozen running again, and the manager's Kueue handing its workloads to
        `dispatcher_name` (its configuration rewritten and it restarted, as an operator
        switches dispatchers). The clusters and their wiring stay, so the next profile is
        judged without a new bring-up; nothing of the last run is left on them
        (`inventory.purge`), and a restarted Kueue starts with an empty cache."""
        for process in self.argv:
            self.resume(process)  # SIGCONT to a running one is harmless
        if dispatcher_name == self.dispatcher_name:
            return
        self.dispatcher_name = dispatcher_name
        manager = self.clusters[MANAGER]
        dyn = kube.dynamic_client(kube.api_client(manager.kubeconfig))
        self._write_kueue_config(manager, upstream.manifests(self.versions), dyn)
        self.interrupt(f"{MANAGER}-kueue", "stop")
        self.resume(f"{MANAGER}-kueue")
        # its webhook answers before its queue cache is filled: the environment's own queue
        workloads.wait_handed_to_multikueue(
            env.manager, multikueue.DEFAULT_NAME, multikueue.DEFAULT_NAME
        )
        env.dispatcher_name = dispatcher_name
        env.save()

    # ------------------------------------------------------------------- pieces

    def _binaries(self) -> dict[str, Path]:
        needed = [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kueue",
            "kwok",
        ]
        return {b: toolchain.binary_path(self.versions, b) for b in needed}

    def _start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        assert self.supervisor is not None
        self.argv[name] = argv
        env = {**go_runtime(name, self.worker_names), **(env or {})}
        self.env[name] = env
        self.supervisor.start(name, argv, env=env, layer=stop_layer(name))

    def _write_credentials(self, ca: pki.CertificateAuthority) -> None:
        assert self.run_dir is not None
        pki.write_private(self.run_dir / "ca.crt", ca.cert_pem)
        admin = ca.issue("mkdc-admin", organizations=("system:masters",), client=True)
        admin.write(self.run_dir, "admin")
        serving = ca.issue("kube-apiserver", server_hosts=("127.0.0.1", "localhost"))
        serving.write(self.run_dir, "serving")
        sa = pki.service_account_keys()
        pki.write_private(self.run_dir / "sa.pub", sa.cert_pem)
        pki.write_private(self.run_dir / "sa.key", sa.key_pem)
        kueue = ca.issue("mkdc:kueue", organizations=("system:masters",), client=True)
        for c in self.clusters.values():
            pki.write_kubeconfig(
                c.kubeconfig, pki.kubeconfig(c.name, c.server, ca.cert_pem, admin, "mkdc-admin")
            )
            pki.write_kubeconfig(
                c.kueue_kubeconfig,
                pki.kubeconfig(c.name, c.server, ca.cert_pem, kueue, "mkdc-kueue"),
            )

    def _start_etcd(self, etcd: Path) -> int:
        assert self.run_dir is not None
        client_port, peer_port = free_port(), free_port()
        self._start("etcd", etcd_command(etcd, self.run_dir / "etcd", client_port, peer_port))
        self.etcd_port = client_port
        self._wait_etcd()
        return client_port

    def _wait_etcd(self) -> None:
        port = self.etcd_port

        def healthy() -> None:
            self._check("etcd")
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if b'"true"' not in r.read():
                    raise kube.NotYet("etcd not healthy")

        self._wait("etcd", healthy, 30)

    def _start_apiserver(self, c: LocalCluster, binary: Path, etcd_port: int) -> None:
        assert self.run_dir is not None
        policy = None
        if c.role == "manager":
            policy = c.dir / "audit-policy.yaml"
            policy.write_text(yaml.safe_dump(audit.POLICY))
        argv = apiserver_command(c, binary, etcd_port, self.run_dir, policy)
        self._start(f"{c.name}-apiserver", argv)

    def _wait_apiserver(self, c: LocalCluster) -> None:
        assert self.run_dir is not None
        ctx = ssl.create_default_context(cafile=str(self.run_dir / "ca.crt"))
        ctx.load_cert_chain(self.run_dir / "admin.crt", self.run_dir / "admin.key")

        def ready() -> None:
            self._check(f"{c.name}-apiserver")
            with urllib.request.urlopen(f"{c.server}/readyz", context=ctx, timeout=3) as r:
                if r.status != 200:
                    raise kube.NotYet("not ready")

        self._wait(f"{c.name} kube-apiserver", ready, 90)

    def _start_cluster_components(
        self,
        c: LocalCluster,
        bins: dict[str, Path],
        man: upstream.Manifests,
        ca: pki.CertificateAuthority,
    ) -> None:
        assert self.run_dir is not None
        binary = bins["kube-controller-manager"]
        self._start(
            f"{c.name}-controller-manager", controller_manager_command(c, binary, self.run_dir)
        )
        dyn = kube.dynamic_client(kube.api_client(c.kubeconfig))
        crds = kueue_install.crds(man, webhook_port=c.webhook_port, ca_pem=ca.cert_pem)
        kube.apply_all(dyn, crds)
        kube.apply(
            dyn,
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": kueue_install.NAMESPACE},
            },
        )
        if c.is_worker:
            self._start_worker_nodes(c, bins, man, dyn)
        self._wait_crds_established(c, dyn, crds)
        self._start_kueue(c, bins["kueue"], man, ca, dyn)

    def _start_worker_nodes(
        self, c: LocalCluster, bins: dict[str, Path], man: upstream.Manifests, dyn: Any
    ) -> None:
        self._start(f"{c.name}-scheduler", scheduler_command(c, bins["kube-scheduler"]))
        stages = c.dir / "kwok-stages.yaml"
        stages.write_text("\n---\n".join(p.read_text() for p in man.kwok_stages))
        self._start(f"{c.name}-kwok", kwok_command(c, bins["kwok"], stages))
        for i in range(1, self.nodes_per_worker + 1):
            kube.apply(dyn, kwok.fake_node(f"{c.name}-node{i}", self.node_capacity))

    def _wait_crds_established(self, c: LocalCluster, dyn: Any, crds: list[dict[str, Any]]) -> None:
        """Until discovery serves every CRD (it lists a CRD only once it is Established).
        One small request per group version instead of reading each CRD back: Kueue's CRDs
        are megabytes of schema, and reading them all once a second while 21 clusters
        start cost each apiserver CPU seconds."""
        wanted = kube.served_resources(crds)

        def established() -> None:
            for group_version, plurals in wanted.items():
                listed = dyn.request("GET", f"/apis/{group_version}").to_dict()
                served = {r["name"] for r in listed["resources"]}
                if missing := plurals - served:
                    raise kube.NotYet(f"{group_version} does not serve {sorted(missing)} yet")

        self._wait(f"{c.name} CRDs", established, 60)

    def _start_kueue(
        self,
        c: LocalCluster,
        binary: Path,
        man: upstream.Manifests,
        ca: pki.CertificateAuthority,
        dyn: Any,
    ) -> None:
        cert_dir = c.dir / "kueue-certs"
        cert_dir.mkdir(mode=0o700)
        ca.issue("kueue-webhook", server_hosts=("127.0.0.1", "localhost")).write(cert_dir, "tls")
        config_path = self._write_kueue_config(c, man, dyn)
        kube.apply_all(
            dyn,
            kueue_install.webhook_configurations(
                man, webhook_port=c.webhook_port, ca_pem=ca.cert_pem
            ),
        )
        if not c.is_worker and self.write_mode == kueue_install.ADMISSION_POLICY:
            kube.apply_all(dyn, kueue_install.admission_policy_documents(man))
        self._start(f"{c.name}-kueue", kueue_command(c, binary, config_path, cert_dir))
        self._wait(f"{c.name} kueue webhooks", lambda: self._probe_webhooks(c, dyn), 120)

    def _write_kueue_config(self, c: LocalCluster, man: upstream.Manifests, dyn: Any) -> Path:
        """Kueue's Configuration for this cluster, as its file and its ConfigMap."""
        config = kueue_install.kueue_configuration(
            kueue_version=self.versions.kueue,
            webhook_port=c.webhook_port,
            health_port=c.health_port,
            cert_dir=c.dir / "kueue-certs",
            manager=not c.is_worker,
            dispatcher_name=self.dispatcher_name,
            extra=self.kueue_extra if not c.is_worker else None,
            release=kueue_install.release_defaults(man),
        )
        if not c.is_worker:
            self.feature_gates = kueue_install.gates_as_run(man, config)
        config_path = c.dir / "kueue-config.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        kube.apply(dyn, kueue_install.manager_config_map(config, self.versions.kueue))
        return config_path

    def _probe_webhooks(self, c: LocalCluster, dyn: Any) -> None:
        """A dry-run create that passes Kueue's mutating and validating webhooks."""
        self._check(f"{c.name}-kueue")
        cq = dyn.resources.get(api_version="kueue.x-k8s.io/v1beta2", kind="ClusterQueue")
        cq.create(
            body={
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "mkdc-probe"},
            },
            query_params=[("dryRun", "All")],
        )

    def _check(self, name: str) -> None:
        assert self.supervisor is not None
        self.supervisor.check_alive(name)

    def _wait(self, what: str, probe: Callable[[], None], timeout: float) -> None:
        try:
            kube.wait_for(what, probe, timeout=timeout)
        except TimeoutError as exc:
            logs = self.run_dir / "logs" if self.run_dir else "the run directory"
            raise UserError(f"{exc} (logs in {logs})") from None


def keep_logs(run_dir: Path | None) -> Path | None:
    """Copy a failed bring-up's process logs out of the run directory, which goes with
    its keys, into a private directory of their own that stays: the evidence of why (an
    apiserver that timed out talking to etcd says so only in its log). None: no logs."""
    logs = sorted((run_dir / "logs").glob("*.log")) if run_dir else []
    if not logs:
        return None
    kept = Path(tempfile.mkdtemp(prefix="mkdc-failed-up-"))  # 0700, as mkdtemp makes it
    for log_file in logs:
        shutil.copy(log_file, kept / log_file.name)
    return kept


@contextlib.contextmanager
def running(provider: LocalProvider) -> Iterator[Environment]:
    """An environment for the duration of a with-block, stopped however it ends."""
    env = provider.up()
    try:
        yield env
    finally:
        provider.down()
