"""Live progress: counting checks, estimating the time left, and the lines a reader sees,
from hand-made events."""

from __future__ import annotations

import io
import json
import multiprocessing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.profile import load_profile
from harness.scenarios import progress, turns
from harness.scenarios.progress import Follower, Progress, Reporter, human
from suites import judge
from tests.sessions import use_session

T0 = 1_000_000.0
A = "suites/conformance/test_core_placement.py::test_nominates_configured_only"
B = "suites/conformance/test_core_lifecycle.py::test_no_nomination_after_placement"
C = "suites/conformance/test_core_placement.py::test_eventual_placement"
BURST = "suites/conformance/test_core_burst.py::test_burst_liveness"
RESTART = "suites/conformance/test_resilience.py::test_restart_resilience"


def ev(kind: str, at: float, **fields: Any) -> dict[str, Any]:
    return {"event": kind, "time": T0 + at, **fields}


def start(total: int = 3, parallel: int = 2, aside: bool = False) -> dict[str, Any]:
    return ev(progress.RUN_START, 0, total=total, parallel=parallel, aside=aside)


def plan(*tests: tuple[str, bool], at: float = 1) -> dict[str, Any]:
    scenarios = [{"test": t, "checks": [], "exclusive": alone} for t, alone in tests]
    return ev(progress.PLAN, at, scenarios=scenarios)


def verdict(check: str, scenario: str, result: str, at: float, **more: Any) -> dict[str, Any]:
    return ev(progress.CHECK_VERDICT, at, check=check, scenario=scenario, result=result, **more)


def fed(p: Progress, *events: dict[str, Any]) -> list[dict[str, Any] | None]:
    return [p.feed(e) for e in events]


def test_each_check_counts_once_and_keeps_its_worst_verdict() -> None:
    p = Progress()
    out = fed(
        p,
        start(total=2),
        verdict("CORE-01", "a-1", "passed", 40),
        verdict("CORE-01", "a-1", "passed", 41),  # the same verdict from another process
        verdict("CORE-01", "b-2", "failed", 50),  # judged again on another timeline
        verdict("CORE-03", "b-2", "passed", 50),
    )
    assert out[2] is None
    assert [(e["done"], e["total"]) for e in out[1:] if e] == [(1, 2), (1, 2), (2, 2)]
    assert p.verdicts == {"CORE-01": "failed", "CORE-03": "passed"}
    assert out[3] and out[3]["elapsedSeconds"] == 50.0


def test_plans_from_every_process_are_one_plan() -> None:
    p = Progress()
    fed(p, start())
    assert p.feed(plan((A, False), (B, False))) is not None
    assert p.feed(plan((A, False), (B, False))) is None  # the second xdist worker's
    assert p.feed(plan((A, False), (BURST, True))) is not None  # a later phase adds one
    assert p.planned == {A: False, B: False, BURST: True}


def test_estimate_before_any_scenario_finished_uses_the_default() -> None:
    p = Progress()
    fed(p, start(parallel=2), plan((A, False), (B, False), (C, False), (BURST, True), at=0))
    each = progress.DEFAULT_SCENARIO_SECONDS
    # three shared scenarios two at a time, then the exclusive one alone
    assert p.eta(T0) == pytest.approx(3 * each / 2 + each)


def test_estimate_with_a_second_environment_shares_the_alone_ones_out() -> None:
    """The second environment runs the exclusive ones from the start; the first takes
    what is left of them once its shared ones are done."""
    p = Progress()
    scenarios = plan((A, False), (B, False), (C, False), (BURST, True), (RESTART, True), at=0)
    fed(p, start(parallel=2, aside=True), scenarios)
    each = progress.DEFAULT_SCENARIO_SECONDS
    # 1.5 of shared on the first, 2 of exclusive on the second: the first helps for 0.25
    assert p.eta(T0) == pytest.approx((3 * each / 2 + 2 * each) / 2)


def test_estimate_with_a_second_environment_is_never_under_a_side_alone() -> None:
    """No sharing makes the shared work shorter, nor splits one exclusive scenario."""
    shared_heavy = Progress()
    fed(shared_heavy, start(parallel=1, aside=True), plan((A, False), (B, False), (BURST, True)))
    assert shared_heavy.eta(T0) == pytest.approx(2 * progress.DEFAULT_SCENARIO_SECONDS)
    one_long = Progress(history={A: 20.0, BURST: 400.0})
    fed(one_long, start(parallel=2, aside=True), plan((A, False), (BURST, True)))
    assert one_long.eta(T0) == pytest.approx(400.0)


