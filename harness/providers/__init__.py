"""Providers make an Environment (manager + workers with Kueue) and take it down.

`local` starts processes on this machine; `kind` creates kind clusters; `existing`
uses clusters the user already runs. The suite only sees the Environment and the
capabilities a provider declares (e.g. taking one of its processes out, as a fault).
"""

from __future__ import annotations

from typing import Protocol

from harness.cluster.environment import Environment

# can stop, kill or freeze one process of a cluster (its apiserver, Kueue, the shared
# etcd) and bring it back: `interrupt(process, how)` and `resume(process)`
FAULTS = "faults"
# what a scenario that needs a capability says when the provider lacks it
CANNOT = {FAULTS: "take a cluster's processes out and bring them back (the local provider can)"}


class Provider(Protocol):
    name: str
    capabilities: frozenset[str]
    # down() deletes the clusters themselves: what a run leaves on them goes with them
    discards_clusters: bool

    def up(self) -> Environment: ...

    def down(self) -> None: ...

    def interrupt(self, process: str, how: str) -> None: ...

    def resume(self, process: str) -> None: ...
