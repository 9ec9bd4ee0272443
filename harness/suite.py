"""The conformance suite as the harness sees it: a plugin found by its entry point.

Suites use the harness, never the reverse: the harness runs pytest on the suite's
scenarios and folds what they wrote, but what a check is, what a finding says and how
scorecards add up belong to the suite. They reach the harness through this interface,
looked up in the `mkdc.suites` entry-point group (as pytest finds its plugins), so no
harness module imports `suites`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.check_terms import Bound, GateNeed
from harness.errors import UserError
from harness.report.model import CatalogueEntry

if TYPE_CHECKING:
    from harness.report import Finding
    from harness.results import ScenarioResult

ENTRY_POINT_GROUP = "mkdc.suites"
DEFAULT_SUITE = "conformance"


class CheckInfo(Protocol):
    """What the harness reads of a catalogue entry."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def feature(self) -> str | None: ...  # None: a core check
    @property
    def summary(self) -> str: ...
    @property
    def bounds(self) -> Sequence[Bound]: ...  # whose each bound is, and why
    @property
    def gates(self) -> Sequence[GateNeed]: ...  # Kueue gates it needs in one state


class Suite(Protocol):
    """A conformance suite: its catalogue, its scenarios, and how results fold."""

    @property
    def catalogue(self) -> Mapping[str, CheckInfo]: ...
    @property
    def scenarios(self) -> Path: ...  # the pytest directory `mkdc run` runs

    def findings(
        self, records: Sequence[ScenarioResult], claims: Mapping[str, Any]
    ) -> list[Finding]: ...
    def merge_scorecards(self, cards: Iterable[Mapping[str, Any]]) -> dict[str, Any]: ...
    def timeouts(self, claims: Mapping[str, Any], slacks: Mapping[str, str] | None) -> dict: ...
    def decided_by(self, check_id: str) -> str: ...  # where a reader finds the scenario
    def runs_alone(self, check_id: str) -> bool | None: ...  # None: no scenario of its own
    def shared_scenarios(self, check_ids: Iterable[str]) -> int: ...  # deciding them, not alone
    def kueue_gates(self) -> Mapping[str, bool]: ...  # the gates its checks need, so set


def catalogue(name: str = DEFAULT_SUITE) -> dict[str, CatalogueEntry]:
    """Check id -> its name, feature (None for core) and bounds, in catalogue order: what
    a report is handed of the suite (harness.report.Catalogue)."""
    return {
        cid: CatalogueEntry(c.name, c.feature, tuple(c.bounds))
        for cid, c in load(name).catalogue.items()
    }


@functools.cache
def load(name: str = DEFAULT_SUITE) -> Suite:
    """The installed suite called `name` (the project's own: `conformance`)."""
    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        raise UserError(
            f"no conformance suite {name!r} is installed (entry point group "
            f"{ENTRY_POINT_GROUP}): install mkdc with `make setup` (pip install -e .)"
        )
    return found[0].load()
