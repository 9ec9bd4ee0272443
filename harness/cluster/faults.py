"""Environment faults injected on purpose while the suite runs (`mkdc run --inject`).

A verdict is only worth something if `failed` means the dispatcher is wrong, so a run can
be made to meet the faults real environments have (a worker's apiserver restarting, etcd
restarting, Kueue crashing, a worker unreachable for a while, a machine short of CPU) and
must still blame none of them on the dispatcher. The injector takes one process out at a
time, brings it back, and logs each fault's start and end (monotonic seconds, the clock
of every test process) to `faults.jsonl` in the environment's run directory. The recorder
turns those lines into ACTION events, so a scenario's timeline shows what hit it, and the
suite decides what a fault excuses (a check that rests on the dispatcher's own writes keeps
its verdict; any other failure during a fault is `undecided`, naming the fault).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.cluster import procs
from harness.errors import UserError

LOG_FILE = "faults.jsonl"
ACTION = "environment-fault"  # the recorder's ACTION `what` for a logged fault
# After a fault ends, what it disturbed (watches, Kueue's queues, a busy MultiKueue
# controller) takes a while to settle: a check judged this long after still met it.
SETTLE_SECONDS = 30.0


@dataclass(frozen=True)
class FaultKind:
    """One kind of fault: what it takes out, how, and how the report says it."""

    name: str
    how: str  # stop (SIGTERM, clean restart) | kill (SIGKILL, crash) | freeze | busy
    process: str  # the process it hits: {worker} for each worker in turn
    says: str  # "{target}'s kube-apiserver was restarted"


KINDS: dict[str, FaultKind] = {
    k.name: k
    for k in (
        FaultKind(
            "apiserver-restart", "stop", "{worker}-apiserver", "{target}'s kube-apiserver restarted"
        ),
        FaultKind("etcd-restart", "stop", "etcd", "etcd (every cluster's store) restarted"),
        FaultKind("kueue-crash", "kill", "manager-kueue", "the manager's Kueue crashed (SIGKILL)"),
        FaultKind(
            "worker-unreachable",
            "freeze",
            "{worker}-apiserver",
            "{target} unreachable (its kube-apiserver frozen: requests hang)",
        ),
        FaultKind("cpu-starvation", "busy", "", "the machine short of CPU (a busy loop per core)"),
    )
}


class Target(Protocol):
    """What a provider offers for faults (the local provider's FAULTS capability)."""

    def interrupt(self, process: str, how: str) -> None: ...

    def resume(self, process: str) -> None: ...


def parse(text: str) -> list[str]:
    """`--inject apiserver-restart,kueue-crash` (or `all`); UserError naming what is wrong."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return list(KINDS)
    unknown = [n for n in names if n not in KINDS]
    if unknown or not names:
        raise UserError(
            f"--inject {text!r}: not a fault ({', '.join(unknown) or 'empty'}); "
            f"choose from {', '.join(KINDS)} or all"
        )
    return names


@dataclass(frozen=True)
class Record:
    """One line of the fault log: a fault began or ended."""

    id: int
    fault: str
    target: str
    phase: str  # start | end
    t: float  # monotonic seconds
    says: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def read_log(path: Path) -> list[Record]:
    """Every complete line of a fault log (none when there is no log)."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    return [Record(**json.loads(line)) for line in lines if line.strip()]


@dataclass(frozen=True)
class Window:
    """One injected fault, from its start to its end (None while it lasts)."""

    fault: str
    target: str
    says: str
    start: float
    end: float | None

    def describe(self, origin: float = 0.0) -> str:
        end = "" if self.end is None else f" to t={self.end - origin:.1f}s"
        return f"{self.says} at t={self.start - origin:.1f}s{end}"


def windows(records: Iterable[Record | Mapping[str, Any]]) -> list[Window]:
    """The faults the records (log lines, or ACTION event data with `t`) describe."""
    starts: dict[int, Record] = {}
    ends: dict[int, float] = {}
    for r in records:
        rec = (
            r if isinstance(r, Record) else Record(**{k: r[k] for k in Record.__dataclass_fields__})
        )
        if rec.phase == "start":
            starts[rec.id] = rec
        else:
            ends[rec.id] = rec.t
    return [
        Window(s.fault, s.target, s.says, s.t, ends.get(i))
        for i, s in sorted(starts.items(), key=lambda kv: kv[1].t)
    ]


def overlapping(found: Sequence[Window], start: float, end: float) -> list[Window]:
    """The faults that could have disturbed what happened between start and end: those
    that began before `end` and ended (or settled) after `start`."""
    return [
        w for w in found if w.start <= end and (w.end is None or w.end + SETTLE_SECONDS >= start)
    ]


class Injector:
    """Injects the chosen faults in turn, one at a time, every `every` seconds, each for
    `downtime` seconds (CPU starvation for four times as long: it slows, it does not stop)."""

    def __init__(
        self,
        target: Target,
        workers: Sequence[str],
        faults: Sequence[str],
        log: Path,
        *,
        every: float = 45.0,
        downtime: float = 5.0,
        first_after: float | None = None,
        progress: Callable[[str], None] = lambda _msg: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target, self.workers, self.faults = target, list(workers), list(faults)
        self.log, self.every, self.downtime = log, every, downtime
        self.first_after = every / 2 if first_after is None else first_after
        self.progress, self.clock = progress, clock
        self.records: list[Record] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="mkdc-faults", daemon=True)
        self._busy: list[subprocess.Popen] = []

    def start(self) -> Injector:
        self._thread.start()
        return self

    def stop(self) -> list[Window]:
        """Stop injecting; a fault in progress ends first (its process is back)."""
        self._stop.set()
        self._thread.join()
        return windows(self.records)

    def _loop(self) -> None:
        if self._stop.wait(self.first_after):
            return
        for n in itertools.count():
            kind = KINDS[self.faults[n % len(self.faults)]]
            worker = self.workers[(n // len(self.faults)) % len(self.workers)]
            try:
                self._inject(n + 1, kind, worker)
            except Exception as exc:  # said in the report; the run goes on
                self.errors.append(f"{kind.name}: {exc}")
                self.progress(f"fault {kind.name} could not be injected: {exc}")
            if self._stop.wait(self.every):
                return

    def _inject(self, n: int, kind: FaultKind, worker: str) -> None:
        process = kind.process.format(worker=worker)
        target = worker if "{worker}" in kind.process else (process or "machine")
        says = kind.says.format(target=target)
        hold = self.downtime * (4 if kind.how == "busy" else 1)
        self._write(Record(n, kind.name, target, "start", self.clock(), says))
        self.progress(f"fault: {says}, for {hold:g}s")
        try:
            if kind.how == "busy":
                self._busy_loops()
            else:
                self.target.interrupt(process, kind.how)
            self._stop.wait(hold)
        finally:
            try:
                if kind.how == "busy":
                    self._end_busy_loops()
                else:
                    self.target.resume(process)
            finally:
                self._write(Record(n, kind.name, target, "end", self.clock(), says))
                self.progress(f"fault over: {says}")

    def _write(self, record: Record) -> None:
        self.records.append(record)
        with self.log.open("a") as f:
            f.write(record.to_json() + "\n")

    def _busy_loops(self) -> None:
        """One spinning process per core, each in its own group, gone with this process."""
        for _ in range(os.cpu_count() or 1):
            with open(os.devnull, "wb") as out:
                self._busy.append(procs.spawn([sys.executable, "-c", "while True: pass"], out))

    def _end_busy_loops(self) -> None:
        for p in self._busy:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        self._busy.clear()
