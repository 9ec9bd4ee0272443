"""The conformance session as pytest sees it: one shared environment, one scenario per test.

`mkdc run` starts the environment and the dispatcher, then runs this directory with
MKDC_SESSION pointing at its session file. Each test is declared a scenario, with the
checks it decides, by `@conformance(...)`; tests whose checks the profile does not claim are
reported not-supported, and every scenario is also judged by the checks that hold
on any timeline.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterator

import pytest

from harness.cluster.environment import Environment
from harness.errors import EnvironmentLimit
from harness.profile import SHARED, load_profile
from harness.providers import CANNOT
from harness.recording.recorder import Recorder
from harness.scenarios import control, progress, turns
from harness.scenarios.context import Context
from harness.scenarios.scenario import Scenario
from harness.scenarios.session import Session, current
from harness.scenarios.slots import scenario_slot
from suites import artifacts, judge, judgement
from suites.checks import CATALOGUE
from suites.checks.scenarios import Conformance, declared


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    session = current()
    profile = load_profile(session.profile)
    features = set(profile.claims.features)
    for item in items:
        spec = _declared(item)
        decided = _decided(spec, session)
        if not decided:
            item.add_marker(pytest.mark.skip(reason="filtered out by --checks/--skip-checks"))
            continue
        unsupported = [c for c in decided if not CATALOGUE[c].supported_by(features)]
        if len(unsupported) == len(decided) and not spec.scorecard:
            feature = CATALOGUE[decided[0]].feature
            judge.record_not_supported(session, decided, feature)
            item.add_marker(pytest.mark.skip(reason=f"not-supported: {feature} not claimed"))
        elif spec.slow and not session.full:
            judge.record_skipped(session, decided, "slow scenario: runs in the full run (--full)")
            item.add_marker(pytest.mark.skip(reason="slow: only in the full run"))
        elif spec.needs is not None and spec.needs not in session.capabilities:
            need = spec.needs
            why = CANNOT.get(need, need)
            judge.record_skipped(session, decided, f"the provider cannot {why}")
            item.add_marker(pytest.mark.skip(reason=f"provider lacks {need}"))
    planned = []
    workers = _worker_count(session)
    for item in items:
        if item.get_closest_marker("skip") is not None:
            continue
        alone = _declared(item).exclusive
        checks = _decided(_declared(item), session)
        expected, bound = judge.scenario_timing(
            profile.claims,
            session.slacks,
            checks,
            alone,
            workers=workers,
            takes_turns=profile.environment.takes_turns,
            full=session.full,
        )
        planned.append(
            {
                "test": item.nodeid,
                "checks": checks,
                "exclusive": alone,
                "expectedSeconds": expected,
                "boundSeconds": bound,
            }
        )
    progress.emit(session.events_file, progress.PLAN, scenarios=planned)


def _worker_count(session: Session) -> int | None:
    """The environment's workers, for the plan's priors (None: its file cannot be read,
    and the priors take the fewest workers the claims run on)."""
    try:
        return len(Environment.load(session.environment).workers)
    except (OSError, ValueError, KeyError):
        return None


def _declared(item: pytest.Item) -> Conformance:
    """The scenario's value, as `@conformance(...)` declared it: what the planner reads too."""
    found = declared(item.function) if isinstance(item, pytest.Function) else None
    if found is None:
        raise pytest.UsageError(
            f"{item.nodeid}: declare the scenario with @conformance(CHECK-ID, ...) "
            "(suites.checks.scenarios), so the planner sees it too"
        )
    return found


def _decided(spec: Conformance, session: Session) -> list[str]:
    """The scenario's checks that this session judges (--checks / --skip-checks)."""
    return [c for c in spec.checks if session.selects(c)]


@pytest.fixture(scope="session")
def context() -> Iterator[Context]:
    session = current()
    env = Environment.load(session.environment)
    recorder = Recorder(
        env,
        dispatcher_users=session.dispatcher_users,
        audit_from=session.audit_from,
        pod_users=session.pod_users,
    ).start()
    client = control.Client(session.control_address, session.control_key)
    ctx = Context(
        env=env,
        profile=load_profile(session.profile),
        recorder=recorder,
        run_id=session.run_id,
        slacks=session.slacks,
        dispatcher_users=session.dispatcher_users,
        capabilities=session.capabilities,
        control=client,
        worker_secrets=session.worker_secrets,
    )
    yield ctx
    recorder.stop()
    client.close()


@pytest.fixture
def scenario(request: pytest.FixtureRequest, context: Context) -> Iterator[Scenario]:
    short = re.sub(r"[^a-z0-9]+", "-", request.node.name.removeprefix("test_").lower()).strip("-")
    name = f"{short[:30].rstrip('-')}-{secrets.token_hex(2)}"
    spec = _declared(request.node)
    with scenario_slot(context.env.run_dir, exclusive=spec.exclusive):
        shared = context.profile.environment.cluster_scope == SHARED
        own = spec.own_clusters
        sc = Scenario(context, name, shared=shared and not own)
        note = (
            "clusterScope shared: this scenario changes the cluster set, so it builds its "
            "own MultiKueueClusters and config after the dispatcher started; a dispatcher "
            "that discovers clusters only at start cannot pass it"
            if shared and own
            else ""
        )
        judgement.judging(sc, spec.checks, note=note)
        progress.emit(
            current().events_file,
            progress.SCENARIO_START,
            test=request.node.nodeid,
            scenario=name,
            checks=_decided(spec, current()),
            exclusive=spec.exclusive,
        )
        _clean_turn(sc, spec)
        yield sc
        try:
            judge.judge_every_timeline(sc)
            report = getattr(request.node, "rep_call", None)
            if report is not None and report.failed:
                timed_out = getattr(request.node, "timed_out", False)
                judge.record_errored(sc, _first_line(report), timed_out=timed_out)
                artifacts.collect_artifacts(sc)
        finally:
            sc.cleanup()


def _clean_turn(sc: Scenario, spec: Conformance) -> None:
    """Where scenarios take turns on shared ClusterQueues (clusterScope shared, a fixed
    worker ClusterQueue), start only once the earlier ones left nothing, the scenario's
    time counted from then; else its checks are undecided naming the leftover, and it
    does not run."""
    if not sc.ctx.profile.environment.takes_turns:
        return
    left = turns.wait_clean(sc.ctx.env, sc.ctx.run_id, current=sc.name)
    if left:
        session = current()
        judge.record_left_behind(session, sc.name, _decided(spec, session), left, turns.CLEAN_TURN)
        pytest.skip(f"the earlier scenarios left {left}")
    sc.started = sc.ctx.recorder.now()


def _first_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return text.strip().splitlines()[0][:300] if text.strip() else "error"


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    """A scenario the environment cannot set up is skipped, with the reason in the report."""
    try:
        return (yield)
    except EnvironmentLimit as err:
        session = current()
        judge.record_skipped(
            session, _decided(_declared(pyfuncitem), session), f"environment: {err}"
        )
        pytest.skip(f"environment: {err}")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    if report.when == "setup" and report.failed and isinstance(item, pytest.Function):
        session = current()
        end = time.monotonic()
        judge.record_setup_failed(
            session,
            item.name,
            _decided(_declared(item), session),
            _first_line(report),
            end - call.duration,
            end,
        )
    if report.when == "call" and call.excinfo is not None:
        item.timed_out = call.excinfo.errisinstance(TimeoutError)  # type: ignore[attr-defined]
    return report
