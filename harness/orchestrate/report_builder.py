"""A run's report: the per-scenario result files its test processes wrote, folded into
one result per check, with the environment, timeouts, scorecard and findings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import results
from harness.cluster import faults, identity
from harness.cluster.environment import Environment
from harness.cluster.kueue_install import NAMESPACE
from harness.orchestrate.options import Options
from harness.orchestrate.outcome import Dispatched, Outcome
from harness.profile import Profile
from harness.recording.timeline import Timeline
from harness.report import UNDECIDED, CheckResult, Report
from harness.results import Result, ScenarioResult
from harness.scenarios import context
from harness.scenarios.session import selects
from harness.suite import catalogue as suite_catalogue
from harness.suite import load as load_suite

NO_RECORD = (
    "undecided: no scenario of this run recorded a result for it (the suite has no scenario "
    "declared to decide it, or that scenario was not collected)"
)
INTERRUPTED = "undecided: the run was interrupted ({how}) before a scenario decided it"


def build_report(
    profile: Profile, env: Environment, report_dir: Path, opts: Options, outcome: Outcome
) -> Report:
    """The run's report, from its `outcome` and the per-scenario result files, folded into
    one result per check, with what went wrong across them explained (findings). A check
    this run should have decided and for which no scenario recorded anything (its scenario
    marker lost, say, or the run interrupted) is undecided, not absent."""
    interrupted = outcome.interrupted
    suite = load_suite()
    records = results.read_all(report_dir / "results")
    by_check: dict[str, list[ScenarioResult]] = {}
    for record in records:
        by_check.setdefault(record.check, []).append(record)
    folded = []
    for check_id, check in suite.catalogue.items():
        # the worst result of a check over its scenarios is its result
        recs = sorted(by_check.get(check_id, []), key=lambda r: r.result.rank)
        if not recs:
            if due(check_id, check.feature, profile, opts):
                why = INTERRUPTED.format(how=interrupted) if interrupted else NO_RECORD
                folded.append(CheckResult(check_id, check.name, UNDECIDED, why))
            continue
        worst = recs[0]
        folded.append(
            CheckResult(
                id=check_id,
                name=check.name,
                result=worst.result,
                message=worst.message if worst.result != Result.PASSED else "",
                duration_seconds=round(sum(r.duration_seconds for r in recs), 1),
                timeline=Timeline.from_list(worst.timeline) if worst.timeline else None,
                measured=worst.measured,
                dispatcher_actions=worst.dispatcher_actions,
            )
        )
    cards = {_test_name(r.scenario): r.scorecard for r in records if r.scorecard}
    environment = environment_section(profile, env, context.Shape.of(profile).to_report(), outcome)
    card = suite.merge_scorecards(cards.values()) if cards else {}
    card.pop("samples", None)
    card["perScenario"] = {
        name: {k: v for k, v in c.items() if k != "samples"} for name, c in sorted(cards.items())
    }
    return Report.for_profile(
        profile,
        folded,
        environment=environment,
        timeouts=_timeouts(profile, opts),
        scorecard=card,
        privileges=privileges(profile),
        findings=suite.findings(records, profile.claims.to_dict()),
        catalogue=suite_catalogue(),
        dispatcher_exits=[exit_entry(e) for e in outcome.exits],
    )


def error_report(profile: Profile, env: Environment, outcome: Outcome) -> Report:
    """The report of a run that could not judge the dispatcher (`outcome.error`)."""
    return Report.for_profile(
        profile,
        environment=environment_section(profile, env, {}, outcome),
        privileges=privileges(profile),
        error=f"the dispatcher could not be judged: {outcome.error}",
        catalogue=suite_catalogue(),
    )


def due(check_id: str, feature: str | None, profile: Profile, opts: Options) -> bool:
    """Whether this run was to decide the check: selected, and core or claimed."""
    chosen = selects(check_id, opts.checks, opts.skip_checks)
    return chosen and (feature is None or profile.claims.claims(feature))


def _timeouts(profile: Profile, opts: Options) -> dict[str, Any]:
    """The report's `timeouts`: the slacks and round timeout every scenario's bounds use
    (from the claims and --slack, the same for every scenario, so also known when the
    checks that ran first were not supported). {} when they are invalid: then no
    scenario could judge anything either."""
    try:
        return load_suite().timeouts(profile.claims.to_dict(), opts.slacks)
    except ValueError:
        return {}


def environment_section(
    profile: Profile, env: Environment, shape: dict[str, Any], outcome: Outcome
) -> dict[str, Any]:
    """The report's environment section: what ran, how the dispatcher was run, and what
    the run did to the environment (faults injected)."""
    how = "built into Kueue"
    extra: dict[str, Any] = {}
    first = outcome.first
    if profile.run is not None:
        how = "pod environment" if profile.run.pod_environment else "process"
        if profile.run.image is not None:
            how = f"container image {profile.run.image}"
        if profile.run.deploy is not None:
            how = f"deploy folder (Deployment {profile.run.deploy.pod.deployment})"
            # on kind and existing clusters the folder is applied as written: less is not
            notes = profile.run.deploy.notes if first.not_applied is None else first.not_applied
            extra["notApplied"] = list(notes)
        if first.replica_network is not None:
            extra["replicaNetwork"] = first.replica_network
    if env.info.get("kueueFeatureGates"):  # known where mkdc started the manager's Kueue
        extra["kueueFeatureGates"] = dict(env.info["kueueFeatureGates"])
    if len(outcome.dispatched) > 1:
        extra["environments"] = len(outcome.dispatched)
    if outcome.injected is not None:
        extra["injectedFaults"] = _injected(outcome.injected, outcome.started)
        if outcome.faults_not_injected:
            extra["faultsNotInjected"] = list(outcome.faults_not_injected)
    replicas = replica_entries(outcome.dispatched)
    if replicas:
        extra["replicas"] = replicas
    return {
        "provider": env.provider,
        "kubernetesVersion": env.kubernetes_version,
        "kueueVersion": env.kueue_version,
        "workers": len(env.workers),
        "workerNames": [w.name for w in env.workers],
        "nominationWriteMode": env.nomination_write_mode or "n/a (built-in dispatcher)",
        "dispatcherRun": how,
        "clusterScope": profile.environment.cluster_scope,
        "shape": shape,
        "kueueApiVersion": profile.environment.api_version or "any served",
        "wallSeconds": round(outcome.wall_seconds, 1),
        **extra,
    }


def _test_name(name: str) -> str:
    """A scenario's name without its random suffix (the test it ran for)."""
    return name.rsplit("-", 1)[0]


