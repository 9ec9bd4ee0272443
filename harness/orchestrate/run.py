"""`mkdc run`: a conformance session per dispatcher profile (several profiles: one
after another, on one environment where they can share it).

The session owns the environment and the dispatcher processes; the checks run in
pytest (optionally several xdist workers) against that one environment, each
scenario in its own namespace and queues. Test processes reach back over the
control channel to kill or restart the dispatcher. Results come back as JSON
files, which this module folds into the report.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psutil

from harness.cluster import (
    faults,
    identity,
    inventory,
    kube,
    mountns,
    procs,
    rundir,
    toolchain,
    versions,
)
from harness.cluster.environment import Environment
from harness.cluster.kueue_install import KUEUE_ADMISSION, NAMESPACE
from harness.cluster.multikueue import API as KUEUE_API
from harness.cluster.procs import Supervisor
from harness.errors import UserError, one_line, shown, shown_path
from harness.orchestrate import container, control, deployrun, explain
from harness.orchestrate.dispatcher import DispatcherRunner, StartFailure
from harness.orchestrate.exits import ExitWatch
from harness.orchestrate.options import Options
from harness.orchestrate.report_builder import (
    build_report,
    due,
    environment_section,
    exit_entry,
    privileges,
    replica_entries,
)
from harness.profile import SHARED, Profile, RunSpec, load_profile, objects
from harness.providers import FAULTS
from harness.report import UNDECIDED, Report, write_all
from harness.scenarios import context, documents, progress, slots
from harness.scenarios.session import EVENTS_FILE, SESSION_ENV, Session
from harness.suite import catalogue as suite_catalogue
from harness.suite import load as load_suite

SESSION_FILE = "session.json"
SECOND_ENVIRONMENT = "second-environment"  # its logs' folder in artifacts/logs
ASIDE_LOG = "second environment: "  # what its console lines begin with
GIB = 1 << 30
# one cluster's memory (PSS), from the bring-up benchmark (docs/benchmarks.md)
CLUSTER_MEMORY = int(0.37 * GIB)
MEMORY_ROOM = 2 * GIB  # for the test processes and dispatchers of the run
REPORT_MARKERS = frozenset({"report.yaml", "results"})  # what says a folder is a report
DEFAULT_WORKERS = 4
INTERRUPTED_EXIT = 130


def log(msg: str) -> None:
    print(f"mkdc: {msg}", file=sys.stderr, flush=True)


def worker_names(opts: Options, profile: Profile) -> list[str]:
    """The workers' names: the profile's (a vendor's deployment shape), else worker1..N."""
    named = profile.environment.clusters
    if named is None:
        return [
            f"worker{i}"
            for i in range(1, (DEFAULT_WORKERS if opts.workers is None else opts.workers) + 1)
        ]
    if opts.workers is not None and opts.workers != len(named):
        raise UserError(
            f"--workers {opts.workers} but profile spec.environment.clusters names "
            f"{len(named)} ({', '.join(named)}): drop --workers or change the profile"
        )
    return list(named)


def make_provider(
    opts: Options, profile: Profile, v: versions.Versions, write_mode: str | None
) -> Any:
    if opts.provider == "local":
        from harness.providers.local import LocalProvider

        return LocalProvider(
            v,
            workers=worker_names(opts, profile),
            secret_pattern=profile.environment.worker_kubeconfig_secret,
            dispatcher_name=profile.dispatcher_name,
            kueue_extra=profile.kueue,
            write_mode=write_mode,
            progress=log,
            node_capacity=_node_capacity(profile),
        )
    if opts.provider == "existing":
        from harness.providers.existing import ExistingProvider, parse_cluster_args

        return ExistingProvider(
            parse_cluster_args(opts.clusters), dispatcher_name=profile.dispatcher_name
        )
    if opts.provider == "kind":
        from harness.providers.kind import KindProvider

        return KindProvider(
            v,
            workers=len(worker_names(opts, profile)),
            dispatcher_name=profile.dispatcher_name,
            kueue_extra=profile.kueue,
            write_mode=write_mode,
            node_capacity=_node_capacity(profile),
            progress=log,
            images=opts.kind_images,
        )
    raise UserError(f"unknown provider {opts.provider!r} (local, kind, existing)")


@dataclass
class Plan:
    """One run's inputs, checked before anything is built, started or written."""

    opts: Options
    profile: Profile
    versions: versions.Versions
    report_dir: Path
    provider: Any
    image: container.ImageSource | None = None
    # a deploy folder on kind: its images, checked before anything starts
    deployed: deployrun.Images | None = None

    def environment_key(self) -> tuple[Any, ...] | None:
        """Runs whose keys are equal can share one environment (the local provider's;
        the manager's Kueue is restarted for each other dispatcherName), the cluster scope's
        objects too; None: never."""
        p = self.provider
        if getattr(p, "hand_over", None) is None or self.opts.inject:
            return None
        return (
            p.versions,
            tuple(p.worker_names),
            p.secret_pattern,
            p.write_mode,
            json.dumps(p.kueue_extra, sort_keys=True),
            json.dumps(p.node_capacity, sort_keys=True),
            self.profile.environment.cluster_scope,
        )


def plan(opts: Options) -> Plan:
    """Every input of one run checked; a UserError says what is wrong. Nothing is started
    or written; only a Kueue source tree is built (cached by its hash)."""
    profile = load_profile(opts.profile)
    if profile.run is not None and profile.run.host_problem and opts.provider == "local":
        raise UserError(
            f"{profile.run.host_problem} (the local provider runs the container's command on"
            " this machine: give spec.run.goBuild, or run the folder's image on"
            " --provider kind)"
        )
    source = opts.kueue_source or os.environ.get("MKDC_KUEUE_SOURCE")
    if source and opts.provider == "existing":
        raise UserError(
            "--kueue-source builds the Kueue the run installs: existing clusters run their own;"
            " use --provider local or kind"
        )
    v = versions.select(opts.kueue_version, opts.kubernetes_version, source)
    # a Kueue source tree is built here: one that does not build is bad input
    toolchain.build_kueue_source(v, log)
    catalogue = load_suite().catalogue
    unknown = [c for c in (*opts.checks, *opts.skip_checks) if c not in catalogue]
    if unknown:
        shown_ids = ", ".join(shown(c) for c in unknown[:5]) + (", ..." if unknown[5:] else "")
        raise UserError(f"unknown check id(s) {shown_ids} (see `mkdc checks`)")
    try:
        load_suite().timeouts(profile.claims.to_dict(), opts.slacks)
    except ValueError as exc:
        raise UserError(f"--slack: {exc}") from None
    if opts.clusters and opts.provider != "existing":
        raise UserError(f"--cluster is for --provider existing, not {opts.provider}")
    report_dir = _report_dir(opts.report_dir)
    # Kueue's built-in dispatchers write as Kueue itself (kueue-admission); no policy needed.
    write_mode = KUEUE_ADMISSION if profile.is_builtin else profile.nomination_writes
    provider = make_provider(opts, profile, v, write_mode)
    if opts.inject and FAULTS not in provider.capabilities:
        raise UserError(
            f"--inject: the {opts.provider} provider cannot inject faults; use --provider local"
        )
    if opts.environments == 2 and getattr(provider, "twin", None) is None:
        raise UserError(
            f"--environments 2: the {opts.provider} provider makes one environment per run;"
            " use --provider local or --environments 1"
        )
    deployed = None
    if profile.run is not None and profile.run.deploy is not None and opts.provider == "kind":
        deployed = deployrun.images(profile.run, deployrun.docker_has)
    _require_short_tmpdir()  # last: every input of its own said first
    return Plan(opts, profile, v, report_dir, provider, deployed=deployed)


def _require_short_tmpdir() -> None:
    """The run's control socket lives in its run directory, under TMPDIR: a socket path
    longer than the kernel takes would crash the run once its environment is up."""
    tmp = Path(tempfile.gettempdir())
    longest = tmp / f"{max(rundir.PREFIXES, key=len)}xxxxxxxx"  # mkdtemp adds 8 characters
    size = len(os.fsencode(longest / control.SOCKET))
    if size > control.MAX_SOCKET_PATH:
        raise UserError(
            f"TMPDIR {shown_path(tmp)} is too long for the run's control socket"
            f" ({size} bytes, at most {control.MAX_SOCKET_PATH}): set TMPDIR to a shorter"
            " folder such as /tmp"
        )


def _build(p: Plan) -> None:
    """What the dispatcher runs from, built before any cluster starts."""
    run = p.profile.run
    if run is not None and run.image is not None:
        p.image = container.prepare(p.profile, p.opts.provider, log)
    elif run is not None and run.go_build is not None:
        built = toolchain.build_go_module(run.go_build, log)
        p.profile = replace(p.profile, run=replace(run, built=built))
        if run.deploy is not None and p.opts.provider != "local":
            p.image = deployrun.build_image(run.deploy, built, log)


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
        _build(p)
    codes: list[int] = []
    for _key, group in itertools.groupby(plans, key=lambda p: p.environment_key() or id(p)):
        if codes and codes[-1] == INTERRUPTED_EXIT:
            break
        group_plans = list(group)
        provider = group_plans[0].provider
        started = time.monotonic()
        with contextlib.ExitStack() as stack:
            env, aside = _environments(group_plans, provider, stack)
            for i, p in enumerate(group_plans):
                if i:
                    log(f"next run on the same environment: profile {p.profile.name}")
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


@dataclass
class Aside:
    """A run's second environment, where the scenarios that must run alone (the burst, the
    restarts) run beside the others instead of after them."""

    provider: Any
    env: Environment


def _environments(
    plans: Sequence[Plan], provider: Any, stack: contextlib.ExitStack
) -> tuple[Environment, Aside | None]:
    """The runs' environment up, and a second one (`_second_provider`) brought up beside
    it: on two cores, two bring-ups at once end sooner than one after the other, for each
    waits on its apiservers part of the time. Each is stopped when `stack` closes, however
    the other's bring-up ended."""
    stack.callback(provider.down)
    twin = _second_provider(plans)
    if twin is None:
        return provider.up(), None
    stack.callback(twin.down)
    with ThreadPoolExecutor(max_workers=1) as beside:
        second = beside.submit(twin.up)
        env = provider.up()  # on failure, the pool waits for the second before the stack stops it
        return env, Aside(twin, second.result())


def _second_provider(plans: Sequence[Plan]) -> Any | None:
    """The provider of a second environment for a run on an environment of its own; None
    where the provider cannot make one, the run lacks scenarios of either kind (alone, or to run
    beside them), faults are injected (into one environment), --environments 1 said so, or
    (unless --environments 2 said so) the memory left would not hold it. Several runs
    sharing one environment take their turns on it alone."""
    p = plans[0]
    twin = getattr(p.provider, "twin", None)
    if len(plans) > 1:
        if any(q.opts.environments == 2 for q in plans):
            log("several runs share this environment: each runs on it alone")
        return None
    if twin is None or p.opts.environments == 1 or p.opts.inject:
        return None
    suite = load_suite()
    kinds = {
        c: suite.runs_alone(c)
        for c, check in suite.catalogue.items()
        if due(c, check.feature, p.profile, p.opts)
    }
    alone = [c for c, runs_alone in kinds.items() if runs_alone]
    if not alone or False not in kinds.values():
        return None  # nothing to run beside them
    second = twin(progress=lambda msg: log(f"{ASIDE_LOG}{msg}"))  # bad input raises here
    if p.opts.environments is None:  # --environments 2: whatever the memory
        short = _memory_short(1 + len(getattr(p.provider, "worker_names", ())))
        if short:
            log(
                f"no second environment: {short}; the scenarios that run alone run after the others"
            )
            return None
    log(f"a second environment for the scenarios that run alone ({', '.join(alone)})")
    return second


def _memory_short(clusters: int) -> str:
    """Why a second environment of `clusters` clusters, brought up with the first, would
    not fit in the memory left: both, and as much again as one for the runs beside them;
    "" where it would."""
    needed = clusters * CLUSTER_MEMORY
    available = psutil.virtual_memory().available
    if available >= 3 * needed + MEMORY_ROOM:
        return ""
    return (
        f"{available / GIB:.1f} GiB of memory available, and the two environments need about"
        f" {2 * needed / GIB:.1f} GiB with {needed / GIB:.1f} GiB more to spare"
    )


def judge(
    p: Plan,
    provider: Any,
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
        _require_api_version(env, profile.environment.api_version)
        stage = functools.partial(
            _stage, p, common=common, run_id=run_id, stack=stack, started=started, claims=claims
        )
        session, runner, watch = stage(provider, env)
        session_file = session.write(env.run_dir / SESSION_FILE)
        runners, watches, aside_file = [runner], [watch], None
        if aside is not None:  # its clusters go with it: nothing there to purge
            aside_session, aside_runner, aside_watch = stage(
                aside.provider, aside.env, events=session.events_file, where=ASIDE_LOG
            )
            aside_file = aside_session.write(aside.env.run_dir / SESSION_FILE)
            runners.append(aside_runner)
            watches.append(aside_watch)
        reporter = stack.enter_context(
            progress.Reporter(session.events_file, report_dir, mode=opts.progress, history=last_run)
        )
        with contextlib.ExitStack() as watching:  # replicas that exit by themselves, said
            for each in filter(None, watches):
                watching.enter_context(each)
            interrupted, injected, not_injected = _run_suite(
                p, provider, env, session, session_file, reporter, claims, aside_file
            )
        if isinstance(runner, deployrun.DeploymentRunner):  # every Pod's log, always kept
            runner.save_logs()
            _collect_logs(env, report_dir)
        report = build_report(
            profile, env, report_dir, opts, time.monotonic() - started, interrupted
        )
        if aside is not None:
            report.environment["environments"] = 2
        if injected is not None:
            report.environment["injectedFaults"] = _injected(injected, started)
            if not_injected:
                report.environment["faultsNotInjected"] = not_injected
        report.dispatcher_exits = [exit_entry(e) for e in reporter.progress.exits]
        replicas = replica_entries(runners, watches)
        if replicas:
            report.environment["replicas"] = replicas
        summary = report.summary()
        if summary["failed"] or summary["undecided"] or report.dispatcher_exits:
            _keep_evidence(provider, env, report_dir, runners, aside)
        write_all(report, report_dir)
        reporter.end(
            summary=summary,
            notDecided=[c.id for c in report.checks if c.result == UNDECIDED],
            interrupted=interrupted or None,
            report=str(report_dir / "report.yaml"),
        )
    return _say_verdict(report, summary, report_dir, interrupted)


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


def _parallelism(p: Plan, selected: Sequence[str]) -> int:
    """How many scenarios run at once: one where the profile's shape has them share a
    fixed worker ClusterQueue or the environment's clusters, and no more than the
    selected checks have scenarios to share the environment (each test process more is
    an interpreter to start for nothing)."""
    parallel, environment = p.opts.parallel, p.profile.environment
    if environment.takes_turns and parallel > 1:
        why = (
            f"workerClusterQueue {environment.worker_cluster_queue}"
            if environment.worker_cluster_queue
            else "clusterScope shared"
        )
        log(f"{why}: scenarios take turns, one at a time")
        return 1
    shared = load_suite().shared_scenarios(selected)
    return min(parallel, shared) if shared else parallel


def _run_suite(
    p: Plan,
    provider: Any,
    env: Environment,
    session: Session,
    session_file: Path,
    reporter: progress.Reporter,
    claims: Path | None,
    aside_file: Path | None,
) -> tuple[str, list[faults.Window] | None, list[str]]:
    """The scenarios run by pytest, with faults injected if asked; returns the signal that
    interrupted them ("" when none did), the faults injected (None: none asked) and why
    any could not be."""
    pytest_log = p.report_dir / progress.LOG_FILE
    selected = [c for c in load_suite().catalogue if session.selects(c)]
    parallel = _parallelism(p, selected)
    beside = "; those that run alone beside them, on the second" if aside_file else ""
    log(f"running the suite for profile {p.profile.name} ({parallel} parallel{beside})")
    reporter.emit(
        progress.RUN_START,
        profile=p.profile.name,
        total=len(selected),
        checks=selected,
        parallel=parallel,
        aside=aside_file is not None,
        log=str(pytest_log),
    )
    injector = _injector(p.opts, provider, env) if p.opts.inject else None
    interrupted = ""
    try:
        code = _pytest(
            session_file,
            parallel,
            pytest_log,
            functools.partial(reporter.alone_left, claims),
            aside_file,
        )
    except KeyboardInterrupt as exc:  # the scenarios are stopped: report what they did
        interrupted, code = str(exc) or "SIGINT", 0
    finally:
        injected = injector.stop() if injector is not None else None
    reporter.pump()  # every event, before the run directory goes
    if code not in (0, 1):
        raise UserError(
            f"the suite itself failed (pytest exit {code}): read {pytest_log}"
            f" ({_last_line(pytest_log)})"
        )
    return interrupted, injected, list(injector.errors) if injector is not None else []


def _keep_evidence(
    provider: Any,
    env: Environment,
    report_dir: Path,
    runners: list[DispatcherRunner | None],
    aside: Aside | None,
) -> None:
    """The logs a reader needs when a check failed or stayed undecided, kept in the report
    before the run directory goes."""
    for each in filter(None, runners):
        each.save_logs()
    _provider_logs(provider)
    _collect_logs(env, report_dir)
    if aside is not None:
        _collect_logs(aside.env, report_dir, f"logs/{SECOND_ENVIRONMENT}")


def _say_verdict(
    report: Report, summary: dict[str, Any], report_dir: Path, interrupted: str
) -> int:
    """The verdict on the console, and the exit status it means."""
    log(
        f"{summary['result']}: {summary['passed']} passed, {summary['failed']} failed, "
        f"{summary['undecided']} undecided, {summary['skipped']} skipped, "
        f"{summary['notSupported']} not supported"
    )
    for finding in report.findings:
        log(f"finding: {finding.title}")
    log(f"report: {report_dir}/report.html")
    broken = summary["failed"] or summary["undecided"]
    log(f"{'tracebacks' if broken else 'pytest output'}: {report_dir / progress.LOG_FILE}")
    if interrupted:
        log(f"interrupted ({interrupted}): the report is partial")
        return INTERRUPTED_EXIT
    return 1 if broken else 0


def _stage(
    p: Plan,
    provider: Any,
    env: Environment,
    *,
    common: list[dict[str, Any]],
    run_id: str,
    stack: contextlib.ExitStack,
    started: float,
    events: Path | None = None,
    where: str = "",
    claims: Path | None = None,
) -> tuple[Session, DispatcherRunner | None, ExitWatch | None]:
    """One environment readied for the suite: the `common` objects every scenario uses,
    the dispatcher started on it, its control channel open; the session its test
    processes read, and the watch that says when a replica exits by itself. What it
    starts stops with `stack`."""
    profile, opts = p.profile, p.opts
    # cluster-scoped objects every scenario uses; ones that already exist stay untouched
    for cluster in env.clusters:
        for doc in common:
            kube.create_if_absent(cluster.dyn, inventory.label(doc, run_id))
    if profile.environment.cluster_scope == SHARED:
        # before the dispatcher starts, so one that looks only once sees it all
        documents.create_shared_scope(env, context.Shape.of(profile), run_id)
    deployed = _deployed(p, env)
    if profile.run is not None:
        _make_objects(profile.run, profile.dispatcher_name, env, run_id, stack, where)
    users: frozenset[str] = frozenset()
    runner = None
    audit_from = _audit_size(env)  # the audit log before it is earlier runs'
    if profile.run is not None:
        leases = _leases(env)
        stack.callback(lambda: _delete_new_leases(env, leases))
        try:
            runner, users = start_dispatcher(
                profile, env, run_id, stack, p.image, audit_from, where, deployed
            )
        except StartFailure as exc:
            _provider_logs(provider)
            raise _start_failure_report(exc, profile, env, p.report_dir, started) from None
    watch = None
    if runner is not None:
        watch = ExitWatch(
            runner,
            events or env.run_dir / EVENTS_FILE,
            env.run_dir,
            shared_network=getattr(runner, "network", None) is None,
            where=where,
            logs=f"artifacts/logs/{SECOND_ENVIRONMENT}" if where else "artifacts/logs",
        )
    server = control.Server(env.run_dir, _control_handlers(provider, runner, watch))
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
        capabilities=frozenset(getattr(provider, "capabilities", ())),
        slacks=opts.slacks or {},
        checks=opts.checks,
        skip_checks=opts.skip_checks,
        full=opts.full,
        worker_secrets=env.info.get("workerSecrets", {}),
        audit_from=audit_from,
        events=events,
        claims=claims,
    )
    return session, runner, watch


def _deployed(p: Plan, env: Environment) -> deployrun.Images | None:
    """A deploy folder applied as written (kind, existing): its images, and what is not
    applied (the containers left out) for the console and the report."""
    run = p.profile.run
    if run is None or run.deploy is None or env.provider == "local":
        return None
    if p.deployed is not None:  # kind: checked before the clusters started
        archive = p.image.archive if p.image is not None else None
        found = replace(p.deployed, archive=archive, kind=deployrun.kind_cluster_of(env))
    else:
        found = deployrun.on_cluster(run, env, p.image)
    env.info["notApplied"] = [*found.notes, *deployrun.unapplied(run)]
    return found


def _make_objects(
    run: RunSpec,
    dispatcher_name: str,
    env: Environment,
    run_id: str,
    stack: contextlib.ExitStack,
    where: str,
) -> None:
    """What the dispatcher needs before it starts: the profile's objects and its deploy
    folder's, made on the clusters until `stack` closes."""
    wanted = [run.objects]
    if run.deploy is not None:
        for note in env.info.get("notApplied", run.deploy.notes):
            log(f"{where}manifests: not applied here: {note}")
        if env.provider == "local":  # elsewhere the runner applies the folder as written
            wanted.append(run.deploy.objects)
    labels = {inventory.RUN_LABEL: run_id}
    for group in wanted:
        if group:
            made = stack.enter_context(objects.made(group, env, NAMESPACE, dispatcher_name, labels))
            log(f"{where}made before the dispatcher starts: {', '.join(made)}")


def _injector(opts: Options, provider: Any, env: Environment) -> faults.Injector:
    log(
        f"injecting {', '.join(opts.inject)}: one every {opts.inject_every:g}s, "
        f"{opts.inject_downtime:g}s each"
    )
    return faults.Injector(
        provider,
        [w.name for w in env.workers],
        opts.inject,
        env.run_dir / faults.LOG_FILE,
        every=opts.inject_every,
        downtime=opts.inject_downtime,
        progress=log,
    ).start()


def _injected(found: list[faults.Window], started: float) -> list[dict[str, Any]]:
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


def _report_dir(given: Path) -> Path:
    """The report directory, checked: it is emptied at the start, so it must be a new
    folder, an empty one or an earlier report; never a file, the cwd or the user's files."""
    shown_dir = shown_path(given)
    try:
        report_dir = given.resolve()
        if report_dir.exists() or report_dir.is_symlink():
            if not report_dir.is_dir():
                raise UserError(f"--report-dir {shown_dir}: exists and is not a folder")
            entries = {p.name for p in report_dir.iterdir()}
            if entries and not entries & REPORT_MARKERS:
                raise UserError(
                    f"--report-dir {shown_dir}: holds files that are not a mkdc report and "
                    "would be removed; choose a new or empty folder"
                )
            return report_dir
        parent = report_dir.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
    except OSError as exc:
        raise UserError(f"--report-dir {shown_dir}: {exc.strerror or exc}") from None
    except ValueError:
        raise UserError(f"--report-dir {shown_dir}: not a usable path (a NUL byte)") from None
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"--report-dir {shown_dir}: cannot be made in {shown_path(parent)}")
    return report_dir


