"""What a kubelet does for a running container, done for the replicas on this host.

Its readiness probe says when a replica is ready (the run waits for every replica's);
its liveness probe, failing `failureThreshold` times in a row, gets the replica stopped
(SIGTERM, then SIGKILL after its grace period), and the exit watch then starts it again
with a kubelet's back-off (`harness.orchestrate.exits`). Each replica's memory and CPU are
sampled, so the report shows its peaks beside its requests and limits, and names a
replica that went over its memory limit, where a kubelet would have killed it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil

from harness.cluster import probes
from harness.cluster.probes import Probe
from harness.profile.deploy import Pod

POLL_SECONDS = 1.0


@dataclass
class _Probed:
    """One probe's state for one start of one replica."""

    due: float
    successes: int = 0
    failures: int = 0
    passed: bool = False  # successThreshold successes in a row, not failed since
    last_failure: str = ""


@dataclass
class Usage:
    """A replica's peaks over every start (memory in bytes, CPU in cores)."""

    memory: int = 0
    cpu: float = 0.0
    samples: int = 0
    _last: tuple[float, float] | None = field(default=None, repr=False)


class Kubelet:
    """Probes and samples the replicas of one dispatcher; `pid(replica)` names a running
    replica's first process (None when not running), `stop(replica, why)` stops one."""

    def __init__(
        self,
        pod: Pod | None,
        replicas: int,
        pid: Callable[[int], int | None],
        stop: Callable[[int, str], None],
        target: Callable[[int], probes.Target],
        poll: float = POLL_SECONDS,
    ) -> None:
        self.pod = pod
        self.replicas = replicas
        self._pid, self._stop, self._target = pid, stop, target
        self.poll = poll
        self.usage = {r: Usage() for r in range(replicas)}
        self._seen_pid: dict[int, int | None] = {}
        self._readiness: dict[int, _Probed] = {}
        self._liveness: dict[int, _Probed] = {}
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="mkdc-kubelet", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._halt.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def ready(self, replica: int) -> bool:
        """Its readiness probe passed since its last start (True when it has none)."""
        if self.pod is None or self.pod.readiness is None:
            return True
        with self._lock:
            state = self._readiness.get(replica)
            return bool(state and state.passed)

    def readiness_failure(self, replica: int) -> str:
        with self._lock:
            state = self._readiness.get(replica)
            return state.last_failure if state else ""

    def look(self, now: float | None = None) -> None:
        """One round: sample every running replica and run the probes that are due."""
        now = time.monotonic() if now is None else now
        for replica in range(self.replicas):
            pid = self._pid(replica)
            if pid != self._seen_pid.get(replica):  # started (again): its probes start over
                self._seen_pid[replica] = pid
                self._fresh(replica, now)
            if pid is None:
                continue
            self._sample(replica, pid, now)
            if self.pod is None:
                continue
            if self.pod.readiness is not None:
                self._probe(replica, self.pod.readiness, self._readiness, now)
            if self.pod.liveness is not None:
                state = self._probe(replica, self.pod.liveness, self._liveness, now)
                if state.failures >= self.pod.liveness.failure_threshold:
                    state.failures = 0
                    self._stop(replica, f"its liveness probe failed: {state.last_failure}")

    def report(self) -> list[dict[str, Any]]:
        """Each replica's peaks beside its requests and limits (the report's)."""
        resources = self.pod.resources if self.pod else None
        found = []
        for replica, usage in self.usage.items():
            entry: dict[str, Any] = {
                "replica": replica,
                "peakMemoryBytes": usage.memory,
                "peakCpuCores": round(usage.cpu, 3),
            }
            if resources is not None:
                entry["requests"] = dict(resources.requests)
                entry["limits"] = dict(resources.limits)
                limit = resources.limits.get("memory")
                entry["overMemoryLimit"] = bool(limit and usage.memory > limit)
            found.append(entry)
        return found

    def _fresh(self, replica: int, now: float) -> None:
        pod = self.pod
        with self._lock:
            if pod is not None and pod.readiness is not None:
                self._readiness[replica] = _Probed(due=now + pod.readiness.initial_delay)
            if pod is not None and pod.liveness is not None:
                self._liveness[replica] = _Probed(due=now + pod.liveness.initial_delay)
        self.usage[replica]._last = None

    def _probe(self, replica: int, probe: Probe, states: dict[int, _Probed], now: float) -> _Probed:
        state = states[replica]
        if now < state.due:
            return state
        state.due = now + probe.period
        failure = probes.run(probe, self._target(replica))
        with self._lock:
            if failure is None:
                state.successes, state.failures = state.successes + 1, 0
                state.passed = state.passed or state.successes >= probe.success_threshold
            else:
                state.successes, state.failures = 0, state.failures + 1
                state.last_failure = failure
                if state.failures >= probe.failure_threshold:
                    state.passed = False
        return state

    def _sample(self, replica: int, pid: int, now: float) -> None:
        """Memory (resident) and CPU of the replica's processes, its network helper aside."""
        usage = self.usage[replica]
        memory, cpu = 0, 0.0
        with contextlib.suppress(psutil.Error):
            top = psutil.Process(pid)
            for proc in [top, *top.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    if proc.name() == "pasta":
                        continue
                    memory += proc.memory_info().rss
                    times = proc.cpu_times()
                    cpu += times.user + times.system
        usage.memory = max(usage.memory, memory)
        if usage._last is not None and now > usage._last[0]:
            usage.cpu = max(usage.cpu, max(cpu - usage._last[1], 0) / (now - usage._last[0]))
        usage._last = (now, cpu)
        usage.samples += 1

    def _loop(self) -> None:
        while not self._halt.wait(self.poll):
            with contextlib.suppress(Exception):  # a round that fails is tried again
                self.look()
