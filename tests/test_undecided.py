"""A scenario that broke before its decision point: which of its checks failed, which are
undecided, and what the undecided ones say."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cluster import faults
from harness.recording.timeline import MANAGER, Event, Kind, Timeline
from harness.scenarios import progress
from harness.scenarios.scenario import Scenario
from harness.scenarios.session import SESSION_ENV
from harness.scenarios.session import current as current_session
from suites import judge, judgement
from tests.sessions import FrozenRecorder, offline_context, use_session

KEY = "sc/wl"
WAIT = "TimeoutError: timed out after 75s waiting for sc/wl to be placed: sc/wl to be placed"
ROOT = Path(__file__).resolve().parents[1]
USER = "system:serviceaccount:kueue-system:mkdc-dispatcher-0"


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_session(tmp_path, monkeypatch)


def scenario(checks: list[str], *events: tuple[float, Kind, dict[str, Any]]) -> Scenario:
    recorder = FrozenRecorder()
    sc = Scenario(offline_context(recorder, dispatcher_users=frozenset({USER})), "sc")
    sc.started = recorder.started
    sc.jobs, sc.order = {"job": KEY}, ["sc-w1", "sc-w2"]
    judgement.judging(sc, checks)
    sc.members = {"sc-w1": "w1", "sc-w2": "w2"}
    recorder.events = [
        Event(recorder.started + t, MANAGER, kind, KEY if kind != Kind.ACTION else "", data)
        for t, kind, data in events
    ]
    return sc


def results(report_dir: Path) -> dict[str, dict[str, Any]]:
    records = [json.loads(p.read_text()) for p in (report_dir / "results").glob("*.json")]
    return {r["check"]: r for r in records}


def broke(sc: Scenario, error: str = WAIT, timed_out: bool = True) -> None:
    """What the scenario fixture does when the test body raised."""
    judge.judge_every_timeline(sc)
    judge.record_errored(sc, error, timed_out=timed_out)


CREATED: tuple[float, Kind, dict[str, Any]] = (1.0, Kind.WORKLOAD_CREATED, {})
OUTSIDE = (1.5, Kind.NOMINATION, {"names": ["worker1"], "writer": "vendor"})
INSIDE = (1.5, Kind.NOMINATION, {"names": ["sc-w1"], "writer": "vendor"})


def test_timed_out_wait_explained_by_core01_is_undecided_naming_it(session: Path) -> None:
    broke(scenario(["CORE-03"], CREATED, OUTSIDE))
    got = results(session)
    assert got["CORE-01"]["result"] == "failed"
    assert got["CORE-03"]["result"] == "undecided"
    assert got["CORE-03"]["message"].startswith("undecided: CORE-01 failed in this scenario: ")
    assert "worker1" in got["CORE-03"]["message"]


def test_an_undecided_check_quoting_the_error_points_at_its_traceback(session: Path) -> None:
    broke(scenario(["CORE-03"], CREATED, INSIDE))
    said = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
    verdicts = {e["check"]: e for e in said if e.get("event") == "check-verdict"}
    assert verdicts["CORE-03"]["result"] == "undecided" and WAIT in verdicts["CORE-03"]["message"]
    assert verdicts["CORE-03"]["traceback"] is True
    assert verdicts["CORE-01"]["traceback"] is False  # passed: no error of its own to show


def test_a_check_decided_after_the_dispatcher_exited_says_so(session: Path) -> None:
    """`mkdc run` said the exit in the run's progress stream; the checks decided after it
    say it in their messages, and the timeline they carry has it."""
    sc = scenario(["CORE-04"], CREATED, INSIDE)
    cause = "urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='127.0.0.1', port=6443)"
    for where, t in ((session, 31.0), (session / "elsewhere", 40.0)):  # the other's: not ours
        progress.emit(
            session / "events.jsonl",
            progress.REPLICA_EXIT,
            process="dispatcher-0",
            replica=0,
            code=1,
            cause=cause,
            log="artifacts/logs/dispatcher-0.log",
            monotonic=sc.started + t,
            environment=str(where),
        )
    broke(sc)
    got = results(session)["CORE-04"]
    assert got["result"] == "failed"
    assert got["message"].endswith(
        f"(the dispatcher had exited: dispatcher-0 exited with code 1 at t=30.0s: {cause})"
    )
    assert got["dispatcherActions"]["lines"][0] == (
        f"it exited: dispatcher-0 exited with code 1 at t=30.0s: {cause}"
    )
    exits = [e for e in got["timeline"] if e["kind"] == Kind.DISPATCHER_EXITED]
    assert [e["t"] for e in exits] == [30.0]
    assert results(session)["CORE-01"]["message"] == ""  # passed: nothing to explain


def test_a_violation_on_the_timeline_is_failed_not_undecided(session: Path) -> None:
    placed = (5.0, Kind.PLACEMENT, {"cluster": "sc-w1"})
    again = (9.0, Kind.NOMINATION, {"names": ["sc-w2"], "writer": None})
    broke(scenario(["CORE-03"], CREATED, INSIDE, placed, again))
    got = results(session)["CORE-03"]
    assert got["result"] == "failed" and "while placed on sc-w1" in got["message"]
    # what the dispatcher did comes with it (no audit log offline: its nominations as seen)
    assert got["dispatcherActions"]["lines"][0].startswith(
        "after the workload was placed on w1 at t=4.0s it wrote 1 time(s): [w2] at t=8.0s"
    )
    said = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
    verdict = next(e for e in said if e.get("check") == "CORE-03")
    assert verdict["dispatcher"].startswith("after the workload was placed on w1")
    assert results(session)["CORE-01"]["dispatcherActions"] is None  # passed: nothing to tell


def test_a_wait_that_is_the_decision_point_fails_the_check(session: Path) -> None:
    # observation ends before the bound, so the verdict alone cannot say; the wait did
    sc = scenario(["CORE-04"], CREATED, INSIDE)
    sc.ctx.recorder.now = lambda: sc.started + 10  # type: ignore[method-assign]
    broke(sc)
    got = results(session)["CORE-04"]
    assert got["result"] == "failed" and got["message"] == f"scenario did not complete: {WAIT}"


def test_a_wait_the_check_merely_needed_leaves_it_undecided(session: Path) -> None:
    broke(scenario(["CORE-03", "CORE-06"], CREATED, INSIDE))
    got = results(session)
    for check in ("CORE-03", "CORE-06"):  # both needed the first placement
        assert got[check]["result"] == "undecided"
        assert got[check]["message"] == f"undecided: a wait {check} needed first timed out: {WAIT}"


def test_an_environment_error_leaves_the_checks_undecided(session: Path) -> None:
    error = "ApiException: (500) Internal Server Error"
    sc = scenario(["CORE-04"], CREATED, INSIDE)
    sc.ctx.recorder.now = lambda: sc.started + 10  # type: ignore[method-assign]
    broke(sc, error=error, timed_out=False)
    got = results(session)["CORE-04"]
    assert got["result"] == "undecided" and got["message"].endswith(error)
    assert "before CORE-04 decided" in got["message"]


def test_core06_decides_on_its_wait_once_placed() -> None:
    placed = Timeline([Event(1.0, MANAGER, Kind.PLACEMENT, KEY, {"cluster": "w1"})])
    assert judge.settle("CORE-06", WAIT, True, {}, placed)[0] == "failed"
    assert judge.settle("CORE-06", WAIT, True, {}, Timeline())[0] == "undecided"
    failed = {"CORE-05": "Job on w1, w2 at once", "CORE-01": "nominated worker1"}
    result, message = judge.settle("CORE-06", WAIT, True, failed, placed)
    assert result == "undecided"
    assert message == "undecided: CORE-01 failed in this scenario (also CORE-05): nominated worker1"


SETUP_ERROR = "TimeoutError: worker2: no list within 40s"


def test_a_scenario_whose_setup_broke_leaves_each_check_undecided_with_the_error(
    session: Path,
) -> None:
    judge.record_setup_failed(
        current_session(), "test_x", ["CORE-03", "CORE-08"], SETUP_ERROR, 100.0, 140.0
    )
    got = results(session)
    assert set(got) == {"CORE-03", "CORE-08"}
    assert got["CORE-03"]["result"] == "undecided"
    assert got["CORE-03"]["message"] == (
        f"undecided: scenario test_x could not be set up ({SETUP_ERROR}), so it decided nothing"
    )


def test_an_injected_fault_during_a_broken_setup_is_named_as_the_environment(
    session: Path,
) -> None:
    log = [  # one fault overlapping the setup (100..140), one long before it
        faults.Record(1, "apiserver-restart", "worker2", "start", 110.0, "worker2's apiserver"),
        faults.Record(1, "apiserver-restart", "worker2", "end", 125.0, "worker2's apiserver"),
        faults.Record(2, "kueue-crash", "", "start", 10.0, "Kueue crashed"),
        faults.Record(2, "kueue-crash", "", "end", 15.0, "Kueue crashed"),
    ]
    (session / faults.LOG_FILE).write_text("".join(r.to_json() + "\n" for r in log))
    judge.record_setup_failed(current_session(), "test_x", ["CORE-04"], SETUP_ERROR, 100.0, 140.0)
    message = results(session)["CORE-04"]["message"]
    assert message.startswith(
        "environment: worker2's apiserver at t=10.0s to t=25.0s (t from the setup's start); "
        "undecided: scenario test_x could not be set up"
    )
    assert "Kueue crashed" not in message


def test_the_suite_records_a_setup_error_for_each_check_of_the_scenario(
    session: Path,
) -> None:
    """The conformance conftest, run for real on a session whose environment is gone: the
    shared context cannot be made, and the scenario's check is undecided, saying why."""
    test = "suites/conformance/test_core_placement.py::test_nominates_configured_only"
    shutil.copy(ROOT / "dispatchers/profiles/reference.yaml", session / "profile.yaml")
    env = {**os.environ, SESSION_ENV: str(session / "session.json")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:]
    got = results(session)
    assert got["CORE-01"]["result"] == "undecided"
    assert (
        "scenario test_nominates_configured_only could not be set up (FileNotFoundError"
        in (got["CORE-01"]["message"])
    )


