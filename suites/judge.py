"""Judging a scenario: its checks evaluated on its timeline, each result recorded.

`conforms(scenario, "CORE-04", expected_cluster=...)` evaluates the named checks with
bounds derived from the profile's claims plus the scenario's facts, writes one
result file per check for the report, and fails the test with every violation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from harness import results
from harness.cluster import faults
from harness.profile import Claims
from harness.recording.timeline import MANAGER, Event, Kind, Timeline
from harness.results import Result, ScenarioResult
from harness.scenarios import progress, turns
from harness.scenarios.scenario import Scenario
from harness.scenarios.session import Session, current
from suites.actions import describe, exits_said
from suites.checks import CATALOGUE, Bounds, Check, Verdict, every_timeline, run_check
from suites.checks.verdict import at
from suites.judgement import judgement
from suites.scorecard import scorecard


def bounds(sc: Scenario, **facts: Any) -> Bounds:
    """The profile's claims plus this scenario's clusters, knobs and facts."""
    derived = Bounds.derive(
        sc.ctx.profile.claims.to_dict(),
        sc.order,
        sc.ctx.slacks,
        cluster_timeouts=sc.timeouts,
        tiers=sc.tiers,
        dispatcher_users=sc.ctx.known_users(),
    )
    return derived.with_scenario(**facts) if facts else derived


# after a nomination in time, for the copy to be admitted and recorded (where the check
# bounds nominations, and the placement only ends the scenario)
PLACEMENT_ROOM = 15.0
# for the recorder to see what the API already holds, on a loaded machine: where the check
# bounds the placement itself (CORE-04, CORE-09), or the nomination the scenario waits for
# (CORE-07), it has its verdict once past the bound and this
RECORDING_ROOM = 5.0


def placement_timeout(
    sc: Scenario, cluster: str | None = None, extra: float = 0.0, room: float = PLACEMENT_ROOM
) -> float:
    """How long to wait for placement on `cluster`: the claims' bound, with room to spare."""
    return bounds(sc).placement_bound(cluster) + extra + room


def needed_placement_timeout(sc: Scenario, cluster: str | None = None) -> float:
    """How long to wait for a placement a check merely needs before its decision point
    (CORE-03 and CORE-08 watch what follows a placement; CORE-06 and EXT-09 judge the
    placement after an eviction). Its time is no verdict, so a loaded machine gets one
    placement_slack more before the scenario gives up (undecided); the placements checks
    bound (CORE-04, CORE-09) keep ``placement_timeout``."""
    return placement_timeout(sc, cluster) + bounds(sc).placement_slack


def skip_if_slow(sc: Scenario, seconds: float, limit: float | None = None) -> None:
    """Extended scenarios whose claimed timing needs longer than `limit` run only in the
    full run. A core check always runs: its scenario takes its timing from the claims."""
    checks = judgement(sc).checks
    if any(CATALOGUE[c].feature is None for c in checks):
        return
    if seconds > (SLOW_LIMIT if limit is None else limit) and not current().full:
        record_skipped(
            current(), list(checks), f"needs {seconds:.0f}s: runs in the full run (--full)"
        )
        pytest.skip(f"needs {seconds:.0f}s of the claimed timing: full run only")


def one_escalation(sc: Scenario) -> int:
    """Workers for a config whose last cluster is one escalation away (``escalation_workers``
    of the claimed step)."""
    return escalation_workers(bounds(sc).step_size)


def escalation_workers(step_size: int | None) -> int:
    """A full first batch (the claimed stepSize) plus one. A step of "all" (None) has no
    escalation: two."""
    return (step_size or 1) + 1


# The most workers a scenario asks for by number (CORE-01: one outside the config and two
# in it; EXT-07's order, EXT-08's timeouts, the failover and resilience scenarios); every
# other asks for one_escalation or takes what there is (the fan-out scenarios).
MOST_WORKERS_BY_NUMBER = 3


def fewest_workers(claims: Claims) -> int:
    """The fewest workers on which every scenario runs for these claims: a run on more
    judges nothing more (the fan-out scenarios see a step too big on stepSize + 1), and
    each worker is an apiserver and a Kueue more on the machine."""
    step = claims.step_size if isinstance(claims.step_size, int) else None
    return max(MOST_WORKERS_BY_NUMBER, escalation_workers(step))