def _audit_size(env: Environment) -> int:
    """Where this run's part of the manager's audit log begins (0: none kept)."""
    audit = env.info.get("auditLog")
    try:
        return Path(audit).stat().st_size if audit else 0
    except FileNotFoundError:
        return 0


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


def start_dispatcher(
    profile: Profile,
    env: Environment,
    run_id: str,
    stack: contextlib.ExitStack,
    image: container.ImageSource | None = None,
    audit_from: int = 0,
    where: str = "",
    deployed: deployrun.Images | None = None,
) -> tuple[DispatcherRunner, frozenset[str]]:
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
        network = _replica_network(profile.run, env, log, where)
        runner = DispatcherRunner(profile, supervisor, credentials, network)
        how = "as in a Pod" if profile.run.pod_environment else "as a process"
        how += ", each replica on a network of its own" if network is not None else ""
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
    docs = deployrun.documents(run, deployed.left_out, labels, pull_never=deployed.kind is not None)
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


def _replica_network(
    profile_run: RunSpec | None, env: Environment, log: Callable[[str], None], where: str
) -> list[int] | None:
    """The apiserver ports a replica reaches from a network namespace of its own (the
    manager's first), or None where replicas keep the host's network: asked for
    (`hostNetwork`), or another provider's clusters, which need not be on this host."""
    assert profile_run is not None
    if env.provider != "local":
        return None
    if profile_run.host_network:
        env.info["replicaNetwork"] = "the host's (spec.run.hostNetwork)"
        return None
    reason = mountns.network_isolation()
    if reason is not None:
        log(f"{where}dispatcher replicas share the host's network: {reason}")
        env.info["replicaNetwork"] = f"the host's ({reason})"
        return None
    env.info["replicaNetwork"] = "one of its own per replica (pasta)"
    return [c.endpoints["apiserver"] for c in env.clusters]