def privileges(profile: Profile) -> list[str]:
    """Every rule granted to the dispatcher beyond the baseline role, in words."""
    return [] if profile.run is None else profile.run.rbac.described()


def replica_entries(dispatched: Sequence[Dispatched]) -> list[dict[str, Any]]:
    """The report's account of each replica run on this host: who it was, its restarts,
    its peaks beside its requests and limits."""
    found = []
    for number, (runner, watch) in enumerate(((d.runner, d.watch) for d in dispatched), start=1):
        if runner is None or not any(u.samples for u in runner.kubelet.usage.values()):
            continue  # replicas not on this host (Pods of a cluster): never sampled
        for entry in runner.kubelet.report():
            replica = entry.pop("replica")
            user = runner.users.get(replica)
            found.append(
                {
                    "process": runner.process_name(replica),
                    "environment": number,
                    "identity": identity.username(NAMESPACE, replica, runner.run.account),
                    "user": None if user is None else user[0],
                    "restarts": watch.restarts.get(replica, 0) if watch else 0,
                    **entry,
                }
            )
    return found


def exit_entry(event: dict[str, Any]) -> dict[str, Any]:
    """The report's account of a replica that exited by itself (a replica-exit event)."""
    return {
        "process": event.get("process"),
        "replica": event.get("replica"),
        "code": event.get("code"),
        "cause": event.get("cause") or "no output",
        "atSeconds": event.get("elapsedSeconds"),
        "log": event.get("log"),
        "restartedAfterSeconds": event.get("restartIn"),
        "crashLoop": bool(event.get("crashLoop")),
    }


def _injected(found: Sequence[faults.Window], started: float) -> list[dict[str, Any]]:
    """The report's list of injected faults, timed from the run's start."""
    return [
        {
            "fault": w.fault,
            "target": w.target,
            "what": w.says,
            "startSeconds": round(w.start - started, 1),
            "endSeconds": None if w.end is None else round(w.end - started, 1),
        }
        for w in found
    ]
