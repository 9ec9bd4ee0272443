"""Scenario slots: shared holders overlap, the exclusive holder runs alone and is not starved."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.slots import claim, claimed, scenario_slot


def _hold(run_dir: Path, exclusive: bool, seconds: float, log: list, name: str) -> None:
    with scenario_slot(run_dir, exclusive=exclusive):
        log.append((name, "in", time.monotonic()))
        time.sleep(seconds)
        log.append((name, "out", time.monotonic()))


def _spans(log: list) -> dict[str, tuple[float, float]]:
    starts = {n: t for n, what, t in log if what == "in"}
    return {n: (starts[n], t) for n, what, t in log if what == "out"}


def _run(run_dir: Path, plan: list[tuple[str, bool, float, float]]) -> dict:
    """plan: (name, exclusive, start delay, hold seconds)."""
    log: list = []
    threads = []
    for name, exclusive, delay, seconds in plan:
        t = threading.Thread(target=_hold, args=(run_dir, exclusive, seconds, log, name))
        threads.append((delay, t))
    for delay, t in threads:
        time.sleep(delay)
        t.start()
    for _, t in threads:
        t.join(timeout=10)
    return _spans(log)


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_shared_slots_overlap(tmp_path: Path):
    spans = _run(tmp_path, [("a", False, 0, 0.3), ("b", False, 0.05, 0.3)])
    assert _overlap(spans["a"], spans["b"])


def test_exclusive_slot_runs_alone_and_before_later_shared_ones(tmp_path: Path):
    # "a" runs; "x" asks for the exclusive slot; "b" arrives after "x" asked.
    spans = _run(tmp_path, [("a", False, 0, 0.3), ("x", True, 0.05, 0.3), ("b", False, 0.05, 0.1)])
    assert not _overlap(spans["x"], spans["a"])
    assert not _overlap(spans["x"], spans["b"])
    assert spans["a"][1] <= spans["x"][0] <= spans["b"][0]


def test_a_scenario_is_claimed_once_however_many_race_for_it(tmp_path: Path) -> None:
    """Threads released together stand in for the two environments' processes: O_EXCL is
    the kernel's answer either way. (A forked pool here hung a `make test`: forking an xdist
    worker, whose other threads held locks, deadlocked a child.)"""
    start = threading.Barrier(8)

    def race() -> bool:
        start.wait()
        return claim(tmp_path, "suite::test_burst")

    with ThreadPoolExecutor(8) as pool:
        won = [f.result() for f in [pool.submit(race) for _ in range(8)]]
    assert won.count(True) == 1 and claimed(tmp_path, "suite::test_burst")
    assert not claimed(tmp_path, "suite::test_restart") and claim(tmp_path, "suite::test_restart")
