"""The dispatcher started on an environment, as the profile says it runs (a process as
in a Pod, a container, Deployments in the manager, or a vendor's deploy folder applied
as written), and the control channel's operations on it."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from harness.cluster import identity, inventory, mountns
from harness.cluster.environment import Environment
from harness.cluster.kueue_install import NAMESPACE
from harness.cluster.procs import Supervisor
from harness.console import log
from harness.orchestrate import container, deployrun
from harness.orchestrate.dispatcher import DispatcherRunner
from harness.orchestrate.exits import ExitWatch
from harness.profile import Profile, RunSpec
from harness.providers import Provider
from harness.scenarios import control


@dataclass(frozen=True)
class ReplicaNetwork:
    """The network a replica run as a process on this host reaches the apiservers from."""

    ports: list[int] | None  # the apiserver ports it reaches from its own; None: the host's
    says: str | None  # the report's words for it (None: not a local provider's replica)


def replica_network(run: RunSpec, env: Environment, where: str = "") -> ReplicaNetwork:
    """A network namespace of its own per replica (reaching the apiservers' ports, the
    manager's first), or the host's: where asked for (`hostNetwork`), where this host
    cannot make one, or on another provider's clusters, which need not be on this host."""
    if env.provider != "local":
        return ReplicaNetwork(None, None)
    if run.host_network:
        return ReplicaNetwork(None, "the host's (spec.run.hostNetwork)")
    reason = mountns.network_isolation()
    if reason is not None:
        log(f"{where}dispatcher replicas share the host's network: {reason}")
        return ReplicaNetwork(None, f"the host's ({reason})")
    return ReplicaNetwork(
        [c.endpoints["apiserver"] for c in env.clusters], "one of its own per replica (pasta)"
    )


def start_dispatcher(
    profile: Profile,
    env: Environment,
    run_id: str,
    stack: contextlib.ExitStack,
    image: container.ImageSource | None = None,
    audit_from: int = 0,
    where: str = "",
    deployed: deployrun.Images | None = None,
    network: ReplicaNetwork | None = None,
) -> tuple[DispatcherRunner, frozenset[str]]:
    """The replicas started and ready (they listed or watched Workloads, or passed their
    readiness probe); returns the runner and the audit users that are the dispatcher's.
    They stop when `stack` closes. `network`: a process replica's (`replica_network`)."""
    assert profile.run is not None
    replicas, rbac = profile.run.replicas, profile.run.rbac
    if deployed is not None:
        return _start_deployment(profile, env, run_id, stack, deployed, audit_from, where)
    credentials = identity.create(
        env.manager,
        NAMESPACE,
        replicas,
        env.run_dir,
        {inventory.RUN_LABEL: run_id},
        rbac.cluster_rules,
        rbac.namespace_rules,
        profile.run.account,
    )
    supervisor = Supervisor(env.run_dir)
    labels = {inventory.RUN_LABEL: run_id}
    runner: DispatcherRunner
    if image is not None and env.provider == "kind":
        runner = container.PodRunner(profile, supervisor, credentials, env, image, labels, log)
        how = "as Deployments in the manager"
    elif image is not None:
        runner = container.ContainerRunner(
            profile, supervisor, credentials, labels, f"mkdc-{run_id}"
        )
        how = "as containers"
    else:
        ports = (network or replica_network(profile.run, env, where)).ports
        runner = DispatcherRunner(profile, supervisor, credentials, ports)
        how = "as in a Pod" if profile.run.pod_environment else "as a process"
        how += ", each replica on a network of its own" if ports is not None else ""
    stack.callback(runner.stop_all)
    log(f"{where}starting the dispatcher {how} ({replicas} replica(s)): {profile.shown_command()}")
    began = time.monotonic()
    runner.start_all()
    users = frozenset(identity.username(NAMESPACE, i, profile.run.account) for i in range(replicas))
    audit = env.info.get("auditLog")
    if audit:
        runner.wait_ready(Path(audit), users, since=audit_from)
        pod = profile.run.deploy.pod if profile.run.deploy else None
        signal = "a replica listed or watched Workloads"
        if pod is not None and pod.readiness is not None:
            signal = f"every replica's readiness probe passed ({pod.readiness.describe()})"
        log(f"{where}dispatcher ready in {time.monotonic() - began:.1f}s: {signal}")
    return runner, users


def _start_deployment(
    profile: Profile,
    env: Environment,
    run_id: str,
    stack: contextlib.ExitStack,
    deployed: deployrun.Images,
    audit_from: int,
    where: str,
) -> tuple[DispatcherRunner, frozenset[str]]:
    """The vendor's folder applied to the manager as written; its Pods are the replicas,
    its ServiceAccount the dispatcher's user (each Pod told apart in the audit log)."""
    run = profile.run
    assert run is not None and run.deploy is not None
    labels = {inventory.RUN_LABEL: run_id}
    docs = deployrun.documents(
        run,
        deployed.left_out,
        labels,
        pull_never=deployed.kind is not None,
        dispatcher_name=profile.dispatcher_name,
    )
    runner = deployrun.DeploymentRunner(profile, Supervisor(env.run_dir), env, docs, deployed, log)
    stack.callback(runner.stop_all)
    deployment = runner.deployment
    log(
        f"{where}starting the dispatcher as Deployment {runner.name} in the manager"
        f" ({run.replicas} replica(s), image {deployed.main},"
        f" ServiceAccount {run.account})"
    )
    runner.start_all()
    users = frozenset({deployrun.service_account_user(deployment, run.account)})
    audit = env.info.get("auditLog")
    if audit:
        runner.wait_ready(Path(audit), users, since=audit_from)
    return runner, users


def control_handlers(
    provider: Provider, runner: DispatcherRunner | None, watch: ExitWatch | None = None
) -> dict[str, control.Handler]:
    """What the test processes may ask of the run over the control channel: a replica
    killed, started, asked after, or named from its audit user; a cluster's process taken
    out and brought back (the provider's FAULTS)."""

    def need_runner() -> DispatcherRunner:
        if runner is None:
            raise RuntimeError("this profile's dispatcher is built into Kueue")
        return runner

    def kill(replica: int = 0) -> None:
        if watch is not None:  # a scenario's kill: no exit to say
            watch.killed(replica)
        need_runner().kill(replica)

    def start(replica: int = 0) -> None:
        need_runner().restart(replica)
        if watch is not None:
            watch.started(replica)

    return {
        "kill-dispatcher": kill,
        "start-dispatcher": start,
        "dispatcher-alive": lambda replica=0: need_runner().alive(replica),
        "dispatcher-replica": lambda user: need_runner().replica_of(user),
        "interrupt": provider.interrupt,
        "resume": provider.resume,
    }
