"""This package as the harness's conformance suite (entry point `mkdc.suites:conformance`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.report import Finding
from suites import findings, scorecard
from suites.checks import CATALOGUE, Bounds, Check


class ConformanceSuite:
    """The catalogue in `suites.checks`, the scenarios in `suites/conformance/`."""

    scenarios = Path(__file__).resolve().parent / "conformance"

    @property
    def catalogue(self) -> Mapping[str, Check]:
        return CATALOGUE

    def findings(
        self, records: Sequence[Mapping[str, Any]], claims: Mapping[str, Any]
    ) -> list[Finding]:
        return findings.detect(records, claims)

    def merge_scorecards(self, cards: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        return scorecard.merge_scorecards(cards)

    def timeouts(self, claims: Mapping[str, Any], slacks: Mapping[str, str] | None) -> dict:
        """The report's `timeouts`: slacks and round timeout (ValueError when invalid)."""
        return Bounds.derive(dict(claims), (), dict(slacks or {})).report_timeouts()


suite = ConformanceSuite()
