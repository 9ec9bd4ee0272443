"""The plugin of the test processes `mkdc run` starts: xdist workers die with their
controller, and each test's end is reported once, from the controller."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.scenarios import progress, slots
from tests.sessions import use_session

TESTS = """
import os, time, pytest

def test_passes():
    pass

def test_fails():
    assert 1 == 2, "one is not two"

def test_skips():
    pytest.skip("not today")

@pytest.mark.skip(reason="filtered out")
def test_never_runs():
    pass

def test_waits():
    if os.environ.get("MKDC_TEST_PID_FILE"):
        open(os.environ["MKDC_TEST_PID_FILE"], "w").write(str(os.getpid()))
        time.sleep(60)
"""


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_session(tmp_path, monkeypatch)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "test_cases.py").write_text(TESTS)
    return tmp_path


def run_pytest(suite: Path, *args: str, **env: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "pytest", str(suite / "cases"), "-q", "-n", "1"]
    argv += ["-p", "no:cacheprovider", "-p", "harness.scenarios.testproc", *args]
    return subprocess.Popen(
        argv,
        env={**os.environ, **env},
        cwd=suite,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_each_tests_end_is_reported_once_with_its_outcome(suite: Path) -> None:
    """Once, from the controller; a test a marker skipped never ran, so it has no end."""
    run_pytest(suite).wait(timeout=120)
    ends = [
        e
        for e in progress.Follower(suite / "events.jsonl").read()
        if e["event"] == progress.SCENARIO_END
    ]
    outcomes = {e["test"].rsplit("::", 1)[1]: e["outcome"] for e in ends}
    assert len(ends) == 4 and outcomes == {
        "test_passes": "passed",
        "test_fails": "failed",
        "test_skips": "skipped",
        "test_waits": "passed",
    }
    [failed] = [e for e in ends if e["outcome"] == "failed"]
    assert "one is not two" in failed["error"]


def test_a_worker_dies_with_its_controller(suite: Path) -> None:
    pid_file = suite / "worker.pid"
    controller = run_pytest(suite, "-k", "waits", MKDC_TEST_PID_FILE=str(pid_file))
    try:
        deadline = time.monotonic() + 120
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline and controller.poll() is None
            time.sleep(0.1)
        worker = psutil.Process(int(pid_file.read_text()))
        assert worker.ppid() == controller.pid
        os.kill(controller.pid, signal.SIGKILL)
        controller.wait()
        worker.wait(timeout=3)  # psutil.TimeoutExpired if it outlives its controller
    finally:
        controller.kill()


ALONE = """
import pytest

@pytest.mark.exclusive
def test_burst():
    pass

@pytest.mark.exclusive
def test_restart():
    pass

def test_shared():
    pass
"""


def test_a_scenario_that_runs_alone_runs_where_it_is_claimed_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other environment's process has the burst: here it is skipped before it
    starts (no end reported for it), and the restart, claimed here, runs."""
    claims = tmp_path / "claims"
    claims.mkdir()
    use_session(tmp_path, monkeypatch, claims=claims)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "test_cases.py").write_text(ALONE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    exclusive: alone\n")
    assert slots.claim(claims, "cases/test_cases.py::test_burst")
    run_pytest(tmp_path).wait(timeout=120)
    ends = {
        e["test"].rsplit("::", 1)[1]: e["outcome"]
        for e in progress.Follower(tmp_path / "events.jsonl").read()
        if e["event"] == progress.SCENARIO_END
    }
    assert ends == {"test_restart": "passed", "test_shared": "passed"}
    assert slots.claimed(claims, "cases/test_cases.py::test_restart")
    assert not slots.claimed(claims, "cases/test_cases.py::test_shared")
