"""Side-by-side scorecards: one table and one chart across dispatcher reports.

    python -m harness.report.compare reports/all-at-once reports/incremental reports/reference

Writes compare.md (a Markdown table) and compare.html (the table plus an inline SVG
bar chart of the fan-out figures) next to the first report directory's parent.
"""

from __future__ import annotations

import argparse
import html
import sys
from pathlib import Path
from typing import Any

import yaml

ROWS: list[tuple[str, str]] = [
    # the same scenario for every dispatcher: what one workload costs the workers
    (
        "perScenario.bounded-duplicate-admission.peakConcurrentReservations",
        "workers reserving quota at once, when all have capacity",
    ),
    (
        "perScenario.no-simultaneous-autoscaling.peakConcurrentProvisioningRequests",
        "ProvisioningRequests at once, when all autoscale",
    ),
    (
        "perScenario.bounded-fan-out.peakConcurrentCopies",
        "copies held while no worker has capacity",
    ),
    (
        "perScenario.bounded-preemption.workersWithPreemptions",
        "workers preempting for one high-priority workload",
    ),
    # whole run
    ("peakConcurrentCopies", "peak concurrent copies"),
    ("peakConcurrentProvisioningRequests", "peak concurrent ProvisioningRequests"),
    ("peakConcurrentReservations", "peak concurrent quota reservations"),
    ("workersWithPreemptions", "workers with preemptions"),
    ("timeToFirstNominationSeconds.p50", "time to first nomination p50 (s)"),
    ("timeToFirstNominationSeconds.p99", "time to first nomination p99 (s)"),
    ("timeToPlacementSeconds.p50", "time to placement p50 (s)"),
    ("timeToPlacementSeconds.p99", "time to placement p99 (s)"),
    ("nominationWritesPerPlacement", "nomination writes per placement"),
    ("copiesCreatedPerPlacement", "remote copies created per placement"),
    ("copiesDeletedPerPlacement", "remote copies deleted per placement"),
]
CHARTED = ROWS[:4]  # the per-scenario fan-out figures
COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"]


def _get(card: dict[str, Any], dotted: str) -> Any:
    value: Any = card
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def load(report_dirs: list[Path]) -> list[dict[str, Any]]:
    out = []
    for d in report_dirs:
        path = d / "report.yaml"
        if not path.exists():
            raise SystemExit(
                f"mkdc compare: {path} not found: run `mkdc run` for that profile first"
            )
        out.append(yaml.safe_load(path.read_text()))
    return out


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def table(reports: list[dict[str, Any]]) -> str:
    head = "| figure | " + " | ".join(r["profile"] for r in reports) + " |"
    lines = [head, "|---|" + "---|" * len(reports)]
    lines.append("| result | " + " | ".join(r["summary"]["result"] for r in reports) + " |")
    for key, label in ROWS:
        cells = [_fmt(_get(r.get("scorecard") or {}, key)) for r in reports]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def chart(reports: list[dict[str, Any]]) -> str:
    """Grouped bars: one group per fan-out figure, one bar per dispatcher."""
    width, height, left, bottom = 760, 300, 40, 60
    values = [[_get(r.get("scorecard") or {}, k) or 0 for k, _ in CHARTED] for r in reports]
    top = max([v for row in values for v in row] + [1])
    group = (width - left) / len(CHARTED)
    bar = group * 0.8 / max(len(reports), 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 40}">']
    for g, (_, label) in enumerate(CHARTED):
        x0 = left + g * group + group * 0.1
        for i, row in enumerate(values):
            h = (height - bottom) * row[g] / top
            x, y = x0 + i * bar, height - bottom - h + 10
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" '
                f'fill="{COLORS[i % len(COLORS)]}"><title>{html.escape(reports[i]["profile"])}: '
                f"{row[g]}</title></rect>"
                f'<text x="{x + bar / 2 - 1:.1f}" y="{y - 3:.1f}" font-size="10" '
                f'text-anchor="middle">{row[g]}</text>'
            )
        parts.append(
            f'<text x="{x0 + group * 0.4:.1f}" y="{height - bottom + 26}" font-size="11" '
            f'text-anchor="middle">{html.escape(label)}</text>'
        )
    for i, r in enumerate(reports):
        parts.append(
            f'<rect x="{left + i * 150}" y="{height + 12}" width="12" height="12" '
            f'fill="{COLORS[i % len(COLORS)]}"/><text x="{left + i * 150 + 16}" '
            f'y="{height + 22}" font-size="12">{html.escape(r["profile"])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def render_html(reports: list[dict[str, Any]]) -> str:
    rows = "".join(
        "<tr><td>"
        + html.escape(label)
        + "</td>"
        + "".join(
            f"<td>{html.escape(_fmt(_get(r.get('scorecard') or {}, k)))}</td>" for r in reports
        )
        + "</tr>"
        for k, label in ROWS
    )
    head = "".join(f"<th>{html.escape(r['profile'])}</th>" for r in reports)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>mkdc scorecards</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;"
        "padding:4px 8px}table{border-collapse:collapse}</style></head><body>"
        f"<h1>Dispatcher scorecards</h1><table><tr><th>figure</th>{head}</tr>{rows}</table>"
        f"<h2>Fan-out</h2>{chart(reports)}</body></html>"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("report_dirs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, help="default: the parent of the first report dir")
    args = parser.parse_args(argv)
    reports = load(args.report_dirs)
    out = args.out or args.report_dirs[0].resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.md").write_text(table(reports))
    (out / "compare.html").write_text(render_html(reports))
    print(table(reports))
    print(f"written {out / 'compare.md'} and {out / 'compare.html'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
