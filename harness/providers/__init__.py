"""Providers make an Environment (manager + workers with Kueue) and take it down.

`local` starts processes on this machine; `kind` creates kind clusters; `existing`
uses clusters the user already runs. The suite only sees the Environment and the
capabilities a provider declares (e.g. stopping a worker's apiserver).
"""

from __future__ import annotations

from typing import Protocol

from harness.environment import Environment

STOP_APISERVER = "stop-apiserver"  # can stop and restart a worker's kube-apiserver


class Provider(Protocol):
    name: str
    capabilities: frozenset[str]

    def up(self) -> Environment: ...

    def down(self) -> None: ...

    def stop_apiserver(self, cluster: str) -> None: ...

    def start_apiserver(self, cluster: str) -> None: ...
