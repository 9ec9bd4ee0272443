"""A dispatcher replica that dies mid-run is said at once, and in the checks after it.

The faulty `dies-uncaught` writes its first nominations, then dies at its first
escalation on an uncaught urllib3 MaxRetryError (exit code 1), as a Python dispatcher
whose loop catches only ApiException would. CORE-03's scenario needs no escalation and
passes; CORE-04's needs one: the console says the exit with the traceback's last line,
the report lists it (`dispatcherExits`), and CORE-04's failure carries it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.report import verify_report
from harness.suite import catalogue
from tests.e2e.mkdc_cli import mkdc_run, report_of, results_of

CHECKS = "CORE-03,CORE-04"
SAID = re.compile(r"mkdc: \d\d:\d\d exited +the dispatcher ")  # the exit's own line
MAX_RETRY = "urllib3.exceptions.MaxRetryError: HTTPSConnectionPool("


@pytest.mark.e2e
def test_a_replica_that_dies_mid_run_is_said_at_once_and_by_the_checks_after_it(
    selected_versions, tmp_path: Path
) -> None:
    report_dir = tmp_path / "report"
    # the fewest workers both scenarios run on (CORE-04: stepSize 1, plus one); CORE-04's
    # wait for a placement after the exit is its bound: a shorter placement slack ends it
    # sooner (75 s by default, 35 s with this)
    args = ("--checks", CHECKS, "--workers", "2", "--slack", "placement_slack=20s")
    proc = mkdc_run("faulty-dies-uncaught", report_dir, *args)
    assert proc.returncode == 1, proc.stderr[-3000:]
    said = [line for line in proc.stderr.splitlines() if SAID.match(line)]
    assert len(said) == 1, proc.stderr[-3000:]
    assert "the dispatcher (dispatcher-0) exited with code 1: " + MAX_RETRY in said[0]
    assert said[0].endswith("artifacts/logs/dispatcher-0.log"), said[0]
    report = report_of(report_dir)
    [exited] = report["dispatcherExits"]
    assert exited["code"] == 1 and exited["cause"].startswith(MAX_RETRY), exited
    assert exited["log"] == "artifacts/logs/dispatcher-0.log"
    assert (report_dir / exited["log"]).exists()
    results = results_of(report)
    assert results["CORE-03"] == "passed" and results["CORE-04"] == "failed", results
    [core04] = [c for c in report["checks"] if c["id"] == "CORE-04"]
    assert "the dispatcher had exited: dispatcher-0 exited with code 1 at t=" in core04["message"]
    assert MAX_RETRY in core04["message"]
    # the verdict's line comes after the exit's, which was said as it happened
    lines = proc.stderr.splitlines()
    verdict = next(i for i, line in enumerate(lines) if "CORE-04 EventualPlacement" in line)
    assert lines.index(said[0]) < verdict
    assert verify_report(report_dir / "report.yaml", catalogue()) == []
