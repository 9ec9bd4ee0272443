"""Scenario slots: shared holders overlap, the exclusive holder runs alone and is not starved."""

from __future__ import annotations

import fcntl
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.scenarios.slots import TURNSTILE_FILE, claim, claimed, scenario_slot


def _turnstile_held(run_dir: Path) -> bool:
    """Whether a holder (a waiting exclusive one) has the turnstile now."""
    with (run_dir / TURNSTILE_FILE).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.01)


def test_shared_slots_overlap(tmp_path: Path):
    """ "a" holds its slot until "b" is in its own: only shared slots let both in at once."""
    b_in = threading.Event()

    def a() -> bool:
        with scenario_slot(tmp_path, exclusive=False):
            return b_in.wait(timeout=10)

    def b() -> None:
        with scenario_slot(tmp_path, exclusive=False):
            b_in.set()

    with ThreadPoolExecutor(2) as pool:
        both_in = pool.submit(a)
        pool.submit(b).result(timeout=15)
        assert both_in.result(timeout=15), "b never got in while a held its slot"


def test_exclusive_slot_runs_alone_and_before_later_shared_ones(tmp_path: Path):
    """ "a" runs; "x" asks for the exclusive slot; "b" arrives after "x" asked: x waits for
    a, and b for x. The order comes from the locks, whatever the machine's speed."""
    log: list[str] = []
    a_in, release_a = threading.Event(), threading.Event()

    def hold(name: str, exclusive: bool, until: threading.Event | None = None) -> None:
        with scenario_slot(tmp_path, exclusive=exclusive):
            log.append(f"{name} in")
            if until is not None:
                a_in.set()
                until.wait(timeout=10)
            log.append(f"{name} out")

    with ThreadPoolExecutor(3) as pool:
        a = pool.submit(hold, "a", False, release_a)
        a_in.wait(timeout=10)
        x = pool.submit(hold, "x", True)
        _wait(lambda: _turnstile_held(tmp_path), "x asked for the exclusive slot")
        b = pool.submit(hold, "b", False)
        release_a.set()
        for done in (a, x, b):
            done.result(timeout=15)
    assert log == ["a in", "a out", "x in", "x out", "b in", "b out"]


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
