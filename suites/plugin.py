"""This package as the harness's conformance suite (entry point `mkdc.suites:conformance`)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.report import Finding
from harness.results import ScenarioResult
from suites import findings, scorecard
from suites.checks import CATALOGUE, Bounds, Check, wanted_gates
from suites.checks.scenarios import Conformance, deciders


class ConformanceSuite:
    """The catalogue in `suites.checks`, the scenarios in `suites/conformance/`."""

    scenarios = Path(__file__).resolve().parent / "conformance"

    @property
    def catalogue(self) -> Mapping[str, Check]:
        return CATALOGUE

    def findings(
        self, records: Sequence[ScenarioResult], claims: Mapping[str, Any]
    ) -> list[Finding]:
        return findings.detect(records, claims)

    def merge_scorecards(self, cards: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        return scorecard.merge_scorecards(cards)

    def timeouts(self, claims: Mapping[str, Any], slacks: Mapping[str, str] | None) -> dict:
        """The report's `timeouts`: slacks and round timeout (ValueError when invalid)."""
        return Bounds.derive(dict(claims), (), dict(slacks or {})).report_timeouts()

    @functools.cached_property
    def _deciders(self) -> dict[str, list[Conformance]]:
        return deciders(self.scenarios)

    def decided_by(self, check_id: str) -> str:
        """The scenario(s) deciding `check_id`, as file::test: its docstring's first line."""
        found = [
            f"suites/conformance/{d.module}.py::{d.test}: {d.description}"
            for d in self._deciders.get(check_id, [])
        ]
        if CATALOGUE[check_id].every_timeline:
            found.append("every scenario's timeline")
        return "; ".join(found) or "no scenario"

    def runs_alone(self, check_id: str) -> bool | None:
        """Whether a scenario deciding `check_id` runs alone (the burst, the restarts);
        None for a check no scenario of its own decides (judged on every timeline)."""
        found = self._deciders.get(check_id)
        return any(d.exclusive for d in found) if found else None

    def shared_scenarios(self, check_ids: Iterable[str]) -> int:
        """How many scenarios that share the environment decide any of `check_ids`."""
        return len({d for c in check_ids for d in self._deciders.get(c, []) if not d.exclusive})

    def kueue_gates(self) -> Mapping[str, bool]:
        """The Kueue feature gates the checks need, in the state they need them."""
        return wanted_gates()


suite = ConformanceSuite()
