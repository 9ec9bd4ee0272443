"""The self-test's pure parts: the expectation table, judging reports, the kill matrix."""

from __future__ import annotations

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


def test_run_one_runs_mkdc_with_the_checks_and_judges_the_report(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def runner(argv: list[str]) -> int:
        seen.append(argv)
        out = Path(argv[argv.index("--report-dir") + 1])
        out.mkdir(parents=True)
        checks = [{"id": "CORE-01", "result": "failed", "message": "w9 nominated"}]
        checks += [{"id": "CORE-02", "result": "passed"}, {"id": "CORE-03", "result": "passed"}]
        (out / "report.yaml").write_text(yaml.safe_dump({"checks": checks}))
        return 1

    outcome = run_one(EXPECTED["outside-config"], tmp_path, NAMES, ["-n", "1"], runner)
    assert outcome.ok and outcome.results["CORE-01"][0] == "failed"
    argv = seen[0]
    assert argv[argv.index("--profile") + 1] == "faulty-outside-config"
    assert argv[argv.index("--checks") + 1] == "CORE-01,CORE-02,CORE-05,CORE-03"
    assert argv[-2:] == ["-n", "1"]
    broken = run_one(EXPECTED["big-step"], tmp_path / "x", NAMES, (), lambda argv: 2)
    assert not broken.ok and "exited 2" in broken.error
    earlier = selftest.earlier_outcomes(tmp_path, NAMES)
    assert [o.expectation.fault for o in earlier] == ["outside-config"] and earlier[0].ok
    assert selftest.earlier_outcomes(tmp_path, NAMES, ["faulty-outside-config"]) == []
    run_one(EXPECTED["outside-config"], tmp_path / "y", NAMES, (), runner, Path("/p"))
    assert seen[-1][seen[-1].index("--profile") + 1] == "/p/faulty-outside-config.yaml"


def test_matrix_cell_shows_undecided_apart() -> None:
    from suites.selftest import cell

    assert [cell(r) for r in ("failed", "undecided", "passed", "skipped")] == [
        "killed",
        "undecided",
        "survived",
        "—",
    ]