def test_estimate_learns_from_finished_scenarios_and_counts_running_ones() -> None:
    p = Progress()
    fed(
        p,
        start(parallel=2),
        plan((A, False), (B, False), (C, False), at=0),
        ev(progress.SCENARIO_START, 0, test=A, scenario="a-1"),
        ev(progress.SCENARIO_START, 0, test=B, scenario="b-2"),
        ev(progress.SCENARIO_END, 30, test=A, outcome="passed"),
        ev(progress.SCENARIO_START, 30, test=C, scenario="c-3"),
    )
    assert p.expected() == 30.0
    # at t=40: B has run 40 s of an expected 30 (a little more: 3 s), C 10 of 30 (20 left)
    assert p.eta(T0 + 40) == pytest.approx(20.0)
    fed(p, ev(progress.SCENARIO_END, 45, test=B, outcome="failed"))
    assert p.expected() == pytest.approx(37.5)
    fed(p, ev(progress.SCENARIO_END, 50, test=C, outcome="passed"))
    assert p.eta(T0 + 50) == 0.0


def test_skipped_scenarios_do_not_teach_the_estimate() -> None:
    p = Progress()
    fed(
        p,
        start(),
        plan((A, False), (B, False), at=0),
        ev(progress.SCENARIO_START, 0, test=A, scenario="a-1"),
        ev(progress.SCENARIO_END, 1, test=A, outcome="skipped"),
    )
    assert p.expected() == progress.DEFAULT_SCENARIO_SECONDS
    assert p.eta(T0 + 1) == progress.DEFAULT_SCENARIO_SECONDS


def test_no_estimate_until_a_scenario_is_known() -> None:
    p = Progress()
    out = p.feed(start())
    assert p.eta(T0) is None and out is not None and "etaSeconds" not in out


def test_a_verdict_line_names_check_scenario_result_time_count_and_estimate() -> None:
    p = Progress()
    fed(p, start(total=2), plan((A, False), (B, False), at=0))
    fed(p, ev(progress.SCENARIO_START, 0, test=A, scenario="nominates-configured-only-1a2b"))
    public = p.feed(
        verdict(
            "CORE-01",
            "nominates-configured-only-1a2b",
            "passed",
            41,
            name="NominatesConfiguredOnly",
            durationSeconds=41.2,
        )
    )
    assert public is not None
    line = human(public, "r/pytest.log")
    assert line == (
        "00:41 passed        CORE-01 NominatesConfiguredOnly  nominates-configured-only-1a2b"
        "  41.2s  [1/2 checks done, ~1m00s left (estimate)]"  # B is still to come
    )


def test_a_failed_verdict_line_ends_with_the_first_line_of_its_message() -> None:
    event = {
        **verdict("CORE-03", "s-1", "failed", 75, name="NoNominationAfterPlacement"),
        "message": "wrote nominations after placement\nmore detail",
        "durationSeconds": 75.0,
        "elapsedSeconds": 125,
        "done": 2,
        "total": 2,
        "etaSeconds": 0,
    }
    line = human(event, "r/pytest.log")
    assert line is not None
    assert line.startswith("02:05 failed        CORE-03 NoNominationAfterPlacement  s-1  1m15s")
    assert line.endswith(
        "[2/2 checks done, ~0s left (estimate)]: wrote nominations after placement"
    )


def test_a_failed_verdict_line_says_what_the_dispatcher_did() -> None:
    event = {
        **verdict("CORE-06", "s-1", "failed", 160, name="RedispatchAfterEviction"),
        "message": "evicted at t=3.0s, never placed; bound 150.0s",
        "dispatcher": "after the workload was evicted from w1 at t=3.0s it wrote nothing",
        "elapsedSeconds": 160,
    }
    line = human(event, "r/pytest.log")
    assert line is not None and line.endswith(
        ": evicted at t=3.0s, never placed; bound 150.0s | the dispatcher: after the "
        "workload was evicted from w1 at t=3.0s it wrote nothing"
    )
    assert "the dispatcher" not in str(human({**event, "dispatcher": ""}, "r/pytest.log"))


