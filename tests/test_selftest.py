"""The self-test's pure parts: the expectation table, judging reports, the kill matrix."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from dispatchers.faulty.faults import FAULTS
from harness.profile import load_profile
from suites import selftest
from suites.checks import CATALOGUE
from suites.selftest import (
    EXPECTED,
    NOT_DISPATCHER_VIOLABLE,
    QUICK,
    Expectation,
    Outcome,
    judge,
    plan_runs,
    read_report,
    render_matrix,
    run_lane,
    run_one,
)

NAMES = {cid: c.name for cid, c in CATALOGUE.items()}
PROFILES = Path(selftest.ROOT) / "dispatchers" / "profiles"


def test_every_violable_check_is_killed_by_some_fault() -> None:
    killed = {c for e in EXPECTED.values() for c in e.kills}
    assert killed | set(NOT_DISPATCHER_VIOLABLE) == set(CATALOGUE)
    assert not killed & set(NOT_DISPATCHER_VIOLABLE)
    for e in EXPECTED.values():
        assert set(e.checks) <= set(CATALOGUE) and not set(e.kills) & set(e.controls)


def test_every_fault_has_an_expectation_and_a_profile() -> None:
    assert set(EXPECTED) == set(FAULTS)
    shipped = {path.name for path in PROFILES.glob("faulty-*.yaml")}
    assert shipped == {f"faulty-{fault}.yaml" for fault in EXPECTED}, (
        "every faulty profile shipped is one the self-test runs, and no other"
    )
    assert set(QUICK) <= set(EXPECTED)
    for fault, e in EXPECTED.items():
        path = PROFILES / f"faulty-{fault}.yaml"
        text = path.read_text()
        assert text == selftest.faulty_profile(fault), (
            f"{path.name} is stale: run python -m suites.selftest --write-profiles"
        )
        profile = load_profile(path)
        assert profile.name == f"faulty-{fault}"
        assert profile.dispatcher_name == f"mkdc.example/faulty-{fault}"
        assert selftest.declared_kills(yaml.safe_load(text)) == e.kills
        base = load_profile("reference-ha" if FAULTS[fault].replicas > 1 else "reference")
        assert profile.claims == base.claims and profile.knobs == base.knobs
        assert profile.run is not None and "dispatchers.faulty" in profile.run.command


def test_judge_wants_a_left_behind_check_undecided_naming_the_leftover() -> None:
    e = EXPECTED["leaves-workloads"]
    assert e.kills == () and "CORE-04" in e.checks
    left = (
        "undecided: manager: Workload a/b from scenario a remains (left by an earlier "
        "scenario, still there after 90s), so scenario c did not start and decided nothing"
    )
    good = {"CORE-03": ("passed", ""), "CORE-04": ("undecided", left)}
    assert judge(e, good, NAMES) == []
    for other in (("passed", ""), ("undecided", "undecided: a wait CORE-04 needed first")):
        (problem,) = judge(e, {**good, "CORE-04": other}, NAMES)
        assert problem.startswith("CORE-04 should be undecided naming an earlier scenario's")
    assert judge(e, {"CORE-03": ("passed", "")}, NAMES) != []


def test_judge_wants_an_exit_in_the_report_and_carried_by_each_kill() -> None:
    e = EXPECTED["dies-uncaught"]
    assert e.exits and e.kills == ("CORE-04",)
    exited = [{"process": "dispatcher-0", "code": 1, "cause": "urllib3...MaxRetryError: ..."}]
    said = (
        "scenario did not complete: timed out (the dispatcher had exited: dispatcher-0 "
        "exited with code 1 at t=9.8s: urllib3.exceptions.MaxRetryError: ...)"
    )
    good = {"CORE-03": ("passed", ""), "CORE-04": ("failed", said)}
    assert judge(e, good, NAMES, exited) == []
    (problem,) = judge(e, good, NAMES, [])
    assert "not in the report (dispatcherExits)" in problem
    guessed = {**good, "CORE-04": ("failed", "scenario did not complete: timed out")}
    (problem,) = judge(e, guessed, NAMES, exited)
    assert problem.startswith("CORE-04 failed without saying the dispatcher had exited")
    # a fault that does not exit is not asked for one
    assert (
        judge(
            EXPECTED["never-escalates"],
            {"CORE-04": ("failed", "x"), "EXT-05": ("failed", "y")},
            NAMES,
        )
        == []
    )


def test_judge_accepts_exactly_the_expected_kills() -> None:
    e = Expectation("f", ("CORE-01",), ("CORE-02", "CORE-03"))
    good = {"CORE-01": ("failed", "w9 nominated"), "CORE-02": ("passed", "")}
    assert judge(e, good, NAMES) == []
    assert judge(e, {**good, "CORE-03": ("skipped", "inconclusive")}, NAMES) == []


@pytest.mark.parametrize(
    ("results", "says"),
    [
        ({"CORE-01": ("passed", "")}, "CORE-01 NominatesConfiguredOnly survived"),
        ({}, "CORE-01 was not judged (absent"),
        ({"CORE-01": ("skipped", "observation ended")}, "not judged (skipped: observation"),
        ({"CORE-01": ("failed", "")}, "failed without saying why"),
        ({"CORE-01": ("failed", "x"), "CORE-03": ("failed", "late")}, "CORE-03 No"),
    ],
)
def test_judge_names_each_broken_expectation(results: dict, says: str) -> None:
    e = Expectation("f", ("CORE-01",), ("CORE-02", "CORE-03"))
    problems = judge(e, results, NAMES)
    assert len(problems) == 1 and says in problems[0]


def test_read_report_leaves_out_checks_that_did_not_run(tmp_path: Path) -> None:
    doc = {
        "checks": [
            {"id": "CORE-01", "result": "failed", "message": "outside"},
            {"id": "CORE-04", "result": "skipped", "message": "not run in this session"},
            {"id": "EXT-01", "result": "not-supported", "message": "no BoundedFanOut"},
        ]
    }
    path = tmp_path / "report.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert read_report(path) == {
        "CORE-01": ("failed", "outside"),
        "EXT-01": ("not-supported", "no BoundedFanOut"),
    }


def test_matrix_marks_kills_survivors_and_unrun_checks() -> None:
    killed = Outcome(EXPECTED["outside-config"], {"CORE-01": ("failed", "x")}, seconds=61)
    hole = Outcome(
        EXPECTED["both-replicas-write"],
        {"EXT-12": ("passed", ""), "CORE-03": ("passed", "")},
        problems=["EXT-12 LeaderFailover survived: a hole in the check"],
    )
    text = render_matrix([killed, hole], ["CORE-01", "CORE-03", "EXT-12"])
    lines = text.splitlines()
    assert lines[0] == "| dispatcher | CORE-01 | CORE-03 | EXT-12 | wall | verdict |"
    assert lines[2] == "| outside-config | **killed** | — | — | 61s | ok |"
    assert lines[3].startswith("| both-replicas-write | — | survived | **survived** | 0s |")
    assert "hole in the check" in lines[3]


def test_plan_runs_quick_only_and_baselines() -> None:
    assert [e.fault for e in plan_runs(True)] == list(QUICK)
    full = plan_runs(False, baselines=("reference",))
    assert [e.row for e in full][-1] == "reference" and len(full) == len(EXPECTED) + 1
    assert full[-1].kills == () and set(full[-1].controls) >= {"EXT-12", "CORE-09"}
    assert [e.row for e in plan_runs(False, ["big-step"], ())] == ["big-step"]
    with pytest.raises(SystemExit):
        plan_runs(False, ["no-such-fault"])


def report_every_run(seen: list[list[str]], code: int = 1) -> Callable[[list[str]], int]:
    """A stand-in for `mkdc run --plan`: each run of the plan fails CORE-01 only."""

    def runner(argv: list[str]) -> int:
        seen.append(argv)
        for entry in yaml.safe_load(Path(argv[argv.index("--plan") + 1]).read_text()):
            out = Path(entry["reportDir"])
            out.mkdir(parents=True, exist_ok=True)
            checks = [{"id": "CORE-01", "result": "failed", "message": "w9 nominated"}]
            checks += [{"id": c, "result": "passed"} for c in entry["checks"] if c != "CORE-01"]
            doc = {"checks": checks, "environment": {"wallSeconds": 12.5}}
            (out / "report.yaml").write_text(yaml.safe_dump(doc))
        return code

    return runner


def test_run_lane_runs_one_plan_with_each_runs_checks_and_judges_each_report(
    tmp_path: Path,
) -> None:
    seen: list[list[str]] = []
    lane = [EXPECTED["outside-config"], EXPECTED["config-blind"], EXPECTED["big-step"]]
    outcomes = run_lane(lane, tmp_path, NAMES, ["-n", "1"], report_every_run(seen))
    assert [o.ok for o in outcomes] == [True, True, False]  # big-step must fail EXT-01..04
    assert "EXT-01" in outcomes[2].problems[0] and outcomes[0].seconds == 12.5
    [argv] = seen
    assert argv[-4:] == ["--environments", "1", "-n", "1"]  # one environment; theirs last
    entries = yaml.safe_load(Path(argv[argv.index("--plan") + 1]).read_text())
    assert [e["profile"] for e in entries] == [e.profile_name for e in lane]
    assert entries[0]["checks"] == ["CORE-01", "CORE-02", "CORE-05", "CORE-03"]
    assert entries[0]["reportDir"] == str(tmp_path / "faulty-outside-config")


def test_a_run_without_a_report_or_not_judged_is_an_error_and_no_stale_report_counts(
    tmp_path: Path,
) -> None:
    exp = EXPECTED["outside-config"]
    assert run_one(exp, tmp_path, NAMES, (), report_every_run([])).ok
    broken = run_one(exp, tmp_path, NAMES, (), lambda argv: 2)  # the earlier report is gone
    assert not broken.ok and "mkdc run exited 2" in broken.error
    report = tmp_path / exp.profile_name / "report.yaml"
    report.write_text(yaml.safe_dump({"error": "the dispatcher exited at start", "checks": []}))
    assert "exited at start" in selftest.outcome_of(exp, tmp_path, NAMES).error


def test_earlier_outcomes_and_profiles_from_another_folder(tmp_path: Path) -> None:
    seen: list[list[str]] = []
    run_one(EXPECTED["outside-config"], tmp_path, NAMES, (), report_every_run(seen))
    earlier = selftest.earlier_outcomes(tmp_path, NAMES)
    assert [o.expectation.fault for o in earlier] == ["outside-config"] and earlier[0].ok
    assert selftest.earlier_outcomes(tmp_path, NAMES, ["faulty-outside-config"]) == []
    elsewhere = tmp_path / "profiles"
    elsewhere.mkdir()
    shutil.copy(PROFILES / "faulty-outside-config.yaml", elsewhere)
    run_one(
        EXPECTED["outside-config"], tmp_path / "y", NAMES, (), report_every_run(seen), elsewhere
    )
    entries = yaml.safe_load(Path(seen[-1][seen[-1].index("--plan") + 1]).read_text())
    assert entries[0]["profile"] == str(elsewhere / "faulty-outside-config.yaml")


def test_lanes_put_the_longest_first_and_keep_a_lanes_environments_together() -> None:
    runs = [Expectation(f"f{i}", (), profile=f"p{i}") for i in range(6)]
    secs = {"p0": 700.0, "p1": 690.0, "p2": 20.0, "p3": 20.0, "p4": 20.0, "p5": 20.0}
    env = {"p0": "a", "p1": "b", "p2": "a", "p3": "b", "p4": "a", "p5": "b"}
    split = selftest.lanes(runs, 2, lambda e: env[e.profile_name], lambda e: secs[e.profile_name])
    names = [[e.profile_name for e in lane] for lane in split]
    assert names == [["p0", "p2", "p4"], ["p1", "p3", "p5"]]  # no lane brings up twice
    assert [len(x) for x in selftest.lanes(runs, 9, lambda e: "a", lambda e: 1.0)] == [1] * 6
    [one] = selftest.lanes(runs, 1, lambda e: env[e.profile_name], lambda e: secs[e.profile_name])
    assert [env[e.profile_name] for e in one] == ["a", "a", "a", "b", "b", "b"]


def test_the_faulty_dispatchers_and_the_reference_share_an_environment() -> None:
    external = {selftest.environment_of(e) for e in EXPECTED.values() if not FAULTS[e.fault].shared}
    reference, all_at_once, _ = plan_runs(False, (), selftest.BASELINES)[-3:]
    assert len(external) == 1 and selftest.environment_of(reference) in external
    # one judged in clusterScope shared has its config made before its dispatcher starts
    assert selftest.environment_of(EXPECTED["leaves-workloads"]) not in external
    assert selftest.environment_of(all_at_once) not in external  # Kueue's own dispatcher


def test_each_run_gets_the_fewest_workers_its_scenarios_run_on(tmp_path: Path) -> None:
    """Three (CORE-01's scenario), incremental four (its claimed stepSize 3, plus one);
    none where --workers is given for every run."""
    reference, all_at_once, incremental = plan_runs(False, (), selftest.BASELINES)[-3:]
    seen: list[list[str]] = []
    lane = [EXPECTED["outside-config"], reference, all_at_once, incremental]
    run_lane(lane, tmp_path, NAMES, (), report_every_run(seen))
    entries = yaml.safe_load(Path(seen[-1][seen[-1].index("--plan") + 1]).read_text())
    assert [e["workers"] for e in entries] == [3, 3, 3, 4]
    run_lane(lane, tmp_path, NAMES, ("--workers=5",), report_every_run(seen))
    entries = yaml.safe_load(Path(seen[-1][seen[-1].index("--plan") + 1]).read_text())
    assert all("workers" not in e for e in entries)
    for given in (["--workers", "5"], ["--work=5"], ["--w", "5"]):
        assert selftest.workers_of(reference, None, given) is None, given
    assert selftest.workers_of(reference, None, ["--", "-n", "2", "--checks", "CORE-01"]) == 3
    assert selftest.environment_of(all_at_once) != selftest.environment_of(incremental)


def test_matrix_cell_shows_undecided_apart() -> None:
    from suites.selftest import cell

    assert [cell(r) for r in ("failed", "undecided", "passed", "skipped")] == [
        "killed",
        "undecided",
        "survived",
        "—",
    ]
