"""What one run did, as its report tells it. A run ends in one `Outcome`, from which
`report_builder` builds the Report once; nothing is added to the Report afterwards."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.cluster import faults
from harness.orchestrate.dispatcher import DispatcherRunner
from harness.orchestrate.exits import ExitWatch


@dataclass(frozen=True)
class Dispatched:
    """One environment's dispatcher as the run started it."""

    runner: DispatcherRunner | None = None  # None: built into Kueue, or it never started
    watch: ExitWatch | None = None  # what says a replica's own exits
    # the network its replicas reach the apiservers from (local process replicas)
    replica_network: str | None = None
    # a deploy folder applied as written (kind, existing): what of it is not applied
    not_applied: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Outcome:
    """One run, from the start of its judging to its end (monotonic seconds)."""

    started: float
    ended: float
    # one per environment the dispatcher ran on, the run's own first
    dispatched: tuple[Dispatched, ...] = ()
    interrupted: str = ""  # the signal that ended the suite early ("" none)
    injected: tuple[faults.Window, ...] | None = None  # None: no fault was asked for
    faults_not_injected: tuple[str, ...] = ()  # why some could not be
    exits: tuple[dict[str, Any], ...] = ()  # replica-exit events (harness.orchestrate.exits)
    error: str = ""  # why the dispatcher could not be judged at all

    @property
    def wall_seconds(self) -> float:
        return self.ended - self.started

    @property
    def first(self) -> Dispatched:
        """The run's own environment's dispatcher."""
        return self.dispatched[0] if self.dispatched else Dispatched()
