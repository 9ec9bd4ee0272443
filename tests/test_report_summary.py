"""The job summary: one row per check, the dispatcher's account for a failed one, a check
not judged named as such, and the artifact linked."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness import cli
from harness.report import summary

REPORT = {
    "profile": "incremental",
    "environment": {
        "kueueVersion": "v0.19.2",
        "kubernetesVersion": "1.36.2",
        "provider": "local",
        "replicaNetwork": "the host's (it needs root (a rootless run keeps the host's network))",
    },
    "summary": {"result": "failed", "passed": 1, "failed": 1, "skipped": 1, "notSupported": 0},
    "checks": [
        {"id": "CORE-01", "name": "One nominee", "result": "passed", "message": ""},
        {
            "id": "EXT-03",
            "name": "Bounded fan-out",
            "result": "failed",
            "message": "5 reservations at once | (stepSize 3)",
            "dispatcherActions": {"summary": "it nominated w1..w5 in one write"},
        },
        {
            "id": "EXT-07",
            "name": "Rounds in order",
            "result": "skipped",
            "message": "needs 375s: runs in the full run (--full)",
        },
    ],
}


def _folder(tmp_path: Path, *runs: str) -> Path:
    for run in runs or ("",):
        (tmp_path / run).mkdir(parents=True, exist_ok=True)
        (tmp_path / run / "report.yaml").write_text(yaml.safe_dump({**REPORT, "profile": run}))
    return tmp_path


def test_each_check_is_a_row_with_its_verdict_and_account(tmp_path: Path) -> None:
    text = summary.markdown(_folder(tmp_path), "mkdc-report-local", "https://example.test/a/1")
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 3
    assert rows[0].startswith("| CORE-01 One nominee | ✅ passed |  |")
    # the dispatcher's own account first, the check's words after; a | kept in its cell
    assert "it nominated w1..w5 in one write (5 reservations at once \\| (stepSize 3))" in rows[1]
    assert "⏭️ not judged in this run" in rows[2] and "--full" in rows[2]
    assert all(r.endswith("| [mkdc-report-local](https://example.test/a/1) |") for r in rows)
    assert "Not judged in this run, their scenarios too long for it: EXT-07 (" in text
    assert "— failed (1 failed, 1 passed, 1 skipped)" in text
    assert "Each replica's own network: not in this run, the host's (it needs root" in text


def test_several_runs_each_get_a_table_and_no_report_is_said(tmp_path: Path) -> None:
    text = summary.markdown(_folder(tmp_path, "incremental", "all-at-once"))
    assert text.count("| check | verdict |") == 2
    assert "### mkdc: all-at-once" in text and "### mkdc: incremental" in text
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "No report in" in summary.markdown(empty)


def test_the_command_prints_it(tmp_path: Path, capsys) -> None:
    assert cli.main(["report", "summary", str(_folder(tmp_path)), "--artifact", "r"]) == 0
    assert "| EXT-03 Bounded fan-out | ❌ failed |" in capsys.readouterr().out
    assert cli.main(["report", "summary", str(tmp_path / "nope")]) == 2


def test_a_check_named_but_not_decided_is_told() -> None:
    from harness.report.model import CheckResult, not_decided

    checks = [
        CheckResult("EXT-03", "n", "passed"),
        CheckResult("EXT-07", "n", "skipped", "needs 375s: runs in the full run (--full)"),
        CheckResult("EXT-11", "n", "undecided"),
        CheckResult("CORE-01", "n", "skipped"),  # not named: a run of every check skips it
    ]
    assert [c.id for c in not_decided(checks, ["EXT-03", "EXT-07", "EXT-11"])] == [
        "EXT-07",
        "EXT-11",
    ]
    assert not_decided(checks, []) == []