def _start_failure_report(
    exc: StartFailure,
    profile: Profile,
    env: Environment,
    report_dir: Path,
    started: float,
) -> UserError:
    """Keep the evidence before the run directory goes: the logs, and a report saying
    why nothing was judged. Returns the one-line error for the exit-2 path."""
    logs = _collect_logs(env, report_dir)
    report = Report.for_profile(
        profile,
        environment=environment_section(profile, env, {}, time.monotonic() - started),
        privileges=privileges(profile),
        error=f"the dispatcher could not be judged: {exc}",
        catalogue=suite_catalogue(),
    )
    write_all(report, report_dir)
    log_file = logs / f"{exc.process}.log"
    return UserError(f"{exc}: read {log_file} (report: {report_dir / 'report.yaml'})")


def _control_handlers(
    provider: Any, runner: DispatcherRunner | None, watch: ExitWatch | None = None
) -> dict[str, control.Handler]:
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
        "dispatcher-replica": lambda user: replica_of(need_runner(), user),
        "interrupt": lambda process, how: provider.interrupt(process, how),
        "resume": lambda process: provider.resume(process),
    }


def replica_of(runner: DispatcherRunner, user: str) -> int:
    """The replica an audit user is: a Pod of a vendor's Deployment (its runner knows
    which), else the replica's own ServiceAccount `...:mkdc-dispatcher-<i>`."""
    own = getattr(runner, "replica_of", None)
    return int(own(user)) if own is not None else int(user.rsplit("-", 1)[1])


