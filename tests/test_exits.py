"""A dispatcher replica that exits by itself while the scenarios run is said at once:
real processes under a real Supervisor, a fake runner around them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

from harness.cluster.procs import Supervisor
from harness.orchestrate.exits import ExitWatch, backoff
from harness.scenarios import progress
from harness.scenarios.progress import Progress, human

CRASH = (
    "echo 'Traceback (most recent call last):'; "
    "echo '  File \"main.py\", line 9, in loop'; "
    "echo \"urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='127.0.0.1')\"; exit 1"
)


class Runner:
    """What the watch reads of a DispatcherRunner: its replicas, their processes and logs."""

    def __init__(self, run_dir: Path, replicas: int, *, restarts: bool = False) -> None:
        self.supervisor = Supervisor(run_dir)
        self.run = SimpleNamespace(replicas=replicas)
        self.restarts_exited = restarts  # a Deployment's restartPolicy Always
        self.stop_reasons: dict[int, str] = {}
        self.script = "exit 7"

    def restart(self, replica: int = 0) -> None:
        self.start(replica, self.script)

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


def test_a_kubelets_back_off_at_once_then_doubling_to_five_minutes() -> None:
    assert [backoff(n) for n in range(1, 9)] == [0, 10, 20, 40, 80, 160, 300, 300]


def test_restart_policy_always_starts_an_exited_replica_again_and_counts_it(
    tmp_path: Path,
) -> None:
    runner = Runner(tmp_path, replicas=1, restarts=True)
    runner.start(0, "exit 7")
    events = tmp_path / "events.jsonl"
    watch = ExitWatch(runner, events, tmp_path)  # type: ignore[arg-type]
    try:
        exited(runner, 0)
        [first] = watch.check()
        assert (first["code"], first["restartIn"], first["crashLoop"]) == (7, 0.0, False)
        assert watch.check() == []  # started again at once (its first exit)
        assert watch.restarts == {0: 1}
        exited(runner, 0)
        [second] = watch.check()
        assert second["restartIn"] == 10.0  # then the back-off
        assert watch.check() == [] and watch.restarts == {0: 1}  # not yet
        watch._due[0] = time.monotonic()  # as if 10 s went by
        assert watch.check() == [] and watch.restarts == {0: 2}
        exited(runner, 0)
        [third] = watch.check()
        assert third["restartIn"] == 20.0 and third["crashLoop"]  # said once, at the third
        watch._due[0] = time.monotonic()
        watch.check()
        exited(runner, 0)
        [fourth] = watch.check()
        assert fourth["restartIn"] == 40.0 and not fourth["crashLoop"]
    finally:
        runner.supervisor.stop_all()
    line = human({**third, "event": progress.REPLICA_EXIT, "time": 1.0}, "/r/pytest.log")
    assert line is not None and line.endswith(
        "restartPolicy Always: started again in 20s (back-off); "
        "it is in a crash loop (it keeps exiting soon after each start)"
    )


def test_a_replica_the_harness_stopped_as_a_kubelet_is_said_with_why(tmp_path: Path) -> None:
    runner = Runner(tmp_path, replicas=1, restarts=True)
    runner.start(0, "sleep 30")
    watch = ExitWatch(runner, tmp_path / "events.jsonl", tmp_path)  # type: ignore[arg-type]
    try:
        runner.stop_reasons[0] = "its liveness probe failed: httpGet http://:8081/healthz: refused"
        runner.supervisor.stop("dispatcher-0", grace=0)
        [said] = watch.check()
        assert said["cause"].startswith("its liveness probe failed")
        assert runner.stop_reasons == {}
    finally:
        runner.supervisor.stop_all()
