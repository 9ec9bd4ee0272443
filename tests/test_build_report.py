"""Folding result records into the report: the worst result per check (undecided between
failed and passed) and the findings across scenarios."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness.profile import load_profile
from harness.run import Options, build_report
from tests.timelines import Story

ENV = SimpleNamespace(
    provider="local",
    kubernetes_version="v1.36.3",
    kueue_version="v0.19.2",
    workers=[SimpleNamespace(name=f"w{i}") for i in range(4)],
    nomination_write_mode="admission-policy",
)


def write(results: Path, n: int, check: str, scenario: str, result: str, story: Story) -> None:
    record: dict[str, Any] = {
        "check": check,
        "scenario": scenario,
        "result": result,
        "message": "" if result == "passed" else f"{result}: why",
        "timeline": story.timeline().to_list(),
        "origin": 100.0,
        "observedUntil": 50.0,
        "config": [f"{scenario}-w2", f"{scenario}-w3"],
        "dispatcherUsers": ["me"],
    }
    (results / f"{n}.json").write_text(json.dumps(record))


def test_undecided_folds_between_failed_and_passed_and_findings_come_along(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    blind = Story("a/wl").created(0).nominate(1, "worker1")
    write(results, 1, "CORE-01", "a", "failed", blind)
    write(results, 2, "CORE-03", "a", "undecided", blind)
    write(results, 3, "CORE-03", "b", "passed", Story("b/wl").created(0))
    report = build_report(load_profile("reference"), ENV, tmp_path, Options("reference"), 1.0)
    results_by_id = {c.id: c.result for c in report.checks}
    assert results_by_id == {"CORE-01": "failed", "CORE-03": "undecided"}
    assert [f.id for f in report.findings] == ["nominated-outside-config"]
    assert report.findings[0].checks == ("CORE-01", "CORE-03")
    assert report.summary()["undecided"] == 1