MOST_ESCALATIONS = 3  # judged one by one: the 2nd or 3rd late fails as the 1st would
SLOW_LIMIT = 150.0  # seconds an extended scenario may take outside the full run
FIRST_NOMINATION = 30.0  # seconds from submission (other scenarios wait as long)


def escalations_possible(step: int | None, clusters: int) -> int:
    """Escalations a config of `clusters` holds at a claimed step: its batches less one
    (a step of "all", None: none)."""
    return 0 if step is None else max(0, math.ceil(clusters / step) - 1)


def round_seconds(b: Bounds) -> float:
    """What one escalation may take: the claimed round and its slack."""
    return (b.round_timeout or 0.0) + b.escalation_slack


def escalations_within(b: Bounds, clusters: int, limit: float | None = SLOW_LIMIT) -> int:
    """How many escalations a scenario takes the dispatcher through: all the config holds,
    at most MOST_ESCALATIONS, and (``limit`` not None: outside the full run) no more than
    fit in ``limit`` seconds beside the wait a placement may need."""
    possible = min(MOST_ESCALATIONS, escalations_possible(b.step_size, clusters))
    if limit is None or not b.round_timeout:
        return possible
    fit = int((limit - b.placement_slack - PLACEMENT_ROOM) // round_seconds(b))
    return min(possible, max(fit, 0))


def override_timeouts(round_timeout: float | None, clusters: int) -> list[float]:
    """EXT-08's per-cluster round timeouts, one per cluster of its config, each its own:
    twice the claimed round and half a round more for each next cluster (10 s rounds: 20,
    25, 30 s), so the first round is overridden whichever cluster comes first."""
    base = round_timeout or 10.0
    return [base * (2 + i / 2) for i in range(clusters)]


# a scenario's set-up, first placement and clean-up, waiting no round (most take 30-90 s)
SCENARIO_BASE = 45.0
# scenarios that wait a claimed round: they escalate (CORE-04 and CORE-07 once, to the
# config's last cluster), or restart something late in a round (RestartSafe, HA)
ROUND_FEATURES = frozenset(
    {"Escalation", "Ordering", "PerClusterTimeout", "RestartSafe", "HighAvailability"}
)
ROUND_CORE = frozenset({"CORE-04", "CORE-07"})


# the wait for the earlier scenarios' leftovers to go where scenarios take turns
# (``harness.scenarios.turns``): Kueue and the namespace controller finish a cleanup in a
# few seconds (the reference in clusterScope shared on 1+4: 6.5 and 7.3 s); at worst the
# wait's bound, turns.CLEAN_TURN
CLEAN_TURN_EXPECTED = 7.0
# EXT-05/EXT-06's and EXT-08's set-up, judging and clean-up: they wait no placement (the
# reference's took 1 to 2 s besides their rounds, on 1+4 workers)
ROUNDS_BASE = 5.0
MULTI_ROUND = frozenset({"EXT-05", "EXT-06"})  # suites.rounds: up to MOST_ESCALATIONS
OVERRIDDEN_ROUND = "EXT-08"  # one round of override_timeouts


def scenario_timing(
    claims: Claims,
    slacks: Mapping[str, str],
    checks: Iterable[str],
    exclusive: bool,
    *,
    workers: int | None = None,
    takes_turns: bool = False,
    full: bool = False,
) -> tuple[float, float]:
    """(expected, bound): seconds a scenario deciding `checks` is expected to take for
    these claims before any has run, and the longest it waits for a dispatcher that misses
    its deadlines, for the estimate of the time left.

    Expected: its base (SCENARIO_BASE; ROUNDS_BASE for the scenarios that wait no
    placement) plus the claimed rounds it waits: one where it escalates once; two
    for one that runs alone (its restart comes late in a round and is judged over the
    next); EXT-05/EXT-06's as many as ``escalations_within`` the config of `workers`
    (default: the fewest its claims run on) in this run (``full`` or not); EXT-08's first
    overridden round. Bound: its base plus a needed placement's wait on that config, the
    claims reaching its last cluster (``needed_placement_timeout``), where a scenario whose
    dispatcher never places ends; EXT-05/EXT-06's and EXT-08's wait no placement but each
    escalation to its due time and RECORDING_ROOM. Where scenarios take turns
    (``takes_turns``), each first waits for a clean turn: CLEAN_TURN_EXPECTED, at worst
    turns.CLEAN_TURN."""
    count = workers or fewest_workers(claims)
    b = Bounds.derive(claims.to_dict(), [f"c{i}" for i in range(count)], dict(slacks))
    decided = set(checks)
    timeout = b.round_timeout or 0.0
    first = FIRST_NOMINATION + RECORDING_ROOM
    base = ROUNDS_BASE
    if decided & MULTI_ROUND:
        escalations = escalations_within(b, count, None if full else SLOW_LIMIT)
        expected = escalations * timeout
        bound = first + escalations * (round_seconds(b) + RECORDING_ROOM)
    elif OVERRIDDEN_ROUND in decided:
        overrides = override_timeouts(b.round_timeout, max(count, MOST_WORKERS_BY_NUMBER))
        expected = overrides[0]
        bound = first + max(overrides) + b.escalation_slack + RECORDING_ROOM
    else:
        base = SCENARIO_BASE
        waits = any(c in ROUND_CORE or CATALOGUE[c].feature in ROUND_FEATURES for c in decided)
        expected = (2 if exclusive else 1) * timeout if waits else 0.0
        bound = max(b.placement_bound() + PLACEMENT_ROOM + b.placement_slack, expected)
    turn, turn_bound = (CLEAN_TURN_EXPECTED, turns.CLEAN_TURN) if takes_turns else (0.0, 0.0)
    return base + expected + turn, base + bound + turn_bound


def claimed_order(sc: Scenario, workers: list[str]) -> list[str]:
    """`workers` in the order the claims say their clusters are tried (before setup)."""
    by_cluster = {sc.cluster(w): w for w in workers}
    return [by_cluster[c] for c in bounds(sc).ordered(by_cluster)]


def nominated_within(sc: Scenario, seconds: float) -> str:
    """The last configured cluster the claims have nominated `seconds` after submission
    (the last one, when the claims do not say: its bound is then the worst case)."""
    b = bounds(sc)
    reached = [c for c in b.ordered() if b.escalation_delay(c) <= seconds]
    return reached[-1] if reached else b.ordered()[-1]


def last_nominated_worker(tl: Timeline, members: Mapping[str, str]) -> str | None:
    """The worker behind the last of the scenario's clusters (`members`: MultiKueueCluster
    -> worker) nominated on `tl`, one workload's timeline; None while none was. A scenario
    that acts on that worker waits for it (`wait_until`), so a dispatcher that nominated
    nothing ends it with a timed-out wait that says so, not with an IndexError."""
    names = [name for names in tl.where_nominated() for name in names if name in members]
    return members[names[-1]] if names else None


def round_timeout(sc: Scenario, default: float = 5.0) -> float:
    """The claimed round timeout (a short default for dispatchers that never escalate)."""
    claimed = bounds(sc).round_timeout
    return default if claimed is None else claimed


def conforms(sc: Scenario, *check_ids: str, **facts: Any) -> None:
    """The scenario's timeline satisfies these checks (default: the test's declared ones)."""
    record = judgement(sc)
    ids = list(check_ids or record.checks)
    tl, b, origin = _observed(sc, **facts)
    failures = []
    for check_id in ids:
        if not _wanted(check_id):
            continue
        if not CATALOGUE[check_id].supported_by(sc.ctx.profile.claims.features):
            # measured for the scorecard, not judged: the profile does not claim it
            feature = CATALOGUE[check_id].feature
            _record(
                sc,
                check_id,
                Verdict.ok(),
                tl,
                b,
                origin,
                result=Result.NOT_SUPPORTED,
                why=f"the profile does not claim {feature}",
            )
            continue
        verdict = run_check(
            CATALOGUE[check_id], tl, b, workloads=sorted(set(sc.jobs.values()) - sc.foreign)
        )
        _record(sc, check_id, verdict, tl, b, origin)
        if check_id in record.failed:
            failures.append(f"{check_id} {CATALOGUE[check_id].name}: {record.failed[check_id]}")
    assert not failures, "\n".join(failures)


def judge_every_timeline(sc: Scenario) -> None:
    """Checks that hold on any timeline, recorded for every scenario that ran workloads."""
    if not sc.jobs:
        return
    ids = [c for c in every_timeline() if c not in judgement(sc).checks]
    tl, b, origin = _observed(sc)
    for check_id in ids:
        if _wanted(check_id):
            verdict = run_check(
                CATALOGUE[check_id], tl, b, workloads=sorted(set(sc.jobs.values()) - sc.foreign)
            )
            _record(sc, check_id, verdict, tl, b, origin)


def _wanted(check_id: str) -> bool:
    return current().selects(check_id)


def _write(session: Session, record: ScenarioResult, *, quotes_error: bool = False) -> None:
    """The result file for the report, and the verdict for the live progress
    (`quotes_error`: its message quotes the scenario's exception, whose traceback the
    console then points at, on this line, instead of on one of its own)."""
    results.write(session.results_dir, record)
    check = CATALOGUE.get(record.check)
    progress.emit(
        session.events_file,
        progress.CHECK_VERDICT,
        check=record.check,
        name=check.name if check is not None else "",
        scenario=record.scenario,
        result=str(record.result),
        message=record.message,
        durationSeconds=record.duration_seconds,
        dispatcher=record.dispatcher_actions.summary if record.dispatcher_actions else "",
        traceback=quotes_error,
    )


def record_errored(sc: Scenario, error: str, *, timed_out: bool = False) -> None:
    """The scenario broke before judging its checks (e.g. a wait timed out).

    Each check not yet recorded is judged on what was recorded first: a violation it shows
    is `failed`. Otherwise see `settle`.
    """
    record = judgement(sc)
    tl, b, origin = _observed(sc)
    keys = sorted(set(sc.jobs.values()) - sc.foreign)
    pending = [c for c in record.checks if c not in record.recorded and _wanted(c)]
    verdicts = {c: run_check(CATALOGUE[c], tl, b, workloads=keys) for c in pending}
    for check_id, verdict in verdicts.items():
        if not verdict.passed and not verdict.inconclusive:
            _record(sc, check_id, verdict, tl, b, origin)
    for check_id, verdict in verdicts.items():
        judged = verdict.passed and CATALOGUE[check_id].judges_what_came
        if check_id not in record.recorded and judged and record.failed:
            why = unseen(record.failed, b.observed_until)
            _record(sc, check_id, verdict, tl, b, origin, result=Result.PASSED, why=why)
    for check_id, verdict in verdicts.items():
        if check_id not in record.recorded:
            result, message = settle(check_id, error, timed_out, record.failed, tl)
            quotes = result == Result.UNDECIDED and error in message
            _record(sc, check_id, verdict, tl, b, origin, result=result, why=message, quotes=quotes)


def unseen(failed: Mapping[str, str], observed_until: float | None) -> str:
    """What a check that passed on the evidence of a scenario another check broke could
    not see: whatever would have come after (EXT-06 judges the escalations that came,
    not those EXT-05 waited for in vain)."""
    first = min(failed, key=_catalogue_order)
    until = f" (to {at(observed_until)})" if observed_until is not None else ""
    return (
        f"passed on what was recorded{until}: {first} failed in this scenario, so what "
        f"would have come after was not seen: {failed[first]}"
    )


def settle(
    check_id: str, error: str, timed_out: bool, failed: Mapping[str, str], tl: Timeline
) -> tuple[Result, str]:
    """(result, message) of a check whose scenario broke and whose timeline shows no
    violation of it.

    - Another check failed in this scenario (e.g. CORE-01, judged on every timeline): that
      explains the break, so this check is `undecided`, naming it (one that passed on
      what was recorded is `passed`, saying what it could not see: `unseen`).
    - Else a wait timed out, and the wait is this check's decision point (its
      `decided_by_wait` in the catalogue: CORE-04 and CORE-09 wait for the placements they
      bound; CORE-06, CORE-07, EXT-09, EXT-11, EXT-13 and EXT-14 once their eviction,
      config change, failure or restart happened): the dispatcher broke this check's
      promise, so it is `failed` (unless an injected environment fault disturbed the
      scenario: see `excused`).
    - Else (a wait the check merely needed, e.g. CORE-03 and CORE-08 need a placement
      first; or an environment error): `undecided`, naming the error.
    """
    if failed:
        first = min(failed, key=_catalogue_order)
        others = sorted(set(failed) - {first}, key=_catalogue_order)
        also = f" (also {', '.join(others)})" if others else ""
        return (
            Result.UNDECIDED,
            f"undecided: {first} failed in this scenario{also}: {failed[first]}",
        )
    decides = CATALOGUE[check_id].decided_by_wait
    if timed_out and decides is not None and decides(tl):
        return Result.FAILED, f"scenario did not complete: {error}"
    if timed_out:
        return Result.UNDECIDED, f"undecided: a wait {check_id} needed first timed out: {error}"
    return Result.UNDECIDED, f"undecided: the scenario stopped before {check_id} decided: {error}"


def _catalogue_order(check_id: str) -> int:
    return list(CATALOGUE).index(check_id) if check_id in CATALOGUE else len(CATALOGUE)


def _record(
    sc: Scenario,
    check_id: str,
    verdict: Verdict,
    tl: Timeline,
    b: Bounds,
    origin: float,
    *,
    result: Result | None = None,
    why: str = "",
    quotes: bool = False,
) -> None:
    record = judgement(sc)
    record.recorded.add(check_id)
    if result is None:
        result = (
            Result.PASSED
            if verdict.passed
            else (Result.SKIPPED if verdict.inconclusive else Result.FAILED)
        )
    hidden = gate_hides(CATALOGUE[check_id], _env_info(sc).get("kueueFeatureGates"))
    if hidden and result != Result.NOT_SUPPORTED:
        result, why = Result.UNDECIDED, f"{hidden}: not judged ({result}: {why or verdict.message})"
    excuse = excused(CATALOGUE[check_id], result, sc, origin)
    if excuse:
        result, why = Result.UNDECIDED, f"{excuse}: not judged ({result}: {why or verdict.message})"
    actions = None
    if result == Result.FAILED:
        record.failed[check_id] = why or verdict.message
        own = sorted(set(sc.jobs.values()) - sc.foreign)
        actions = describe(tl, b, own, audited=_audited(sc), scenario=sc.name)
    _write(
        current(),
        ScenarioResult(
            check=check_id,
            scenario=sc.name,
            result=result,
            message=_with_context(
                sc, why or (verdict.message if result != Result.PASSED else ""), tl
            ),
            measured=verdict.measured,
            duration_seconds=round(sc.ctx.recorder.now() - sc.started, 1),
            timeline=tl.to_list(),
            origin=round(origin, 3),
            observed_until=b.observed_until,
            config=tuple(b.clusters),
            shared_clusters=sc.shared,  # the environment's, made before the dispatcher
            foreign=tuple(sorted(sc.foreign)),
            dispatcher_users=tuple(sorted(sc.ctx.known_users())),
            scorecard=scorecard(
                Timeline(e for e in tl if e.workload not in sc.foreign),
                set(sc.ctx.known_users()),
            ),
            timeouts=b.report_timeouts(),
            shape=sc.shape.to_report(),
            dispatcher_actions=actions,
        ),
        quotes_error=quotes,
    )


def _audited(sc: Scenario) -> bool:
    """Whether the manager keeps an audit log (the local provider's), so the timeline holds
    every request of the dispatcher's; elsewhere only its nominations are seen."""
    return bool(_env_info(sc).get("auditLog"))


def _env_info(sc: Scenario) -> dict[str, Any]:
    """What the provider said of the environment (none for a scenario without one)."""
    return getattr(sc.ctx.env, "info", None) or {}


def gate_hides(check: Check, gates: dict[str, bool] | None) -> str:
    """Why the Kueue's feature gates, as run, hide what `check` judges, or ""."""
    return "; ".join(filter(None, (g.unmet(gates) for g in check.gates)))


def excused(check: Check, result: Result, sc: Scenario, origin: float) -> str:
    """Why an injected environment fault excuses this result (see harness.cluster.faults), or "".
    A check that rests on the dispatcher's own writes is never excused; any other failed
    or undecided result of a scenario the fault disturbed becomes undecided, naming it."""
    if result not in (Result.FAILED, Result.UNDECIDED) or check.writes_only:
        return ""
    return environment_note(sc.environment_faults(), origin)


def environment_note(hit: list[faults.Window], origin: float) -> str:
    """``environment: <fault> at t=...; <fault> ...`` for the injected faults that excuse a
    result (times from ``origin``), or "" when none did."""
    return "environment: " + "; ".join(w.describe(origin) for w in hit) if hit else ""


def _with_context(sc: Scenario, message: str, tl: Timeline | None = None) -> str:
    """A message about a result that is not passed, with what the reader must know about
    how the scenario was set up (e.g. clusters made after the dispatcher started) and
    about the dispatcher's exits before the decision."""
    exited = "; ".join(exits_said(tl)) if tl is not None else ""
    notes = [
        n
        for n in (judgement(sc).note, f"the dispatcher had exited: {exited}" if exited else "")
        if n
    ]
    return f"{message} ({'; '.join(notes)})" if message and notes else message


def _observed(sc: Scenario, **facts: Any) -> tuple[Timeline, Bounds, float]:
    """The scenario's timeline and bounds, timed from its first event (returned too): check
    messages then give the same times as the report's pictures. The dispatcher's exits
    so far are on it (earlier ones at negative times): a check decided after one says so."""
    tl, now = sc.timeline(), sc.ctx.recorder.now()
    t0 = _origin(tl, now)
    tl = Timeline([*tl, *_exits(now)])
    return _relative(tl, t0), bounds(sc, observed_until=now - t0, **facts), t0


def _exits(now: float) -> list[Event]:
    """DISPATCHER_EXITED events of this environment's replicas up to `now`, from the run's
    progress stream (`mkdc run` says them there as they happen)."""
    session = current()
    return [
        Event(
            float(e["monotonic"]),
            MANAGER,
            Kind.DISPATCHER_EXITED,
            "",
            {k: e.get(k) for k in ("process", "code", "cause", "log")},
        )
        for e in progress.exits(session.events_file, session.environment)
        if float(e.get("monotonic") or 0.0) <= now
    ]


def _origin(tl: Timeline, default: float) -> float:
    first = next(iter(tl), None)
    return default if first is None else first.t


def _relative(tl: Timeline, t0: float) -> Timeline:
    """Times from the scenario's first event (`t0`), so pictures start at 0."""
    return Timeline.from_list([{**e.to_dict(), "t": e.t - t0} for e in tl])


def record_not_supported(session: Session, ids: list[str], feature: str | None) -> None:
    for check_id in ids:
        _write(
            session,
            ScenarioResult(
                check_id,
                "collection",
                Result.NOT_SUPPORTED,
                f"the profile does not claim {feature}",
            ),
        )


def record_skipped(session: Session, ids: list[str], why: str) -> None:
    for check_id in ids:
        _write(session, ScenarioResult(check_id, "collection", Result.SKIPPED, why))


SETUP_BROKE = "undecided: scenario {test} could not be set up ({error}), so it decided nothing"


def record_setup_failed(
    session: Session, test: str, ids: list[str], error: str, start: float, end: float
) -> None:
    """A scenario whose setup broke (the recorder could not list a cluster, say) judged
    nothing: each of its checks is undecided with the error, never silently unrecorded.
    An injected fault that overlapped the setup (``start``..``end``, monotonic seconds, the
    fault log's clock) is named first, as ``excused`` names it for a scenario that ran."""
    why = SETUP_BROKE.format(test=test, error=error)
    logged = faults.windows(faults.read_log(session.environment / faults.LOG_FILE))
    excuse = environment_note(faults.overlapping(logged, start, end), start)
    if excuse:
        why = f"{excuse} (t from the setup's start); {why}"
    for check_id in ids:
        _write(session, ScenarioResult(check_id, test, Result.UNDECIDED, why), quotes_error=True)


LEFT_BY_EARLIER = "left by an earlier scenario"
LEFT_BEHIND = (
    "undecided: {left} (" + LEFT_BY_EARLIER + ", still there after {seconds:.0f}s), "
    "so scenario {scenario} did not start and decided nothing"
)


def record_left_behind(
    session: Session, scenario: str, ids: list[str], left: str, seconds: float
) -> None:
    """A scenario that could not have a clean turn (`harness.scenarios.turns`): its checks
    are undecided with the leftover named first (the console shows a message's start),
    never judged on what another scenario left; their time is the wait for it."""
    why = LEFT_BEHIND.format(scenario=scenario, seconds=seconds, left=left)
    for check_id in ids:
        _write(session, ScenarioResult(check_id, scenario, Result.UNDECIDED, why, seconds))
