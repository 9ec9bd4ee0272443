"""The comparison table and chart read scorecards from reports."""

from __future__ import annotations

import yaml

from harness.report import compare


def _report(tmp_path, name: str, copies: int, p50: float | None) -> None:
    d = tmp_path / name
    d.mkdir()
    doc = {
        "profile": name,
        "summary": {"result": "passed"},
        "scorecard": {"peakConcurrentCopies": copies, "timeToPlacementSeconds": {"p50": p50}},
    }
    (d / "report.yaml").write_text(yaml.safe_dump(doc))


def test_table_and_chart_side_by_side(tmp_path):
    _report(tmp_path, "all-at-once", 4, 1.5)
    _report(tmp_path, "reference", 1, None)
    assert compare.main([str(tmp_path / "all-at-once"), str(tmp_path / "reference")]) == 0
    table = (tmp_path / "compare.md").read_text()
    assert "| peak concurrent copies | 4 | 1 |" in table
    assert "| time to placement p50 (s) | 1.50 | – |" in table
    page = (tmp_path / "compare.html").read_text()
    assert page.count("<rect") >= 2 * len(compare.CHARTED) and "reference" in page


def test_missing_report_says_what_to_run(tmp_path):
    try:
        compare.main([str(tmp_path / "nope")])
    except SystemExit as exc:
        assert "run `mkdc run`" in str(exc)
    else:
        raise AssertionError("expected SystemExit")
