"""A dispatcher replica that exits by itself while the scenarios run is said at once.

At start a replica that dies is an error naming its log (`DispatcherRunner.start_all`);
later, nothing restarts it, and a dead dispatcher fails every check that follows with
messages about what the timeline lacked. So `mkdc run` polls its replicas while the
suite runs: an exit the harness did not cause (a scenario's kill is its own) becomes a
`replica-exit` event in the run's progress stream, with the cause quoted from its log as
at start. The console shows it as it happens, the report lists it
(`dispatcherExits`), and the test processes read it from the same stream into their
timelines (`harness.scenarios.progress.exits`), so the checks decided afterwards say it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

from harness.orchestrate.dispatcher import DispatcherRunner, exit_cause
from harness.scenarios import progress

POLL_SECONDS = 1.0


class ExitWatch:
    """Watches one environment's replicas; `killed` and `started` tell it of the
    harness's own kills and restarts (the control channel's), which are no exits."""

    def __init__(
        self,
        runner: DispatcherRunner,
        events: Path,
        environment: Path,
        *,
        shared_network: bool = True,
        where: str = "",
        logs: str = "artifacts/logs",
        poll: float = POLL_SECONDS,
    ) -> None:
        """`where`: "" for the run's environment, else how the console names the second;
        `logs`: where in the report directory the replicas' logs are kept."""
        self.runner = runner
        self.events = events
        self.environment = environment  # which environment's test processes it concerns
        self.shared_network = shared_network
        self.where = where
        self.logs = logs
        self.poll = poll
        self._expected: set[int] = set()  # stopped by the harness
        self._said: set[int] = set()  # exited, and said, until started again
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mkdc-exits", daemon=True)

    def killed(self, replica: int) -> None:
        """The harness is about to stop `replica` on purpose."""
        with self._lock:
            self._expected.add(replica)

    def started(self, replica: int) -> None:
        """The harness started `replica` again: its next exit is news."""
        with self._lock:
            self._expected.discard(replica)
            self._said.discard(replica)

    def check(self) -> list[dict[str, Any]]:
        """One look at every replica; the exits it found, each said once."""
        found = []
        for replica in range(self.runner.run.replicas):
            with self._lock:
                if replica in self._expected or replica in self._said:
                    continue
                if self.runner.alive(replica):
                    continue
                self._said.add(replica)
            found.append(self._say(replica))
        return found

    def _say(self, replica: int) -> dict[str, Any]:
        name = self.runner.process_name(replica)
        proc = self.runner.supervisor.procs.get(name)
        code = proc.popen.returncode if proc is not None else None
        with contextlib.suppress(Exception):  # a container's log, copied where a process's is
            self.runner.save_logs()
        log = self.runner.supervisor.log_path(name)
        said = {
            "process": name,
            "replica": replica,
            "code": code,
            "cause": exit_cause(log, self.shared_network),
            "log": f"{self.logs}/{log.name}",  # in the report directory
            "monotonic": round(time.monotonic(), 3),
            "environment": str(self.environment),
            "where": self.where,
        }
        progress.emit(self.events, progress.REPLICA_EXIT, **said)
        return said

    def __enter__(self) -> ExitWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.poll):
            with contextlib.suppress(Exception):  # a look that fails is tried again
                self.check()
