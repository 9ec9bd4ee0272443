"""The processes of the local provider's clusters, as values: each one's ports and files
(`LocalCluster`), its command line, its Go runtime settings and when it stops. Pure:
nothing here starts a process, so every command line is unit-tested as it is."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from harness.cluster import mountns
from harness.cluster.environment import Cluster
from harness.cluster.procs import free_port

# The Go collector's pacing for the processes whose heap is large: a kube-apiserver holds
# a large live heap (mostly OpenAPI documents of the built-in and Kueue types) and, at
# Go's default GOGC=100, grows to twice that before collecting. GOGC=75 collects at 1.75x:
# about the CPU of Go's default for noticeably less memory, while 50 costs more CPU
# (`python -m harness.tools.bench_up`; the figures are in docs/benchmarks.md).
# Safe: it changes when garbage is collected, never what any server does; no hard limit
# (GOMEMLIMIT) is set, so a server under load is never starved into collecting nonstop.
GO_RUNTIME = {"apiserver": {"GOGC": "75"}, "etcd": {"GOGC": "75"}}
# A worker's processes run Go code on one thread at a time. At Go's default (a P per core)
# each of a 1+20 environment's 100 Go processes keeps two Ps, whose threads spin looking
# for work and run collection workers side by side, on the few cores all of them share:
# a 1+20 bring-up is faster and uses less CPU this way (`python -m harness.tools.bench_up
# --workers 20`; the figures are in docs/benchmarks.md). Safe: it bounds how many threads
# run a worker's Go code at once, never what the process does, and a worker's load (its
# share of a scenario's workloads) gets less than a core anyway beside 20 other clusters
# on 2 cores. The manager, where bursts and the benchmark's 1000 workloads land, keeps
# every core, as does etcd.
WORKER_GO_RUNTIME = {"GOMAXPROCS": "1"}
PROCESS_KINDS = ("etcd", "apiserver", "controller-manager", "scheduler", "kwok", "kueue")


@dataclass
class LocalCluster:
    """Ports and files of one local cluster."""

    name: str
    role: str
    dir: Path
    apiserver_port: int = field(default_factory=free_port)
    webhook_port: int = field(default_factory=free_port)
    health_port: int = field(default_factory=free_port)
    scheduler_port: int = field(default_factory=free_port)
    kwok_port: int = field(default_factory=free_port)

    @property
    def is_worker(self) -> bool:
        return self.role == "worker"

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    @property
    def kueue_kubeconfig(self) -> Path:
        """Kueue's own identity, so the audit log tells its writes from others'."""
        return self.dir / "kueue.kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    def to_cluster(self) -> Cluster:
        return Cluster(
            self.name,
            self.kubeconfig,
            self.role,
            {"apiserver": self.apiserver_port, "kueueWebhook": self.webhook_port},
        )


def etcd_command(binary: Path, data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    """One etcd for every cluster (each under a key prefix of its own), without fsync."""
    return [
        str(binary),
        f"--data-dir={data_dir}",
        f"--listen-client-urls=http://127.0.0.1:{client_port}",
        f"--advertise-client-urls=http://127.0.0.1:{client_port}",
        f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
        f"--initial-cluster=default=http://127.0.0.1:{peer_port}",
        "--listen-metrics-urls=",
        "--unsafe-no-fsync",
        "--quota-backend-bytes=4294967296",
        "--log-level=warn",
    ]


def apiserver_command(
    c: LocalCluster, binary: Path, etcd_port: int, run_dir: Path, audit_policy: Path | None
) -> list[str]:
    """A cluster's kube-apiserver; with `audit_policy` (the manager) it keeps an audit
    log in the cluster's folder, which the recorder tails."""
    r = run_dir
    argv = [
        str(binary),
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        f"--etcd-prefix=/mkdc/{c.name}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={c.apiserver_port}",
        f"--tls-cert-file={r / 'serving.crt'}",
        f"--tls-private-key-file={r / 'serving.key'}",
        f"--client-ca-file={r / 'ca.crt'}",
        f"--service-account-key-file={r / 'sa.pub'}",
        f"--service-account-signing-key-file={r / 'sa.key'}",
        "--service-account-issuer=https://kubernetes.default.svc",
        "--service-cluster-ip-range=10.96.0.0/16",
        "--authorization-mode=RBAC",
        "--endpoint-reconciler-type=none",
        "--enable-priority-and-fairness=false",
        "--profiling=false",
        "--event-ttl=2h",
        # no kubelet or node lifecycle controller: nodes must not start tainted
        "--disable-admission-plugins=TaintNodesByCondition",
    ]
    if audit_policy is not None:
        argv += [
            f"--audit-policy-file={audit_policy}",
            f"--audit-log-path={c.dir / 'audit.log'}",
            "--audit-log-format=json",
            "--audit-log-maxbackup=0",
        ]
    return argv


