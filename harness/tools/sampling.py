"""Memory and CPU of a set of processes, sampled in the background (for benchmarks)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable

import psutil


class ProcessSampler:
    """Summed RSS (last and peak) and CPU seconds of the processes ``select`` returns,
    sampled every ``interval`` seconds until the ``with`` block ends."""

    def __init__(
        self, select: Callable[[], Iterable[psutil.Process]], interval: float = 0.5
    ) -> None:
        self.select = select
        self.interval = interval
        self.last_rss = 0
        self.peak_rss = 0
        self.cpu: dict[int, float] = {}  # pid -> user + system seconds, last seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            for proc in self.select():
                with contextlib.suppress(psutil.Error, ProcessLookupError):
                    total += proc.memory_info().rss
                    times = proc.cpu_times()
                    self.cpu[proc.pid] = times.user + times.system
            self.last_rss = total
            self.peak_rss = max(self.peak_rss, total)
            self._stop.wait(self.interval)

    def __enter__(self) -> ProcessSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def with_children(pid: int) -> list[psutil.Process]:
    """A process and all its descendants (none if it is gone)."""
    try:
        proc = psutil.Process(pid)
        return [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return []


def in_groups(pgids: set[int]) -> list[psutil.Process]:
    """Every process whose process group is one of ``pgids``."""
    out = []
    for proc in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) in pgids:
                out.append(proc)
    return out
