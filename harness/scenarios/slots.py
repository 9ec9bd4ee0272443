"""Scenario slots: parallel scenarios share the environment, a load scenario runs alone.

Every scenario holds a shared slot while it runs; a scenario that loads the shared Kueue
on purpose (a burst of workloads) holds the exclusive one. Kueue's MultiKueue workload
controller calls workers through throttled clients (client-go's default 5 requests per
second up to v0.19.2, the manager's `clientConnection` where Kueue shares it with them),
and a throttled call holds one of its few workers: a burst on one scenario's
workers would delay every other scenario's workloads by tens of seconds and fail their
latency bounds for a reason that is not theirs.

Across pytest-xdist processes this is two flock(2) locks in the run directory: the
turnstile makes a waiting exclusive holder block newcomers, so it is not starved. Across
a run's two environments, a scenario that runs alone is claimed by the one that runs it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
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


CLAIMS_DIR = "claims"


def claim(claims: Path, test: str) -> bool:
    """Take scenario `test` for this process; False where another already has it.

    A run whose scenarios that run alone go to its second environment lets its first one
    take them too once its other scenarios are done: each process takes the next one
    nobody has, so the two finish near each other whatever each scenario takes. One file
    per scenario, made with O_EXCL: exactly one of the processes makes it."""
    try:
        fd = os.open(_claim_file(claims, test), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as handle:
        handle.write(test)
    return True


def claimed(claims: Path, test: str) -> bool:
    """Whether a process has taken scenario `test`."""
    return _claim_file(claims, test).exists()


def _claim_file(claims: Path, test: str) -> Path:
    return claims / hashlib.sha256(test.encode()).hexdigest()[:32]
