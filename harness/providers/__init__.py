"""Providers make an Environment (manager + workers with Kueue) and take it down.

`local` starts processes on this machine; `kind` creates kind clusters; `existing`
uses clusters the user already runs. Every provider is a `Provider`; what only some can
do is a protocol of its own, which the run asks for by type (`isinstance`): making a
second environment beside the first (`Twins`), keeping one environment for several runs
(`HandsOver`), keeping logs outside the run directory (`KeepsLogs`). The suite only sees
the Environment and the capabilities a provider declares (e.g. taking one of its
processes out, as a fault).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from harness.cluster.environment import Environment
from harness.cluster.versions import Versions

# can stop, kill or freeze one process of a cluster (its apiserver, Kueue, the shared
# etcd) and bring it back: `interrupt(process, how)` and `resume(process)`
FAULTS = "faults"
# what a scenario that needs a capability says when the provider lacks it
CANNOT = {FAULTS: "take a cluster's processes out and bring them back (the local provider can)"}

Progress = Callable[[str], None]


@runtime_checkable
class Provider(Protocol):
    """What every provider does: one environment up, then down."""

    name: str
    capabilities: frozenset[str]
    # down() deletes the clusters themselves: what a run leaves on them goes with them
    discards_clusters: bool

    def up(self) -> Environment: ...

    def down(self) -> None: ...

    def interrupt(self, process: str, how: str) -> None:
        """Stop, kill or freeze one process (FAULTS); UserError where it cannot."""
        ...

    def resume(self, process: str) -> None: ...


@runtime_checkable
class Twins(Provider, Protocol):
    """Makes another provider for an environment of the same shape (a run's second
    environment, for the scenarios that run alone)."""

    worker_names: list[str]

    def twin(self, progress: Progress | None = None) -> Provider:
        """Its inputs checked first: bad input is said before a second environment is
        announced."""
        ...


@runtime_checkable
class HandsOver(Provider, Protocol):
    """Keeps its environment for the next run, whose dispatcherName may differ; runs whose
    settings are equal share it."""

    versions: Versions
    worker_names: list[str]
    secret_pattern: str
    write_mode: str | None
    kueue_extra: dict[str, Any]
    node_capacity: dict[str, str]

    def hand_over(self, dispatcher_name: str | None, env: Environment) -> None:
        """The environment readied for a run of `dispatcher_name`."""
        ...


@runtime_checkable
class KeepsLogs(Provider, Protocol):
    """Keeps logs outside the run directory (kind: Kueue in its Pods)."""

    def save_logs(self) -> None:
        """Those logs copied into the run directory's `logs/`."""
        ...