def test_a_broken_scenario_points_at_the_log_and_a_passed_one_is_quiet() -> None:
    p = Progress()
    fed(p, start(), ev(progress.SCENARIO_START, 0, test=A, scenario="a-1"))
    broken = p.feed(
        ev(progress.SCENARIO_END, 9, test=A, outcome="error", error="TimeoutError: gave up")
    )
    assert broken is not None
    assert human(broken, "r/pytest.log") == (
        "00:09 error         a-1: TimeoutError: gave up; traceback in r/pytest.log"
    )
    fed(p, ev(progress.SCENARIO_START, 10, test=B, scenario="b-2"))
    passed = p.feed(ev(progress.SCENARIO_END, 20, test=B, outcome="passed"))
    assert passed is not None and human(passed, "r/pytest.log") is None


def test_one_line_per_decided_check_and_a_broken_scenario_says_it_once() -> None:
    """A check judged on every timeline shows once, and again only when worse; a scenario
    whose failed check said what happened ends quietly (its traceback is in pytest.log);
    an undecided check that quotes its scenario's error points at the traceback itself."""
    p = Progress()
    fed(p, start(total=3), plan((A, False), (B, False), (C, False), at=0))
    fed(p, ev(progress.SCENARIO_START, 0, test=A, scenario="a-1"))
    fed(p, ev(progress.SCENARIO_START, 0, test=B, scenario="b-2"))
    error = "TimeoutError: timed out after 225s waiting for placement again"
    events = [
        verdict("CORE-01", "a-1", "passed", 10),
        verdict("CORE-06", "a-1", "failed", 11, message="evicted at t=3.0s, never placed"),
        ev(progress.SCENARIO_END, 12, test=A, outcome="failed", error=error),
        verdict("CORE-01", "b-2", "passed", 20),  # CORE-01 again, on B's timeline
        verdict(
            "CORE-03", "b-2", "undecided", 21, message=f"undecided: ...: {error}", traceback=True
        ),
        ev(progress.SCENARIO_END, 22, test=B, outcome="failed", error=error),
        verdict("CORE-01", "c-3", "failed", 30, message="nominated w9"),  # worse: news
    ]
    lines = [human(public, "r/pytest.log") for public in fed(p, *events) if public is not None]
    shown = [line for line in lines if line is not None]
    assert [line.split()[1:3] for line in shown] == [
        ["passed", "CORE-01"],
        ["failed", "CORE-06"],
        ["undecided", "CORE-03"],
        ["failed", "CORE-01"],
    ]
    assert shown[2].endswith(f"{error}; traceback in r/pytest.log")
    assert sum(error in line for line in shown) == 1


def test_the_end_line_says_what_was_not_decided() -> None:
    p = Progress()
    fed(p, start(total=2), verdict("CORE-01", "a-1", "passed", 40))
    end = p.feed(ev(progress.RUN_END, 65, notDecided=["CORE-03"], interrupted="SIGINT"))
    assert end is not None
    assert human(end, "log") == "01:05 interrupted: 1/2 checks done; not decided: CORE-03"


@pytest.mark.parametrize(
    ("seconds", "clock", "span"),
    [(0, "00:00", "0.0s"), (41.25, "00:41", "41.2s"), (125, "02:05", "2m05s"),
     (3725, "1:02:05", "1h02m")],
)  # fmt: skip
def test_times_read_at_a_glance(seconds: float, clock: str, span: str) -> None:
    assert progress.clock(seconds) == clock and progress.span(seconds) == span


