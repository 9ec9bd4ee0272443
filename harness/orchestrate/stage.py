"""One environment readied for the suite: the objects every scenario uses, the
profile's and its deploy folder's objects, the dispatcher started, the watch on its
replicas, the control channel open, and the session its test processes read."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.cluster import inventory, kube
from harness.cluster.environment import Environment
from harness.cluster.kueue_install import NAMESPACE
from harness.cluster.multikueue import API as KUEUE_API
from harness.console import log
from harness.errors import UserError
from harness.orchestrate import deployrun
from harness.orchestrate.dispatcher import StartFailure
from harness.orchestrate.environments import SECOND_ENVIRONMENT
from harness.orchestrate.exits import ExitWatch
from harness.orchestrate.outcome import Dispatched, Outcome
from harness.orchestrate.plan import Plan
from harness.orchestrate.start import (
    ReplicaNetwork,
    control_handlers,
    replica_network,
    start_dispatcher,
)
from harness.orchestrate.verdict import provider_logs, start_failure_report
from harness.profile import SHARED, RunSpec, objects
from harness.providers import Provider
from harness.scenarios import context, control, documents
from harness.scenarios.session import EVENTS_FILE, Session


@dataclass(frozen=True)
class Staged:
    """An environment ready for the suite: the session its test processes read, and its
    dispatcher as started."""

    session: Session
    dispatched: Dispatched


def stage(
    p: Plan,
    provider: Provider,
    env: Environment,
    *,
    common: list[dict[str, Any]],
    run_id: str,
    stack: contextlib.ExitStack,
    started: float,
    events: Path | None = None,
    where: str = "",
    claims: Path | None = None,
) -> Staged:
    """`env` readied for the suite: the `common` objects every scenario uses, the
    dispatcher started on it, its control channel open. What it starts stops with
    `stack`. A dispatcher that does not start leaves its logs and a report saying so,
    and raises the UserError that says where."""
    profile, opts = p.profile, p.opts
    # cluster-scoped objects every scenario uses; ones that already exist stay untouched
    for cluster in env.clusters:
        for doc in common:
            kube.create_if_absent(cluster.dyn, inventory.label(doc, run_id))
    if profile.environment.cluster_scope == SHARED:
        # before the dispatcher starts, so one that looks only once sees it all
        documents.create_shared_scope(env, context.Shape.of(profile), run_id)
    found = deployed(p, env)
    not_applied: tuple[str, ...] | None = None
    network = ReplicaNetwork(None, None)
    if profile.run is not None:
        if found is not None:
            not_applied = (*found.notes, *deployrun.unapplied(profile.run))
        make_objects(profile.run, profile.dispatcher_name, env, run_id, stack, where, not_applied)
        if found is None and p.image is None:
            network = replica_network(profile.run, env, where)
    users: frozenset[str] = frozenset()
    runner = None
    audit_from = audit_size(env)  # the audit log before it is earlier runs'
    if profile.run is not None:
        leases = _leases(env)
        stack.callback(lambda: _delete_new_leases(env, leases))
        try:
            runner, users = start_dispatcher(
                profile, env, run_id, stack, p.image, audit_from, where, found, network
            )
        except StartFailure as exc:
            provider_logs(provider)
            failed = Dispatched(None, None, network.says, not_applied)
            outcome = Outcome(started, time.monotonic(), (failed,), error=str(exc))
            raise start_failure_report(exc, profile, env, p.report_dir, outcome) from None
    watch = None
    if runner is not None:
        watch = ExitWatch(
            runner,
            events or env.run_dir / EVENTS_FILE,
            env.run_dir,
            shared_network=runner.network is None,
            where=where,
            logs=f"artifacts/logs/{SECOND_ENVIRONMENT}" if where else "artifacts/logs",
        )
    server = control.Server(env.run_dir, control_handlers(provider, runner, watch))
    stack.callback(server.close)
    session = Session(
        environment=env.run_dir,
        profile=profile.path,
        run_id=run_id,
        report_dir=p.report_dir,
        control_address=server.address,
        control_key=server.key,
        dispatcher_users=users,
        pod_users=isinstance(runner, deployrun.DeploymentRunner),
        capabilities=provider.capabilities,
        slacks=opts.slacks or {},
        checks=opts.checks,
        skip_checks=opts.skip_checks,
        full=opts.full,
        worker_secrets=env.info.get("workerSecrets", {}),
        audit_from=audit_from,
        events=events,
        claims=claims,
    )
    return Staged(session, Dispatched(runner, watch, network.says, not_applied))


def deployed(p: Plan, env: Environment) -> deployrun.Images | None:
    """A deploy folder applied as written (kind, existing): its images, and what of it is
    not applied (the containers left out)."""
    run = p.profile.run
    if run is None or run.deploy is None or env.provider == "local":
        return None
    if p.deployed is not None:  # kind: checked before the clusters started
        archive = p.image.archive if p.image is not None else None
        return replace(p.deployed, archive=archive, kind=deployrun.kind_cluster_of(env))
    return deployrun.on_cluster(run, env, p.image)


def make_objects(
    run: RunSpec,
    dispatcher_name: str,
    env: Environment,
    run_id: str,
    stack: contextlib.ExitStack,
    where: str,
    not_applied: tuple[str, ...] | None,
) -> None:
    """What the dispatcher needs before it starts: the profile's objects and its deploy
    folder's, made on the clusters until `stack` closes. `not_applied`: what of a folder
    applied as written is not (None: the folder's own notes)."""
    wanted = [run.objects]
    if run.deploy is not None:
        for note in run.deploy.notes if not_applied is None else not_applied:
            log(f"{where}manifests: not applied here: {note}")
        if env.provider == "local":  # elsewhere the runner applies the folder as written
            wanted.append(run.deploy.objects)
    labels = {inventory.RUN_LABEL: run_id}
    for group in wanted:
        if group:
            made = stack.enter_context(objects.made(group, env, NAMESPACE, dispatcher_name, labels))
            log(f"{where}made before the dispatcher starts: {', '.join(made)}")


def audit_size(env: Environment) -> int:
    """Where this run's part of the manager's audit log begins (0: none kept)."""
    audit = env.info.get("auditLog")
    try:
        return Path(audit).stat().st_size if audit else 0
    except FileNotFoundError:
        return 0


def require_api_version(env: Environment, version: str | None) -> None:
    """A dispatcher that reads an older Kueue API version needs the manager to serve it."""
    if version is None:
        return
    served = kube.served_versions(env.manager.dyn, KUEUE_API.split("/")[0])
    if version not in served:
        raise UserError(
            f"profile spec.environment.apiVersion {version} is not served by Kueue "
            f"{env.kueue_version} (it serves {', '.join(served) or 'nothing'}): "
            "choose one of those or another --kueue-version"
        )


def _leases(env: Environment) -> set[str]:
    """The Leases in the dispatcher's namespace, before its replicas start."""
    listed = kube.resource(env.manager.dyn, "coordination.k8s.io/v1", "Lease").get(
        namespace=NAMESPACE
    )
    return {item["metadata"]["name"] for item in listed.to_dict()["items"]}


def _delete_new_leases(env: Environment, before: set[str]) -> None:
    """The dispatcher's leader-election Leases go with its run: the next run on these
    clusters must not wait for a dead holder's lease to expire."""
    with contextlib.suppress(Exception):  # cleanup is best effort: the verdict stands
        for name in _leases(env) - before:
            kube.delete(env.manager.dyn, "coordination.k8s.io/v1", "Lease", name, NAMESPACE)