def _node_capacity(profile: Profile) -> dict[str, str] | None:
    """Fake nodes that also offer the profile's resource (e.g. nvidia.com/gpu), so the
    pods of its workloads run."""
    resource = profile.environment.resource
    if resource in (None, "cpu", "memory"):
        return None
    from harness.providers.local import NODE_CAPACITY

    return {**NODE_CAPACITY, resource: "64"}


def _require_api_version(env: Environment, version: str | None) -> None:
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


def _pytest(
    session_file: Path,
    parallel: int,
    log_file: Path,
    alone_left: Callable[[], bool],
    aside: Path | None = None,
) -> int:
    """Scenarios in parallel, then those that kill the dispatcher or load Kueue on purpose,
    alone, in a pytest of their own: beside them no other test process watches the
    clusters and tails the audit log (with all in one pytest, the other process's
    recorder was running beside the 100-workload burst when it missed its bound). The
    second pytest runs only if `alone_left` says the collections so far planned some
    that no environment has taken: starting it for nothing costs a run seconds. With an
    `aside` session (a second environment of their own) a third pytest runs them there
    from the start; each environment's takes the next one neither has (`harness.scenarios.slots`),
    so the first joins in once its other scenarios are done.

    pytest's own output, tracebacks included, goes to `log_file`; the console shows the
    progress. Each pytest is a process group of its own that dies with this process
    (its xdist workers with it: `harness.scenarios.testproc`), and is stopped on an interrupt."""
    scenarios = str(load_suite().scenarios)
    base = [sys.executable, "-m", "pytest", scenarios, "-q", "-rfE", "-p", "no:cacheprovider"]
    # hypothesis's plugin (a dev dependency, for the unit tests) is loaded, and its
    # modules assert-rewritten, by every pytest it is installed beside, which makes each
    # start of a run's two or three pytest processes several times dearer in CPU
    base += ["-p", "harness.scenarios.testproc", "-p", "no:hypothesispytest"]
    shared = [*base, "-m", "not exclusive"]
    if parallel > 1:
        shared += ["-n", str(parallel)]
    alone = [*base, "-m", "exclusive"]
    here = _pytest_env(session_file)
    lanes = [[procs.Step(shared, here), procs.Step(alone, here, when=alone_left)]]
    if aside is not None:
        lanes.append([procs.Step(alone, _pytest_env(aside))])
    with log_file.open("ab") as out:
        codes = procs.run_lanes(lanes, out)
    # 5 = nothing selected in a phase (e.g. filtered out), which is fine here
    return max(0 if c == 5 else c for c in codes)


