"""Scenario slots: parallel scenarios share the environment, a load scenario runs alone.

Every scenario holds a shared slot while it runs; a scenario that loads the shared Kueue
on purpose (a burst of workloads) holds the exclusive one. Kueue's MultiKueue workload
controller calls workers through clients throttled at client-go's default 5 requests per
second, and a throttled call holds one of its few workers: a burst on one scenario's
workers would delay every other scenario's workloads by tens of seconds and fail their
latency bounds for a reason that is not theirs.

Across pytest-xdist processes this is two flock(2) locks in the run directory: the
turnstile makes a waiting exclusive holder block newcomers, so it is not starved.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SLOT_FILE = "scenario-slot.lock"
TURNSTILE_FILE = "scenario-turnstile.lock"


@contextmanager
def _locked(path: Path, mode: int) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def scenario_slot(run_dir: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold a shared (or the exclusive) scenario slot of this run for the block."""
    slot, turnstile = run_dir / SLOT_FILE, run_dir / TURNSTILE_FILE
    if exclusive:
        with _locked(turnstile, fcntl.LOCK_EX), _locked(slot, fcntl.LOCK_EX):
            yield
        return
    with _locked(turnstile, fcntl.LOCK_EX):
        pass  # wait behind an exclusive holder that is waiting or running
    with _locked(slot, fcntl.LOCK_SH):
        yield
