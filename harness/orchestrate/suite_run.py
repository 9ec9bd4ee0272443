"""The suite launched on a readied environment: its scenarios run by pytest (in parallel,
then those that must run alone, or beside them on a second environment), with faults
injected into the environment while they run, if asked."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.cluster import faults, procs, rundir
from harness.cluster.environment import Environment
from harness.console import log
from harness.errors import UserError
from harness.orchestrate.options import Options
from harness.orchestrate.plan import Plan
from harness.providers import Provider
from harness.scenarios import progress
from harness.scenarios.session import SESSION_ENV, Session
from harness.suite import load as load_suite


@dataclass(frozen=True)
class SuiteRun:
    """How the suite's run ended."""

    interrupted: str = ""  # the signal that interrupted it ("" when none did)
    injected: tuple[faults.Window, ...] | None = None  # None: no fault was asked for
    not_injected: tuple[str, ...] = ()  # why some could not be


def run_suite(
    p: Plan,
    provider: Provider,
    env: Environment,
    session: Session,
    session_file: Path,
    reporter: progress.Reporter,
    claims: Path | None,
    aside_file: Path | None,
) -> SuiteRun:
    """The scenarios run by pytest, with faults injected if asked. A pytest that itself
    failed (not a check: its collection, a crash) is a UserError naming its log."""
    pytest_log = p.report_dir / progress.LOG_FILE
    selected = [c for c in load_suite().catalogue if session.selects(c)]
    parallel = parallelism(p, selected)
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
        code = pytest(
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
    return SuiteRun(
        interrupted,
        None if injected is None else tuple(injected),
        tuple(injector.errors) if injector is not None else (),
    )


def parallelism(p: Plan, selected: Sequence[str]) -> int:
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


def pytest(
    session_file: Path,
    parallel: int,
    log_file: Path,
    alone_left: Callable[[], bool],
    aside: Path | None = None,
) -> int:
    """Scenarios in parallel, then those that kill the dispatcher or load Kueue on purpose,
    alone, in a pytest of their own: beside them no other test process watches the
    clusters and tails the audit log, load that would count against their time bounds.
    The second pytest runs only if `alone_left` says the
    collections so far planned some that no environment has taken: starting it for
    nothing costs a run seconds. With an `aside` session (a second environment of their
    own) a third pytest runs them there from the start; each environment's takes the next
    one neither has (`harness.scenarios.slots`), so the first joins in once its other
    scenarios are done.

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


def _injector(opts: Options, provider: Provider, env: Environment) -> faults.Injector:
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