def _pytest_env(session_file: Path) -> dict[str, str]:
    """A suite pytest's environment: its session, and a temp dir in the run directory (what
    the run's processes leave goes with it)."""
    tmp = rundir.temp_dir(session_file.parent)
    return {**os.environ, SESSION_ENV: str(session_file), "TMPDIR": str(tmp)}


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    return lines[-1][:200] if lines else "no output"


def _purge(env: Environment, run_id: str, *, wait: bool, keep: list[tuple[str, str]]) -> None:
    with contextlib.suppress(Exception):
        inventory.purge(env, run_id, wait=wait, keep=keep)


def _provider_logs(provider: Any) -> None:
    """Logs a provider keeps outside the run directory (kind: Kueue in its pods) put there."""
    save = getattr(provider, "save_logs", None)
    if save is not None:
        try:
            save()
        except (OSError, UserError) as exc:  # evidence is best effort: the verdict stands
            log(f"could not save the provider's logs: {exc}")


def _collect_logs(env: Environment, report_dir: Path, folder: str = "logs") -> Path:
    """Kueue's and the dispatcher's logs, copied before the environment goes away."""
    target = report_dir / "artifacts" / folder
    target.mkdir(parents=True, exist_ok=True)
    for log_file in (env.run_dir / "logs").glob("*.log"):
        if "kueue" in log_file.name or "dispatcher" in log_file.name:
            shutil.copy(log_file, target / log_file.name)
    return target
