"""A pytest plugin for the test processes `mkdc run` starts (`-p harness.testproc`),
whatever the suite.

The process that sees every test's reports (the xdist controller, or pytest alone)
reports the end of each test that ran with its outcome, so the progress stream learns
of a scenario that broke before it could say anything itself.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness import progress, session


class _State:
    config: pytest.Config | None = None
    tests: dict[str, dict[str, Any]] = {}  # nodeid -> outcome, duration, error so far


def pytest_configure(config: pytest.Config) -> None:
    _State.config = config


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _State.config is None or hasattr(_State.config, "workerinput"):
        return  # a worker: its controller sees this report too, and speaks for it
    seen = _State.tests.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0})
    seen["duration"] += report.duration
    if report.failed:
        seen["outcome"] = "failed" if report.when == "call" else "error"
        seen.setdefault("error", _first_line(report))
    elif report.skipped and seen["outcome"] == "passed":
        seen["outcome"] = "skipped"
        seen["started"] = report.when != "setup"  # else a marker skipped it: it never ran
    if report.when == "teardown":
        done = _State.tests.pop(report.nodeid)
        if not done.get("started", True):
            return
        progress.emit(
            session.current().events_file,
            progress.SCENARIO_END,
            test=report.nodeid,
            outcome=done["outcome"],
            durationSeconds=round(done["duration"], 1),
            error=done.get("error", ""),
        )


def _first_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr or "")
    return text.strip().splitlines()[0][:300] if text.strip() else ""
