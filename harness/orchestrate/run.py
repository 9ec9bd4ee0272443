"""`mkdc run`: a conformance session per dispatcher profile (several profiles: one
after another, on one environment where they can share it).

The session owns the environment and the dispatcher processes; the checks run in
pytest (optionally several xdist workers) against that one environment, each
scenario in its own namespace and queues. Test processes reach back over the
control channel to kill or restart the dispatcher. Results come back as JSON
files, folded into the report once the run's outcome is known.

The run's parts, in the order they act: `plan` (every input checked, then what the run
starts built), `environments` (brought up, a second beside the first), `stage` (one
environment readied: objects, the dispatcher (`start`), its control channel, the
session), `suite_run` (pytest and injected faults), `report_builder` (the report from
the run's `outcome`) and `verdict` (evidence kept, the verdict said).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from harness.cluster import faults, inventory, rundir
from harness.cluster.environment import Environment
from harness.console import log
from harness.errors import UserError, one_line
from harness.orchestrate import deployrun, explain
from harness.orchestrate.environments import ASIDE_LOG, Aside, bring_up
from harness.orchestrate.options import Options
from harness.orchestrate.outcome import Outcome
from harness.orchestrate.plan import Plan, build, plan
from harness.orchestrate.report_builder import build_report
from harness.orchestrate.stage import require_api_version, stage
from harness.orchestrate.suite_run import run_suite
from harness.orchestrate.verdict import INTERRUPTED_EXIT, collect_logs, keep_evidence, say_verdict
from harness.profile import SHARED
from harness.providers import HandsOver, Provider
from harness.report import UNDECIDED, write_all
from harness.scenarios import context, documents, progress, slots
from harness.scenarios.session import EVENTS_FILE

SESSION_FILE = "session.json"


def run(opts: Options) -> int:
    """The whole session; returns the exit status (0 passed, 1 failed, 130 interrupted).

    Every input is checked before anything is built, started or written, so bad input
    leaves nothing behind; the report directory is emptied only once the environment is up.
    """
    return run_all([opts])[0]


def exit_status(codes: Sequence[int]) -> int:
    """Of several runs: interrupted if one was, else the worst (2 > 1 > 0)."""
    return INTERRUPTED_EXIT if INTERRUPTED_EXIT in codes else max(codes)


def run_all(runs: Sequence[Options]) -> list[int]:
    """Several runs, one after another, each on one environment with as many of the
    others as can share it (same provider, versions, workers and Kueue settings but for
    the dispatcherName): a bring-up costs about as much CPU as a short run. Every input
    is checked first. One run's UserError ends only that run (exit 2, said on the
    console) when there are several; an interrupt ends them all."""
    plans = [plan(o) for o in runs]
    dirs = [p.report_dir for p in plans]
    if len(set(dirs)) < len(dirs):
        raise UserError("two runs would write the same report directory: give each its own")
    for removed in rundir.sweep():  # left by runs that were killed; never a live run's
        log(removed.describe())
    for p in plans:
        build(p)
    codes: list[int] = []
    for _key, group in itertools.groupby(plans, key=lambda p: p.environment_key() or id(p)):
        if codes and codes[-1] == INTERRUPTED_EXIT:
            break
        group_plans = list(group)
        provider = group_plans[0].provider
        started = time.monotonic()
        with contextlib.ExitStack() as stack:
            env, aside = bring_up(group_plans, provider, stack)
            for i, p in enumerate(group_plans):
                if i:
                    log(f"next run on the same environment: profile {p.profile.name}")
                    assert isinstance(provider, HandsOver)  # what keyed them together
                    provider.hand_over(p.profile.dispatcher_name, env)
                    started = time.monotonic()
                try:
                    handing_on = i + 1 < len(group_plans)
                    codes.append(
                        judge(p, provider, env, started, handing_on=handing_on, aside=aside)
                    )
                except UserError as exc:
                    if len(plans) == 1:
                        raise
                    log(f"error: {one_line(str(exc))}")
                    codes.append(2)
                if codes[-1] == INTERRUPTED_EXIT:
                    break
    return codes


def judge(
    p: Plan,
    provider: Provider,
    env: Environment,
    started: float,
    *,
    handing_on: bool = False,
    aside: Aside | None = None,
) -> int:
    """One profile judged on a running environment: its dispatcher started, the suite
    run, the report written, and everything the run made on the clusters removed.

    The removal is waited for only where the clusters outlive the environment (existing
    clusters); otherwise namespaces end as between two scenarios, in the background
    (Kubernetes' namespace controller waits 5 s before it starts on one). A run
    `handing_on` the environment to another keeps its cluster-scoped shared objects
    (flavor, priority classes, and a shared cluster scope's config, check and queue):
    deleted, they would linger behind what uses them, and the next run would find them
    there, or make them again, only to see them go."""
    profile, opts, report_dir = p.profile, p.opts, p.report_dir
    explain.announce(profile, [w.name for w in env.workers], log, env.provider)
    with contextlib.ExitStack() as stack:
        last_run = _fresh_report_dir(report_dir, env, profile.name)
        claims = None  # one environment runs every scenario that runs alone
        if aside is not None:  # two take them in turn (the run has this environment to itself)
            claims = env.run_dir / slots.CLAIMS_DIR
            claims.mkdir(mode=0o700)
        run_id = inventory.new_run_id()
        shape = context.Shape.of(profile)
        common = documents.shared_documents(shape)
        kept = common
        if profile.environment.cluster_scope == SHARED:
            kept = [*common, *documents.shared_scope_documents(env, shape)]
        keep = [(d["kind"], d["metadata"]["name"]) for d in kept] if handing_on else []
        wait = not provider.discards_clusters
        stack.callback(lambda: _purge(env, run_id, wait=wait, keep=keep))
        require_api_version(env, profile.environment.api_version)
        ready = functools.partial(
            stage, p, common=common, run_id=run_id, stack=stack, started=started, claims=claims
        )
        here = ready(provider, env)
        session_file = here.session.write(env.run_dir / SESSION_FILE)
        staged, aside_file = [here], None
        if aside is not None:  # its clusters go with it: nothing there to purge
            there = ready(
                aside.provider, aside.env, events=here.session.events_file, where=ASIDE_LOG
            )
            aside_file = there.session.write(aside.env.run_dir / SESSION_FILE)
            staged.append(there)
        reporter = stack.enter_context(
            progress.Reporter(
                here.session.events_file, report_dir, mode=opts.progress, history=last_run
            )
        )
        with contextlib.ExitStack() as watching:  # replicas that exit by themselves, said
            for each in staged:
                if each.dispatched.watch is not None:
                    watching.enter_context(each.dispatched.watch)
            ran = run_suite(
                p, provider, env, here.session, session_file, reporter, claims, aside_file
            )
        runner = here.dispatched.runner
        if isinstance(runner, deployrun.DeploymentRunner):  # every Pod's log, always kept
            runner.save_logs()
            collect_logs(env, report_dir)
        outcome = Outcome(
            started,
            time.monotonic(),
            tuple(s.dispatched for s in staged),
            interrupted=ran.interrupted,
            injected=ran.injected,
            faults_not_injected=ran.not_injected,
            exits=tuple(reporter.progress.exits),
        )
        report = build_report(profile, env, report_dir, opts, outcome)
        summary = report.summary()
        if summary["failed"] or summary["undecided"] or report.dispatcher_exits:
            runners = [s.dispatched.runner for s in staged]
            keep_evidence(provider, env, report_dir, runners, aside.env if aside else None)
        write_all(report, report_dir)
        reporter.end(
            summary=summary,
            notDecided=[c.id for c in report.checks if c.result == UNDECIDED],
            interrupted=ran.interrupted or None,
            report=str(report_dir / "report.yaml"),
        )
    return say_verdict(report, summary, report_dir, ran.interrupted, opts.checks)


def _fresh_report_dir(report_dir: Path, env: Environment, profile: str) -> dict[str, float]:
    """An empty report folder with its `results/`, and the environment without an earlier
    run's events; returns the last run's durations (of this `profile`), for the estimate."""
    last_run = progress.history(report_dir / progress.PUBLIC_FILE, profile)
    if report_dir.exists():
        shutil.rmtree(report_dir)
    (report_dir / "results").mkdir(parents=True)
    for stale in (EVENTS_FILE, faults.LOG_FILE):  # an earlier run's on this environment
        (env.run_dir / stale).unlink(missing_ok=True)
    return last_run


def _purge(env: Environment, run_id: str, *, wait: bool, keep: list[tuple[str, str]]) -> None:
    with contextlib.suppress(Exception):
        inventory.purge(env, run_id, wait=wait, keep=keep)
