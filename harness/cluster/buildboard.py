"""The console line of a concurrent build: what each component is doing, and how long
the rest will take."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from harness.cluster.toolchain import Progress


class BuildBoard:
    """What each component of a concurrent build is doing, said in one line."""

    def __init__(self, keys: list[str], progress: Progress) -> None:
        self._progress = progress
        self._lock = threading.Lock()
        self._state = dict.fromkeys(keys, "queued")
        self._done = dict.fromkeys(self._state, 0)
        self._total: dict[str, int] = {}
        self._started = time.monotonic()
        self._compiling_since: float | None = None

    def say(self, key: str, state: str) -> None:
        with self._lock:
            self._state[key] = state
        if state.startswith(("cached", "built")):
            self._progress(f"{key}: {state}")

    def resolved(self, key: str, total: int) -> None:
        """`key` is ready to compile `total` packages (at most: some may be cached)."""
        with self._lock:
            self._total[key] = total
            self._state[key] = "resolved"

    def compiling(self, key: str) -> None:
        with self._lock:
            self._state[key] = "compiling"
            if self._compiling_since is None:
                self._compiling_since = time.monotonic()

    def compiled(self, key: str) -> None:
        with self._lock:
            self._done[key] += 1

    def line(self) -> str:
        """e.g. `kubernetes 40% · kueue resolving modules · etcd built · 2m10s, ~4 min left`"""
        with self._lock:
            parts = []
            for key, state in self._state.items():
                if state.startswith("cached"):
                    continue  # said once, at the start
                name = key.split("-v")[0]
                if state == "compiling":
                    pct = min(99, 100 * self._done[key] // max(self._total[key], 1))
                    state = f"{pct}%"
                parts.append(f"{name} {state.split(' in ')[0]}")
            elapsed = time.monotonic() - self._started
            line = f"bins: {' · '.join(parts)} · {elapsed // 60:.0f}m{elapsed % 60:02.0f}s"
            left = self._seconds_left()
        return line if left is None else f"{line}, ~{max(1, round(left / 60))} min left"

    def _seconds_left(self) -> float | None:
        """Packages still to compile over the rate so far; None until every component
        still to build knows its package count and a minute of compiling gives a rate."""
        pending = [k for k, s in self._state.items() if not s.startswith(("cached", "built"))]
        if any(k not in self._total for k in pending) or self._compiling_since is None:
            return None
        spent = time.monotonic() - self._compiling_since
        done = sum(self._done.values())
        if spent < 60 or done == 0:
            return None
        return sum(self._total[k] - self._done[k] for k in pending) * spent / done

    @contextlib.contextmanager
    def reporting(self, every: float) -> Iterator[None]:
        """Say `line()` every `every` seconds while the block runs."""
        stop = threading.Event()

        def report() -> None:
            while not stop.wait(every):
                self._progress(self.line())

        reporter = threading.Thread(target=report, daemon=True)
        reporter.start()
        try:
            yield
        finally:
            stop.set()
            reporter.join()
