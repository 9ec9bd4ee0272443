"""A dispatcher replica that exits by itself while the scenarios run is said at once.

At start a replica that dies is an error naming its log (`DispatcherRunner.start_all`);
later, nothing restarts it, and a dead dispatcher fails every check that follows with
messages about what the timeline lacked. So `mkdc run` polls its replicas while the
suite runs: an exit the harness did not cause (a scenario's kill is its own) becomes a
`replica-exit` event in the run's progress stream, with the cause quoted from its log as
at start. The console shows it as it happens, the report lists it
(`dispatcherExits`), and the test processes read it from the same stream into their
timelines (`harness.scenarios.progress.exits`), so the checks decided afterwards say it.

A replica whose Pod says `restartPolicy: Always` (a Deployment's always does) is then
started again as a kubelet would: at once the first time, then after a back-off that
doubles from 10 s to 5 minutes and starts over once it ran 10 minutes; a replica that
keeps exiting soon after its start is said to be in a crash loop, once.
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
BACKOFF_SECONDS = 10.0  # a kubelet's first back-off, doubled per exit up to BACKOFF_MAX
BACKOFF_MAX = 300.0
BACKOFF_RESET = 600.0  # a replica that ran this long starts its back-off over
CRASH_LOOP_EXITS = 3  # exits in a row, each this soon after its start, are a crash loop
CRASH_LOOP_SECONDS = 60.0


def backoff(exits: int) -> float:
    """How long a kubelet waits before starting a container again after its `exits`-th
    exit in a row: at once after the first, then 10 s, 20 s, ... up to 5 minutes."""
    return 0.0 if exits <= 1 else min(BACKOFF_SECONDS * 2 ** (exits - 2), BACKOFF_MAX)


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
        self.restarts: dict[int, int] = {}  # replica -> times started again after an exit
        self._in_a_row: dict[int, int] = {}  # exits since it last ran BACKOFF_RESET
        self._due: dict[int, float] = {}  # replica -> when it is started again
        self._started_at = {r: time.monotonic() for r in range(runner.run.replicas)}
        self._looping: set[int] = set()  # said to be in a crash loop
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
            self._due.pop(replica, None)
            self._started_at[replica] = time.monotonic()

    def check(self) -> list[dict[str, Any]]:
        """One look at every replica: the exits it found, each said once; the replicas
        whose back-off ended, started again."""
        found = []
        now = time.monotonic()
        for replica in range(self.runner.run.replicas):
            with self._lock:
                due = self._due.get(replica)
                if due is not None and now >= due and replica not in self._expected:
                    self._restart(replica)
                    continue
                if replica in self._expected or replica in self._said:
                    continue
                if self.runner.alive(replica):
                    continue
                self._said.add(replica)
                delay = self._schedule(replica, now)
            found.append(self._say(replica, delay))
        return found

    def _schedule(self, replica: int, now: float) -> float | None:
        """Under the lock: when an exited replica starts again (None: it does not)."""
        if not self.runner.restarts_exited:
            return None
        ran = now - self._started_at[replica]
        self._in_a_row[replica] = 1 if ran >= BACKOFF_RESET else self._in_a_row.get(replica, 0) + 1
        delay = backoff(self._in_a_row[replica])
        self._due[replica] = now + delay
        return delay

    def _restart(self, replica: int) -> None:
        """Under the lock: start it again, as the kubelet does after its back-off."""
        self._due.pop(replica, None)
        self._said.discard(replica)
        self._started_at[replica] = time.monotonic()
        self.restarts[replica] = self.restarts.get(replica, 0) + 1
        with contextlib.suppress(Exception):  # one that cannot start exits again: said then
            self.runner.restart(replica)

    def _say(self, replica: int, restart_in: float | None = None) -> dict[str, Any]:
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
            "cause": self.runner.stop_reasons.pop(replica, None)
            or exit_cause(log, self.shared_network),
            "log": f"{self.logs}/{log.name}",  # in the report directory
            "monotonic": round(time.monotonic(), 3),
            "environment": str(self.environment),
            "where": self.where,
            "restartIn": restart_in,
            "crashLoop": self._crash_loop(replica, restart_in),
        }
        progress.emit(self.events, progress.REPLICA_EXIT, **said)
        return said

    def _crash_loop(self, replica: int, restart_in: float | None) -> bool:
        """Whether this exit shows a crash loop not said before (each of the last exits
        came soon after a start)."""
        ran = time.monotonic() - self._started_at[replica]
        if restart_in is None or replica in self._looping or ran >= CRASH_LOOP_SECONDS:
            return False
        if self._in_a_row.get(replica, 0) < CRASH_LOOP_EXITS:
            return False
        self._looping.add(replica)
        return True

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
