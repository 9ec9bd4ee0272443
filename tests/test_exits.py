"""A dispatcher replica that exits by itself while the scenarios run is said at once:
real processes under a real Supervisor, a fake runner around them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

from harness.cluster.procs import Supervisor
from harness.orchestrate.exits import ExitWatch
from harness.scenarios import progress
from harness.scenarios.progress import Progress, human

CRASH = (
    "echo 'Traceback (most recent call last):'; "
    "echo '  File \"main.py\", line 9, in loop'; "
    "echo \"urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='127.0.0.1')\"; exit 1"
)


class Runner:
    """What the watch reads of a DispatcherRunner: its replicas, their processes and logs."""

    def __init__(self, run_dir: Path, replicas: int) -> None:
        self.supervisor = Supervisor(run_dir)
        self.run = SimpleNamespace(replicas=replicas)

    def process_name(self, replica: int) -> str:
        return f"dispatcher-{replica}"

    def start(self, replica: int, script: str) -> None:
        self.supervisor.start(self.process_name(replica), ["/bin/sh", "-c", script])

    def alive(self, replica: int = 0) -> bool:
        proc = self.supervisor.procs.get(self.process_name(replica))
        return bool(proc and proc.alive())

    def save_logs(self) -> None:
        """Processes write their logs themselves."""


def exited(runner: Runner, replica: int) -> None:
    proc = runner.supervisor.procs[runner.process_name(replica)]
    proc.popen.wait(timeout=10)


def test_an_exit_is_said_once_with_its_cause_and_a_kill_of_the_harness_is_not(
    tmp_path: Path,
) -> None:
    runner = Runner(tmp_path, replicas=2)
    runner.start(0, CRASH)
    runner.start(1, "sleep 30")
    events = tmp_path / "events.jsonl"
    watch = ExitWatch(runner, events, tmp_path, logs="artifacts/logs")  # type: ignore[arg-type]
    try:
        exited(runner, 0)
        found = watch.check()
        assert [e["process"] for e in found] == ["dispatcher-0"]
        assert found[0]["code"] == 1
        assert found[0]["cause"] == (
            "urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='127.0.0.1')"
        )
        assert watch.check() == []  # said once
        watch.killed(1)  # a scenario's kill: its own doing
        runner.supervisor.stop("dispatcher-1", grace=0)
        assert watch.check() == []
        watch.started(0)  # started again by a scenario: its next exit is news
        runner.start(0, "exit 3")
        exited(runner, 0)
        assert [e["code"] for e in watch.check()] == [3]
    finally:
        runner.supervisor.stop_all()
    said = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["event"] for e in said] == [progress.REPLICA_EXIT] * 2
    assert said[0]["log"] == "artifacts/logs/dispatcher-0.log"
    assert said[0]["environment"] == str(tmp_path) and said[0]["monotonic"] <= time.monotonic()


def test_the_console_says_it_at_once_and_the_report_gets_it(tmp_path: Path) -> None:
    p = Progress()
    p.feed({"event": progress.RUN_START, "time": 100.0, "total": 1, "parallel": 1})
    public = p.feed(
        {
            "event": progress.REPLICA_EXIT,
            "time": 233.0,
            "process": "dispatcher-0",
            "replica": 0,
            "code": 1,
            "cause": "urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='127.0.0.1')",
            "log": "artifacts/logs/dispatcher-0.log",
            "where": "",
        }
    )
    assert public is not None and p.exits == [public]
    assert human(public, "/r/pytest.log") == (
        "02:13 exited        the dispatcher (dispatcher-0) exited with code 1: "
        "urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='127.0.0.1'); "
        "its log: /r/artifacts/logs/dispatcher-0.log"
    )
