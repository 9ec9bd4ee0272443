"""The three files of a report in its folder: report.yaml, junit.xml and report.html."""

from __future__ import annotations

from pathlib import Path

from harness.report.html import render_html
from harness.report.model import Report


def write_html(report: Report, path: str | Path) -> Path:
    """One self-contained page: no scripts, no network, inline CSS and SVG."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report), encoding="utf-8")
    return path


def write_all(report: Report, report_dir: str | Path) -> dict[str, Path]:
    """report.yaml, junit.xml and report.html in `report_dir`."""
    report_dir = Path(report_dir)
    return {
        "yaml": report.write_yaml(report_dir / "report.yaml"),
        "junit": report.write_junit(report_dir / "junit.xml"),
        "html": write_html(report, report_dir / "report.html"),
    }