def controller_manager_command(c: LocalCluster, binary: Path, run_dir: Path) -> list[str]:
    """The controllers a cluster without kubelets needs: Jobs, garbage, namespaces and
    service accounts."""
    return [
        str(binary),
        f"--kubeconfig={c.kubeconfig}",
        "--controllers=job,garbage-collector-controller,namespace-controller,serviceaccount-controller",
        "--bind-address=127.0.0.1",
        "--secure-port=0",
        "--leader-elect=false",
        f"--root-ca-file={run_dir / 'ca.crt'}",
        f"--service-account-private-key-file={run_dir / 'sa.key'}",
        "--concurrent-job-syncs=20",
        "--concurrent-gc-syncs=20",
    ]


def scheduler_command(c: LocalCluster, binary: Path) -> list[str]:
    kubeconfig = str(c.kubeconfig)
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={c.scheduler_port}",
        "--leader-elect=false",
    ]


def kwok_command(c: LocalCluster, binary: Path, stages: Path) -> list[str]:
    """KWOK managing the worker's fake nodes only (harness.cluster.kwok)."""
    return [
        str(binary),
        f"--kubeconfig={c.kubeconfig}",
        "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        f"--config={stages}",
        f"--server-address=127.0.0.1:{c.kwok_port}",
        "--node-ip=127.0.0.1",
        "--cidr=10.244.0.1/16",
    ]


def kueue_command(c: LocalCluster, binary: Path, config: Path, cert_dir: Path) -> list[str]:
    """Kueue under its own identity, in a private /etc (see `private_etc_command`)."""
    argv = [
        str(binary),
        f"--config={config}",
        f"--kubeconfig={c.kueue_kubeconfig}",
        "--zap-log-level=2",
    ]
    return private_etc_command(c.dir, cert_dir, argv)


def private_etc_command(cluster_dir: Path, cert_dir: Path, argv: list[str]) -> list[str]:
    """Run argv with a private overlay of /etc holding the metrics certs kueue opens.

    Kueue opens /etc/kueue/metrics/certs/tls.{crt,key} at start whenever internal
    cert management is off, even with metrics disabled. A private mount namespace
    gives it those files without touching the host's /etc.
    """
    setup = [
        mountns.overlay("/etc", cluster_dir / "etc-upper", cluster_dir / "etc-work"),
        "mkdir -p /etc/kueue/metrics/certs",
        f"cp {cert_dir}/tls.crt {cert_dir}/tls.key /etc/kueue/metrics/certs/",
    ]
    return mountns.private_command(setup, argv, "kueue")


def go_runtime(process: str, worker_names: Collection[str]) -> dict[str, str]:
    """The Go runtime settings of one of an environment's processes (<cluster>-<kind>)."""
    kind = process_kind(process)
    on_worker = process.removesuffix(f"-{kind}") in worker_names
    return {**GO_RUNTIME.get(kind, {}), **(WORKER_GO_RUNTIME if on_worker else {})}


def process_kind(name: str) -> str:
    """`east-cluster-controller-manager` -> `controller-manager`: processes are named
    <cluster>-<kind> (cluster names have hyphens of their own), etcd just so."""
    return next((k for k in PROCESS_KINDS if name == k or name.endswith(f"-{k}")), name)


def stop_layer(process: str) -> int:
    """etcd stops last, apiservers next to last, their clients first."""
    if process == "etcd":
        return 0
    return 1 if process.endswith("-apiserver") else 2
