"""A pytest plugin for the test processes `mkdc run` starts (`-p harness.scenarios.testproc`),
whatever the suite.

- Every xdist worker dies with its controller. The controller dies with `mkdc run`
  (a parent-death signal from its start), but a worker is the controller's child, and
  execnet alone lets a worker whose controller is gone finish its running test for 5 s,
  then interrupts it and gives it 10 s more, with its teardown still at work on the
  dead run's clusters.
- The process that sees every test's reports (the xdist controller, or pytest alone)
  reports the end of each test that ran with its outcome, so the progress stream
  learns of a scenario that broke before it could say anything itself.
- Where the session names a claims folder (a run on two environments), a test that runs
  alone (marked `exclusive`) runs only if this process claims it first; the other
  environment's process runs it otherwise, and here it is skipped before it starts, so
  it reports nothing (`harness.scenarios.slots.claim`).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from harness.cluster import procs
from harness.scenarios import progress, session, slots

CONTROLLER = "mkdc_controller_pid"  # the controller's pid, handed to each worker


class _State:
    config: pytest.Config | None = None
    tests: dict[str, dict[str, Any]] = {}  # nodeid -> outcome, duration, error so far


def pytest_configure(config: pytest.Config) -> None:
    _State.config = config
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and CONTROLLER in workerinput:
        procs.die_with_parent(int(workerinput[CONTROLLER]))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, in the controller: tell the worker whose death to follow."""
    node.workerinput[CONTROLLER] = os.getpid()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("exclusive") is None or item.get_closest_marker("skip"):
        return  # runs here, or nowhere
    claims = session.current().claims
    if claims is not None and not slots.claim(claims, item.nodeid):
        pytest.skip("run on the run's other environment")


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