def test_a_placement_a_check_merely_needs_is_waited_for_a_slack_longer() -> None:
    """Its timeout leaves the scenario undecided, so a loaded machine gets more time; the
    placements CORE-04 bounds keep their own wait."""
    sc = scenario(["CORE-03"])
    slack = judge.bounds(sc).placement_slack
    assert slack > 0
    assert judge.needed_placement_timeout(sc) == (judge.placement_timeout(sc) + slack)
    assert judge.needed_placement_timeout(sc, "sc-w2") == (
        judge.placement_timeout(sc, "sc-w2") + slack
    )


ESCALATION_WAIT = "TimeoutError: escalation 2 of 2 after round 2 (sc-w2), due 12s after it started"


def escalated_once(second_round_at: float) -> Scenario:
    """A dispatcher that escalated once (at `second_round_at`) and then stopped, on three
    configured workers with a 10 s round (the reference's claims); observed for 40 s (to
    t=39s after the workload was created)."""
    sc = scenario(
        ["EXT-05", "EXT-06"],
        CREATED,
        INSIDE,
        (second_round_at, Kind.NOMINATION, {"names": ["sc-w1", "sc-w2"], "writer": "vendor"}),
    )
    sc.order = ["sc-w1", "sc-w2", "sc-w3"]
    sc.members = {"sc-w1": "w1", "sc-w2": "w2", "sc-w3": "w3"}
    sc.ctx.recorder.now = lambda: sc.started + 40  # type: ignore[method-assign]
    return sc


def test_the_escalation_that_came_is_judged_when_the_next_never_did(session: Path) -> None:
    broke(escalated_once(11.6), ESCALATION_WAIT)
    got = results(session)
    assert got["EXT-05"]["result"] == "failed"
    assert got["EXT-06"]["result"] == "passed"
    assert got["EXT-06"]["measured"]["roundsJudged"] == 2  # the 2nd ran to its end too
    assert got["EXT-06"]["message"].startswith(
        "passed on what was recorded (to t=39.0s): EXT-05 failed in this scenario, so what"
        " would have come after was not seen: "
    )


def test_an_early_escalation_that_came_fails_though_the_next_never_did(session: Path) -> None:
    broke(escalated_once(4.0), ESCALATION_WAIT)
    got = results(session)
    assert got["EXT-06"]["result"] == "failed" and "escalation 1 early" in got["EXT-06"]["message"]