def test_the_follower_reads_whole_lines_and_skips_broken_ones(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    follower = Follower(path)
    assert follower.read() == []  # not written yet
    path.write_bytes(b'{"event": "a"}\n{"event": "b"')
    assert follower.read() == [{"event": "a"}]
    with path.open("ab") as f:
        f.write(b'}\nnot json\n{"event": "c"}\n')
    assert follower.read() == [{"event": "b"}, {"event": "c"}]


def _write_many(path: Path, who: int) -> None:
    for i in range(300):
        progress.emit(path, "x", who=who, i=i, padding="p" * 500)


def test_lines_of_parallel_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    procs = [multiprocessing.Process(target=_write_many, args=(path, w)) for w in range(3)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(events) == 900 and {e["who"] for e in events} == {0, 1, 2}


def test_the_reporter_writes_the_public_stream_and_the_console(tmp_path: Path) -> None:
    events, report = tmp_path / "run" / "events.jsonl", tmp_path / "report"
    events.parent.mkdir()
    report.mkdir()
    err = io.StringIO()
    reporter = Reporter(events, report, poll=0.05, err=err).start()
    reporter.emit(progress.RUN_START, total=1, parallel=2)
    progress.emit(events, progress.PLAN, scenarios=[{"test": A, "exclusive": False}])
    progress.emit(events, progress.SCENARIO_START, test=A, scenario="a-1", checks=["CORE-01"])
    progress.emit(events, progress.PLAN, scenarios=[{"test": A, "exclusive": False}])
    progress.emit(events, progress.CHECK_VERDICT, check="CORE-01", scenario="a-1", result="passed")
    reporter.pump()  # as `mkdc run` does once pytest is done
    events.unlink()  # the run directory goes before the run's last word
    reporter.emit(progress.RUN_END, summary={"result": "passed"})
    reporter.close()
    public = [json.loads(line) for line in (report / progress.PUBLIC_FILE).read_text().splitlines()]
    assert [e["event"] for e in public] == [
        progress.RUN_START,
        progress.PLAN,
        progress.SCENARIO_START,
        progress.CHECK_VERDICT,
        progress.RUN_END,
    ]
    assert public[3]["done"] == 1 and public[3]["total"] == 1
    lines = err.getvalue().splitlines()
    assert len(lines) == 5 and all(line.startswith("mkdc: ") for line in lines)
    assert str(report / progress.LOG_FILE) in lines[0]


def test_in_jsonl_mode_the_console_gets_the_public_stream_on_stdout(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    reporter = Reporter(tmp_path / "events.jsonl", tmp_path, mode=progress.JSONL, out=out, err=err)
    reporter.emit(progress.RUN_START, total=3, parallel=2)
    reporter.close()
    assert err.getvalue() == ""
    [line] = out.getvalue().splitlines()
    assert json.loads(line) == json.loads((tmp_path / progress.PUBLIC_FILE).read_text())


def test_every_recorded_result_is_also_a_verdict_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = use_session(tmp_path, monkeypatch)
    from harness.scenarios.session import current

    judge.record_skipped(current(), ["CORE-04"], "the provider cannot take a process out")
    [event] = Follower(session / "events.jsonl").read()
    assert event["event"] == progress.CHECK_VERDICT
    assert (event["check"], event["name"], event["result"]) == (
        "CORE-04",
        "EventualPlacement",
        "skipped",
    )
    assert event["message"] == "the provider cannot take a process out"


def test_the_plan_line_says_how_many_scenarios_and_then_how_many_more() -> None:
    p = Progress()
    fed(p, start())
    first, second = fed(p, plan((A, False), (B, False)), plan((A, False), (BURST, True)))
    assert first is not None and second is not None
    assert human(first, "log") == (
        "00:01 2 scenario(s) to run [0/3 checks done, ~1m00s left (estimate)]"
    )
    assert human(second, "log") == (
        "00:01 1 more scenario(s) to run, 3 in all [0/3 checks done, ~2m00s left (estimate)]"
    )


def test_a_run_that_fails_still_ends_its_stream_saying_why(tmp_path: Path) -> None:
    err = io.StringIO()
    with (
        pytest.raises(RuntimeError),
        Reporter(tmp_path / "events.jsonl", tmp_path, err=err) as reporter,
    ):
        reporter.emit(progress.RUN_START, total=2, parallel=2)
        raise RuntimeError("the suite itself failed (pytest exit 3)")
    end = json.loads((tmp_path / progress.PUBLIC_FILE).read_text().splitlines()[-1])
    assert end["event"] == progress.RUN_END
    assert end["error"] == "the suite itself failed (pytest exit 3)"


def test_estimate_starts_from_the_previous_run_scaled_by_this_runs_pace(tmp_path: Path) -> None:
    previous = Progress()
    lines = [
        start(parallel=1),
        plan((A, False), (B, False), at=0),
        ev(progress.SCENARIO_START, 0, test=A, scenario="a-1"),
        ev(progress.SCENARIO_END, 10, test=A, outcome="passed"),
        ev(progress.SCENARIO_START, 10, test=B, scenario="b-2"),
        ev(progress.SCENARIO_END, 100, test=B, outcome="passed"),  # the long one, last
    ]
    public = tmp_path / progress.PUBLIC_FILE
    public.write_text("".join(json.dumps(previous.feed(e)) + "\n" for e in lines))
    last = progress.history(public)
    assert last == {A: 10.0, B: 90.0}
    assert progress.history(tmp_path / "none.jsonl") == {}

    p = Progress(history=last)
    fed(p, start(parallel=1), plan((A, False), (B, False), (C, False), at=0))
    assert p.eta(T0) == pytest.approx(10 + 90 + 50)  # C, never seen: the mean of the rest
    fed(
        p,
        ev(progress.SCENARIO_START, 0, test=A, scenario="a-1"),
        ev(progress.SCENARIO_END, 20, test=A, outcome="passed"),  # twice as slow this time
    )
    assert p.pace() == pytest.approx(2.0)
    # B: 90 s last time, so 180 s now, not the 20 s the mean of this run would say
    assert p.eta(T0 + 20) == pytest.approx(180 + 20)


def test_a_previous_run_of_another_profile_is_no_history(tmp_path: Path) -> None:
    previous = Progress()
    lines = [
        ev(progress.RUN_START, 0, total=1, parallel=1, profile="incremental"),
        plan((A, False), at=0),
        ev(progress.SCENARIO_START, 0, test=A, scenario="a-1"),
        ev(progress.SCENARIO_END, 300, test=A, outcome="passed"),
    ]
    public = tmp_path / progress.PUBLIC_FILE
    public.write_text("".join(json.dumps(previous.feed(e)) + "\n" for e in lines))
    assert progress.history(public, "incremental") == {A: 300.0}
    assert progress.history(public, "reference") == {}


def planned(*tests: tuple[str, bool, float, float], at: float = 0) -> dict[str, Any]:
    """A plan whose scenarios carry the suite's (expected, bound) seconds."""
    scenarios = [
        {"test": t, "checks": [], "exclusive": alone, "expectedSeconds": e, "boundSeconds": b}
        for t, alone, e, b in tests
    ]
    return ev(progress.PLAN, at, scenarios=scenarios)


def test_the_estimate_starts_from_the_suites_priors_and_learns_this_runs_pace() -> None:
    """A dispatcher with 30 s rounds: the suite expects its escalating scenarios to wait a
    round, and the restart alone two; the default (60 s each) said 3 minutes here."""
    p = Progress()
    fed(
        p,
        start(parallel=1),
        planned((A, False, 45, 200), (B, False, 75, 200), (RESTART, True, 105, 200)),
    )
    assert p.eta(T0) == pytest.approx(45 + 75 + 105)
    fed(
        p,
        ev(progress.SCENARIO_START, 0, test=A, scenario="a-1"),
        ev(progress.SCENARIO_END, 90, test=A, outcome="passed"),  # twice its prior
    )
    assert p.prior_pace() == pytest.approx(2.0)
    assert p.eta(T0 + 90) == pytest.approx(2 * 75 + 2 * 105)


def test_a_scenario_past_its_expected_time_may_run_to_its_bound() -> None:
    """It waits on a wait of its own (a dispatcher that misses a deadline makes it run to
    its bound): the estimate does not say a few seconds while minutes remain."""
    p = Progress()
    fed(p, start(parallel=1), planned((A, False, 45, 200), (B, False, 45, 200)))
    fed(p, ev(progress.SCENARIO_START, 0, test=A, scenario="a-1"))
    assert p.eta(T0 + 30) == pytest.approx(15 + 45)  # within its expected time
    assert p.eta(T0 + 60) == pytest.approx(4.5 + 45)  # a little past it: a little more
    assert p.eta(T0 + 100) == pytest.approx(100 + 45)  # well past it: up to its bound
    assert p.eta(T0 + 250) == pytest.approx(4.5 + 45)  # past its bound: a little more


def test_a_scenario_whose_checks_are_all_decided_is_only_cleaning_up() -> None:
    p = Progress()
    plan_ = planned((A, False, 45, 200), (B, False, 45, 200))
    plan_["scenarios"][0]["checks"] = ["CORE-06"]
    fed(p, start(parallel=1), plan_, ev(progress.SCENARIO_START, 0, test=A, scenario="a-1"))
    assert p.eta(T0 + 100) == pytest.approx(100 + 45)  # waiting, well past its time
    fed(p, verdict("CORE-06", "a-1", "failed", 100))
    assert p.eta(T0 + 100) == pytest.approx(0 + 45)  # decided: its clean-up is left


def test_estimate_is_said_to_be_one_until_a_scenario_of_this_run_finished() -> None:
    p = Progress(history={A: 30.0, B: 30.0})
    fed(p, start(total=2, parallel=1), plan((A, False), (B, False), at=0))
    first = p.feed(ev(progress.SCENARIO_START, 0, test=A, scenario="a-1"))
    assert first is not None and first["etaGuessed"] is True
    assert str(human(first, "r/pytest.log")).endswith("~1m00s left (estimate)]")
    fed(p, ev(progress.SCENARIO_END, 30, test=A, outcome="passed"))
    then = p.feed(ev(progress.SCENARIO_START, 30, test=B, scenario="b-2"))
    assert then is not None and then["etaGuessed"] is False
    assert str(human(then, "r/pytest.log")).endswith("[0/2 checks done, ~30s left]")


def test_the_suites_priors_count_the_claimed_rounds() -> None:
    """A scenario that escalates waits a claimed round, one that restarts something late
    in a round two; the bound is a needed placement's whole wait, never under them."""
    claims = replace(load_profile("reference").claims, round_timeout=30.0)
    base, bound = judge.scenario_timing(claims, {}, ["CORE-03"], False)
    one, _ = judge.scenario_timing(claims, {}, ["CORE-04"], False)
    two, _ = judge.scenario_timing(claims, {}, ["EXT-13"], True)
    assert (base, one - base, two - base) == (judge.SCENARIO_BASE, 30.0, 60.0)
    # 3 workers at stepSize 1: 60 s to the last cluster, then placement_slack twice, room
    assert bound == judge.SCENARIO_BASE + 60 + 60 + judge.PLACEMENT_ROOM + 60
    never = replace(claims, round_timeout=None)
    assert judge.scenario_timing(never, {}, ["EXT-13"], True)[0] == judge.SCENARIO_BASE


def test_the_priors_count_every_escalation_the_multi_round_scenario_waits() -> None:
    """EXT-05/EXT-06's scenario waits up to three rounds, as many as the config holds and
    the time budget allows; it waits no placement, so its bound is each escalation's due
    time. EXT-08's waits its first overridden round (twice the claimed one)."""
    claims = load_profile("reference").claims  # stepSize 1, 10 s rounds
    base = judge.ROUNDS_BASE  # they wait no placement
    first = judge.FIRST_NOMINATION + judge.RECORDING_ROOM
    each = 10 + 3 + judge.RECORDING_ROOM  # the round, escalation_slack, the recorder's room
    assert judge.scenario_timing(claims, {}, ["EXT-05", "EXT-06"], False, workers=4) == (
        base + 30,
        base + first + 3 * each,
    )
    assert judge.scenario_timing(claims, {}, ["EXT-05"], False, workers=3)[0] == base + 20
    assert judge.scenario_timing(claims, {}, ["EXT-08"], False, workers=4)[0] == base + 20
    # 5-minute rounds: none fit outside the full run (the scenario is skipped); all in it
    slow = replace(claims, round_timeout=300.0)
    assert judge.scenario_timing(slow, {}, ["EXT-05"], False, workers=4)[0] == base
    assert judge.scenario_timing(slow, {}, ["EXT-05"], False, workers=4, full=True)[0] == (
        base + 900
    )


def test_the_priors_count_the_clean_turn_of_scenarios_taking_turns() -> None:
    claims = load_profile("reference").claims
    alone = judge.scenario_timing(claims, {}, ["CORE-03"], False)
    turn = judge.scenario_timing(claims, {}, ["CORE-03"], False, takes_turns=True)
    assert turn[0] - alone[0] == judge.CLEAN_TURN_EXPECTED
    assert turn[1] - alone[1] == turns.CLEAN_TURN
