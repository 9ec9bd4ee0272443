"""report.html: the checks with a timeline picture of each workload on every cluster."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.recording.timeline import MANAGER, Event, Kind, Timeline
from harness.report.model import CheckResult, Report
from harness.report.redaction import plain, report_text
from harness.results import Result


def _h(value: Any) -> str:
    """Escaped (and redacted) text for HTML and SVG."""
    return html.escape(report_text("" if value is None else str(value)), quote=True)


_COLORS = {
    "nominated": "#9ecae1",
    "copy": "#3182bd",
    "reserved": "#74c476",
    "admitted": "#006d2c",
    "provreq": "#fd8d3c",
    "job": "#756bb1",
    "inactive": "#d9d9d9",
    "placement": "#111111",
    "preemption": "#d62728",
    "eviction": "#d62728",
    "nomination": "#08519c",
    "state": "#636363",
    "action": "#888888",
}
_LEGEND = (
    ("bar", "nominated", "nominated"),
    ("bar", "copy", "copy exists on worker"),
    ("bar", "reserved", "quota reserved"),
    ("bar", "admitted", "admitted"),
    ("bar", "provreq", "ProvisioningRequest"),
    ("bar", "job", "Job exists"),
    ("bar", "inactive", "cluster inactive"),
    ("diamond", "placement", "placed (clusterName set)"),
    ("triangle", "preemption", "preemption"),
    ("cross", "eviction", "eviction"),
    ("tick", "nomination", "nomination write"),
    ("line", "action", "harness action"),
)
# lane -> (y offset inside a row, height)
_LANES = {
    "nominated": (4, 5),
    "copy": (11, 6),
    "reserved": (19, 6),
    "admitted": (19, 6),
    "provreq": (27, 5),
    "job": (34, 5),
}
_ROW_H = 42
_LEFT = 120
_PLOT_W = 820
_TOP = 34
_AXIS_H = 30
MAX_WORKLOAD_PICTURES = 6


@dataclass
class _Bar:
    row: str
    lane: str
    start: float
    end: float
    label: str


@dataclass
class _Mark:
    row: str
    shape: str
    color: str
    t: float
    label: str


@dataclass
class _Picture:
    t0: float
    t1: float
    rows: list[str]
    bars: list[_Bar]
    marks: list[_Mark]
    lines: list[tuple[float, str]]


def _natural(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _picture(timeline: Timeline, workload: str) -> _Picture:
    """Turn events into per-cluster bars (state periods) and marks (instants)."""
    events = list(timeline.of(workload))
    own = [e.t for e in events if e.workload == workload]
    t0 = min(own) if own else (events[0].t if events else 0.0)
    t1 = max([e.t for e in events] + [t0])
    t1 = max(t1, t0 + 1.0)
    t1 += (t1 - t0) * 0.03
    bars: list[_Bar] = []
    marks: list[_Mark] = []
    lines: list[tuple[float, str]] = []
    rows: set[str] = set()
    open_: dict[tuple[str, str, str], tuple[float, str]] = {}

    def start(row: str, lane: str, t: float, label: str, key: str = "") -> None:
        rows.add(row)
        open_.setdefault((row, lane, key), (t, label))

    def stop(row: str, lane: str, t: float, key: str = "", suffix: str = "") -> None:
        begun = open_.pop((row, lane, key), None)
        if begun is not None:
            bars.append(_Bar(row, lane, begun[0], t, begun[1] + suffix))

    def mark(row: str, shape: str, color: str, e: Event, label: str) -> None:
        rows.add(row)
        marks.append(_Mark(row, shape, color, e.t, f"t={e.t - t0:.2f}s {label}"))

    for e in events:
        c, d = e.cluster, e.data
        if e.kind is Kind.NOMINATION:
            names = [str(n) for n in d.get("names") or []]
            for name in names:
                start(name, "nominated", e.t, f"{name}: nominated")
            for row, lane, _key in list(open_):
                if lane == "nominated" and row not in names:
                    stop(row, lane, e.t)
            writer = f" by {d['writer']}" if d.get("writer") else ""
            mark(MANAGER, "tick", _COLORS["nomination"], e, f"nominated {names}{writer}")
        elif e.kind is Kind.PLACEMENT:
            target = str(d.get("cluster") or "")
            if target:
                mark(target, "diamond", _COLORS["placement"], e, f"placed on {target}")
            else:
                mark(MANAGER, "diamond", _COLORS["state"], e, "clusterName cleared")
        elif e.kind is Kind.COPY_CREATED:
            start(c, "copy", e.t, f"{c}: copy")
        elif e.kind is Kind.COPY_DELETED:
            for lane in ("copy", "reserved", "admitted"):
                stop(c, lane, e.t)
        elif e.kind in (Kind.COPY_RESERVED, Kind.QUOTA_RESERVED):
            if d.get("reserved", True):
                start(c, "reserved", e.t, f"{c}: quota reserved")
            else:
                stop(c, "admitted", e.t)
                stop(c, "reserved", e.t)
        elif e.kind is Kind.COPY_ADMITTED:
            start(c, "admitted", e.t, f"{c}: admitted")
        elif e.kind in (Kind.COPY_EVICTED, Kind.EVICTED):
            stop(c, "admitted", e.t)
            stop(c, "reserved", e.t)
            mark(c, "cross", _COLORS["eviction"], e, f"evicted: {d.get('reason', '')}")
        elif e.kind is Kind.JOB_CREATED:
            start(c, "job", e.t, f"{c}: Job")
        elif e.kind is Kind.JOB_FINISHED:
            stop(c, "job", e.t, suffix=f" ({d.get('condition', 'finished')})")
        elif e.kind is Kind.JOB_DELETED:
            stop(c, "job", e.t, suffix=" (deleted)")
        elif e.kind is Kind.PROVREQ_CREATED:
            name = str(d.get("name", ""))
            start(c, "provreq", e.t, f"{c}: ProvisioningRequest {name}", key=name)
        elif e.kind is Kind.PROVREQ_STATE:
            name = str(d.get("name", ""))
            mark(c, "tick", _COLORS["provreq"], e, f"ProvisioningRequest {name}: {d.get('state')}")
        elif e.kind is Kind.PROVREQ_DELETED:
            stop(c, "provreq", e.t, key=str(d.get("name", "")))
        elif e.kind is Kind.PREEMPTION:
            mark(c, "triangle", _COLORS["preemption"], e, f"preempted {d.get('victim', '')}")
        elif e.kind is Kind.CLUSTER_ACTIVE:
            target = str(d.get("cluster", ""))
            if target and not d.get("active", True):
                start(target, "inactive", e.t, f"{target}: inactive")
            elif target:
                rows.add(target)
                stop(target, "inactive", e.t)
        elif e.kind is Kind.CONFIG_CHANGED:
            clusters = [str(x) for x in d.get("clusters") or []]
            rows.update(clusters)
            if e.t >= t0:
                lines.append((e.t, f"config {d.get('config', '')}: {', '.join(clusters)}"))
        elif e.kind is Kind.DISPATCHER_EXITED:
            lines.append((e.t, f"{d.get('process') or 'dispatcher'} exited: {d.get('cause', '')}"))
        elif e.kind is Kind.ACTION:
            details = ", ".join(f"{k}={v}" for k, v in d.items() if k != "what")
            what = str(d.get("what", "action"))
            lines.append((e.t, what + (f" ({details})" if details else "")))
        elif e.kind in (Kind.WORKLOAD_CREATED, Kind.FINISHED, Kind.WORKLOAD_DELETED):
            mark(MANAGER, "tick", _COLORS["state"], e, e.kind.value)
        elif e.kind is Kind.CHECK_STATE:
            mark(MANAGER, "tick", _COLORS["state"], e, f"admission check: {d.get('state')}")
    end = max(e.t for e in events) if events else t0
    for (row, lane, _key), (begun, label) in list(open_.items()):
        bars.append(_Bar(row, lane, begun, end, label + " (until the end)"))
    workers = sorted((r for r in rows if r != MANAGER), key=_natural)
    return _Picture(t0, t1, [MANAGER, *workers], bars, marks, lines)


def _nice_step(span: float) -> float:
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600):
        if span / step <= 10:
            return float(step)
    return 7200.0


def _svg_timeline(timeline: Timeline, workload: str, uid: str = "t") -> str:
    """One picture: a row per cluster, lanes of state bars, marks for instants."""
    pic = _picture(timeline, workload)
    span = pic.t1 - pic.t0
    height = _TOP + _ROW_H * len(pic.rows) + _AXIS_H
    width = _LEFT + _PLOT_W + 20

    def x(t: float) -> float:
        return _LEFT + max(0.0, min(1.0, (t - pic.t0) / span)) * _PLOT_W

    def y(row: str) -> int:
        return _TOP + _ROW_H * pic.rows.index(row)

    out = [
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="timeline of {_h(workload)}">',
        f"<title>timeline of {_h(workload)}</title>",
        f'<defs><pattern id="hatch-{uid}" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#eeeeee"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#bdbdbd" stroke-width="3"/></pattern></defs>',
    ]
    for i, row in enumerate(pic.rows):
        top = y(row)
        fill = "#fafafa" if i % 2 else "#ffffff"
        out.append(
            f'<rect x="{_LEFT}" y="{top}" width="{_PLOT_W}" height="{_ROW_H}" fill="{fill}"/>'
        )
        out.append(
            f'<text x="{_LEFT - 8}" y="{top + _ROW_H / 2 + 4}" text-anchor="end" '
            f'class="row">{_h(row)}</text>'
        )
    step = _nice_step(span)
    tick = 0.0
    while tick <= span + 1e-9:
        tx = x(pic.t0 + tick)
        out.append(
            f'<line x1="{tx:.1f}" y1="{_TOP}" x2="{tx:.1f}" y2="{height - _AXIS_H + 4}" '
            'stroke="#e0e0e0"/>'
        )
        out.append(
            f'<text x="{tx:.1f}" y="{height - _AXIS_H + 16}" text-anchor="middle" '
            f'class="axis">{tick:g}</text>'
        )
        tick += step
    out.append(
        f'<text x="{_LEFT + _PLOT_W}" y="{height - 2}" text-anchor="end" class="axis">'
        "seconds since the workload was first seen</text>"
    )
    for bar in sorted(pic.bars, key=lambda b: b.lane == "admitted"):
        if bar.lane == "inactive":
            top, h, fill = y(bar.row), _ROW_H, f"url(#hatch-{uid})"
        else:
            off, h = _LANES[bar.lane]
            top, fill = y(bar.row) + off, _COLORS[bar.lane]
        x0, x1 = x(bar.start), x(bar.end)
        out.append(
            f'<rect x="{x0:.1f}" y="{top}" width="{max(x1 - x0, 1.5):.1f}" height="{h}" '
            f'fill="{fill}"><title>{_h(bar.label)}: {bar.start - pic.t0:.2f}s to '
            f"{bar.end - pic.t0:.2f}s</title></rect>"
        )
    for t, label in pic.lines:
        lx = x(t)
        out.append(
            f'<g><line x1="{lx:.1f}" y1="{_TOP - 14}" x2="{lx:.1f}" y2="{height - _AXIS_H}" '
            f'stroke="{_COLORS["action"]}" stroke-dasharray="4 3"/>'
            f'<text x="{lx + 3:.1f}" y="{_TOP - 4}" class="action">{_h(_short(label))}</text>'
            f"<title>t={t - pic.t0:.2f}s {_h(label)}</title></g>"
        )
    for m in pic.marks:
        out.append(_shape(m.shape, x(m.t), y(m.row) + _ROW_H / 2, m.color, m.label))
    out.append("</svg>")
    return "".join(out)


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shape(shape: str, cx: float, cy: float, color: str, label: str) -> str:
    title = f"<title>{_h(label)}</title>"
    if shape == "diamond":
        pts = (
            f"{cx:.1f},{cy - 8:.1f} {cx + 6:.1f},{cy:.1f} "
            f"{cx:.1f},{cy + 8:.1f} {cx - 6:.1f},{cy:.1f}"
        )
        return f'<polygon points="{pts}" fill="{color}" stroke="#fff">{title}</polygon>'
    if shape == "triangle":
        pts = f"{cx:.1f},{cy + 7:.1f} {cx + 6:.1f},{cy - 5:.1f} {cx - 6:.1f},{cy - 5:.1f}"
        return f'<polygon points="{pts}" fill="{color}" stroke="#fff">{title}</polygon>'
    if shape == "cross":
        return (
            f'<path d="M{cx - 5:.1f},{cy - 5:.1f}L{cx + 5:.1f},{cy + 5:.1f}'
            f'M{cx - 5:.1f},{cy + 5:.1f}L{cx + 5:.1f},{cy - 5:.1f}" stroke="{color}" '
            f'stroke-width="2.5">{title}</path>'
        )
    if shape == "line":
        return (
            f'<line x1="{cx:.1f}" y1="{cy - 9:.1f}" x2="{cx:.1f}" y2="{cy + 9:.1f}" '
            f'stroke="{color}" stroke-dasharray="4 3">{title}</line>'
        )
    return (
        f'<line x1="{cx:.1f}" y1="{cy - 9:.1f}" x2="{cx:.1f}" y2="{cy + 9:.1f}" '
        f'stroke="{color}" stroke-width="2">{title}</line>'
    )


def _legend() -> str:
    items = []
    for shape, key, label in _LEGEND:
        color = _COLORS[key]
        if shape == "bar":
            icon = f'<span class="swatch {key}" style="background:{color}"></span>'
        else:
            svg = _shape(shape, 10, 8, color, label).replace("title>", "desc>")
            icon = f'<svg width="20" height="16" aria-hidden="true">{svg}</svg>'
        items.append(f'<span class="item">{icon}{_h(label)}</span>')
    return '<div class="legend">' + "".join(items) + "</div>"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;
max-width:1100px}
h1{font-size:1.5em;margin:0 0 4px}h2{margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f4f4f4}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:.9em}
.passed{background:#d4f4dd;color:#0a6b2a}.failed{background:#fde0e0;color:#a01010}
.skipped{background:#eeeeee;color:#555}.not-supported{background:#f2f2f2;color:#888}
.partial{background:#fff1cc;color:#8a5a00}.undecided{background:#e9e0f7;color:#5a2d91}
.error{background:#f3d9f7;color:#6a1080}
.verdict{border-left:6px solid #888;padding:4px 16px;margin:0 0 8px}
.verdict.v-passed{border-color:#0a6b2a}.verdict.v-failed{border-color:#a01010}
.verdict.v-partial{border-color:#8a5a00}.verdict.v-error{border-color:#6a1080}
.verdict .result{font-size:1.1em;margin:8px 0}.verdict .badge{font-size:1em;padding:2px 12px}
.verdict ul{margin:4px 0;padding-left:20px}.verdict li{margin:2px 0}
.index{margin:4px 0;font-size:.92em}.index .group{font-weight:600}.index a{white-space:nowrap}
nav{font-size:.9em;margin:6px 0}nav a{margin-right:12px}
.finding{border-left:4px solid #a01010;padding:2px 12px;margin:10px 0}
.finding h4{margin:4px 0}
.actions{border-left:4px solid #3182bd;padding:2px 12px;margin:10px 0}
.actions h4{margin:4px 0}.actions ul{margin:4px 0;padding-left:20px}
.check{border:1px solid #e2e2e2;border-radius:6px;padding:8px 16px;margin:16px 0}
.check.failed,.check.undecided{border-left:6px solid currentColor}
.check.failed,.check.undecided,.check.passed,.check.skipped,.check.not-supported{
background:none;color:inherit}
.check.failed{border-left-color:#a01010}.check.undecided{border-left-color:#5a2d91}
.check h3{margin:6px 0}.check h3 .meta{font-size:.8em;font-weight:400;color:#777}
.message{white-space:pre-wrap;background:#f8f8f8;padding:6px;
border-radius:4px;font-family:ui-monospace,monospace;font-size:.9em}
details>summary{cursor:pointer;color:#555;font-size:.9em;margin:4px 0}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.85em;margin:6px 0}
.legend .item{display:inline-flex;align-items:center;gap:4px}
svg.timeline{display:block;max-width:100%;height:auto;margin:6px 0 14px}
svg text.row{font-size:12px;fill:#333}svg text.axis{font-size:11px;fill:#666}
svg text.action{font-size:10px;fill:#555}
.muted{color:#777}
.swatch{display:inline-block;width:18px;height:9px}
.swatch.inactive{background:
repeating-linear-gradient(45deg,#bdbdbd 0 2px,#eeeeee 2px 5px)!important}
.scroll{overflow-x:auto;width:max-content;max-width:calc(100vw - 64px)}
table.scorecard{font-size:.8em;margin:0}table.scorecard td{text-align:right;white-space:nowrap}
table.scorecard td,table.scorecard th{padding:3px 4px}
table.scorecard th{font-weight:400;vertical-align:bottom;font-size:.9em}
table.scorecard th.group{text-align:center;vertical-align:middle;font-weight:400;color:#555}
table.scorecard th.scenario,table.scorecard td.scenario{text-align:left}
table.scorecard tr.total td{font-weight:600;background:#fafafa}
"""

# The order a reader wants, worst first: what broke, what could not be judged, the rest.
_RESULT_ORDER = tuple(r.value for r in sorted(Result, key=lambda r: r.rank))
_RESULT_WORDS = {"not-supported": "not supported"}
_PERCENTILES = ("p50", "p99")


def render_html(report: Report) -> str:
    """The page top-down: the verdict, the checks (failed first), the scorecard as one
    table, then the environment: a reader sees what broke on the first screen."""
    doc = report.to_dict()
    checks = sorted(report.results(), key=lambda check: _rank(check.result))
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>mkdc conformance report: {_h(doc['profile'])} "
        f"({_h(doc['summary']['result'])})</title>",
        f"<style>{_CSS}</style></head><body>",
        _verdict_html(doc, checks),
        '<h2 id="checks">Checks</h2>',
    ]
    findings = doc["findings"]
    for uid, check in enumerate(checks):
        related = [f for f in findings if check.id in f["checks"]]
        parts.append(_check_section(check, f"c{uid}", related))
    parts += [
        '<h2 id="scorecard">Scorecard</h2>',
        _scorecard_html(doc["scorecard"]),
        '<h2 id="environment">Environment</h2>',
        _kv_table({k: v for k, v in doc["environment"].items() if k != "replicas"}),
        _replicas_html(doc["environment"].get("replicas") or []),
        "<h3>Privileges beyond the baseline dispatcher role</h3>",
        "<ul>" + "".join(f"<li>{_h(p)}</li>" for p in doc["privileges"]) + "</ul>"
        if doc["privileges"]
        else '<p class="muted">None: the baseline role only.</p>',
        "<h3>Implementation</h3>",
        _kv_table(doc["implementation"]),
        "<h3>Claims</h3>",
        _kv_table(doc["claims"]),
        "<h3>Timeouts (seconds)</h3>",
        _kv_table(doc["timeouts"]),
        "<h3>Report</h3>",
        _kv_table(
            {
                "date": doc["date"],
                "suiteVersion": doc["suiteVersion"],
                "profile": doc["profile"],
                "dispatcherName": doc["dispatcherName"],
            }
        ),
        "</body></html>",
    ]
    return "\n".join(parts)


def _rank(result: str) -> int:
    return _RESULT_ORDER.index(result) if result in _RESULT_ORDER else len(_RESULT_ORDER)


def _verdict_html(doc: Mapping[str, Any], checks: Sequence[CheckResult]) -> str:
    """Who was judged, the overall result and counts, an index of the checks by result,
    and one line per finding (findings that name no check in full: no section shows them)."""
    summary = doc["summary"]
    result = str(summary["result"])
    counts = " · ".join(
        f"{summary.get(key, 0)} {word}"
        for key, word in (
            ("failed", "failed"),
            ("undecided", "undecided"),
            ("passed", "passed"),
            ("skipped", "skipped"),
            ("notSupported", "not supported"),
        )
    )
    parts = [
        f'<header class="verdict v-{_h(result)}">',
        f"<h1>Conformance report: {_h(doc['profile'])}</h1>",
        f"<p>Dispatcher <code>{_h(doc['dispatcherName'])}</code> · {_h(doc['date'])} · "
        f"suite {_h(doc['suiteVersion'])}</p>",
        f'<p class="result"><span class="badge {_h(result)}">{_h(result)}</span> {counts}</p>',
    ]
    if doc.get("error"):
        parts.append(f'<div class="message">{_h(doc["error"])}</div>')
    if doc.get("dispatcherExits"):  # said at once on the console; first here too
        parts.append("<p><strong>The dispatcher exited while the scenarios ran</strong></p><ul>")
        for e in doc["dispatcherExits"]:
            code = "" if e.get("code") is None else f" with code {e['code']}"
            again = e.get("restartedAfterSeconds")
            restart = "" if again is None else f"; started again after {_h(again)} s"
            restart += " (a crash loop)" if e.get("crashLoop") else ""
            parts.append(
                f"<li>{_h(e['process'])} exited{code} {_h(e['atSeconds'])} s into the run: "
                f'{_h(e["cause"])}{restart} <span class="muted">({_h(e["log"])})</span></li>'
            )
        parts.append("</ul>")
    for result_word in _RESULT_ORDER:
        group = [c for c in checks if c.result == result_word]
        if not group:
            continue
        named = result_word in ("failed", "undecided")  # the ones to read: with names
        links = ", ".join(
            f'<a href="#{_h(c.id)}">{_h(c.id)}{" " + _h(c.name) if named else ""}</a>'
            for c in group
        )
        word = _RESULT_WORDS.get(result_word, result_word)
        parts.append(f'<p class="index"><span class="group">{_h(word)}:</span> {links}</p>')
    if doc["findings"]:
        parts.append("<p><strong>Findings</strong></p><ul>")
        for f in doc["findings"]:
            where = ", ".join(f'<a href="#{_h(c)}">{_h(c)}</a>' for c in f["checks"])
            scenarios = _h(", ".join(f["scenarios"]) or "the run")
            line = f"<li>{_h(f['title'])} · {'checks ' + where if where else 'no check'}"
            if not f["checks"]:  # shown nowhere else
                line += f'<div class="finding" id="finding-{_h(f["id"])}">'
                line += f'<div class="message">{_h(f["detail"])}</div>'
                line += f'<p class="muted">seen in: {scenarios}</p></div>'
            parts.append(line + "</li>")
        parts.append("</ul>")
    parts.append(
        '<nav><a href="#checks">Checks</a><a href="#scorecard">Scorecard</a>'
        '<a href="#environment">Environment</a></nav>'
    )
    parts.append("</header>")
    return "\n".join(parts)


def _check_section(check: CheckResult, uid: str, findings: list[Mapping[str, Any]]) -> str:
    """One check: its verdict and why, the findings that may explain it, what it
    measured and the timeline of its workloads. Passed checks keep their evidence
    folded away, so the failures stay close together."""
    result = str(check.result)
    parts = [
        f'<section class="check {_h(result)}" id="{_h(check.id)}">',
        f"<h3>{_h(check.id)} {_h(check.name)} "
        f'<span class="badge {_h(result)}">{_h(result)}</span> <span class="meta">'
        f"{_h(check.feature or 'core')} · {float(check.duration_seconds):.1f} s</span></h3>",
    ]
    if check.message:
        parts.append(f'<div class="message">{_h(check.message)}</div>')
    for f in findings:
        anchor = f' id="finding-{_h(f["id"])}"' if f["checks"][0] == check.id else ""
        parts.append(
            f'<div class="finding"{anchor}><h4>Finding: {_h(f["title"])}</h4>'
            f'<div class="message">{_h(f["detail"])}</div>'
            '<p class="muted">checks failed or undecided there: '
            + ", ".join(f'<a href="#{_h(c)}">{_h(c)}</a>' for c in f["checks"])
            + f" · seen in: {_h(', '.join(f['scenarios']) or 'the run')}</p></div>"
        )
    evidence = []
    if check.dispatcher_actions is not None:
        evidence.append(
            '<div class="actions"><h4>What the dispatcher did</h4><ul>'
            + "".join(f"<li>{_h(line)}</li>" for line in check.dispatcher_actions.lines)
            + "</ul></div>"
        )
    if check.measured:
        evidence.append("<h4>Measured</h4>" + _kv_table(plain(check.measured)))
    timeline = check.timeline
    if timeline is not None and len(timeline):
        workloads = timeline.workloads()
        evidence.append(_legend())
        if not workloads:
            evidence.append(_svg_timeline(timeline, "", f"{uid}w"))
        for i, workload in enumerate(workloads[:MAX_WORKLOAD_PICTURES]):
            evidence.append(f"<h4>Workload {_h(workload)}</h4>")
            evidence.append(_svg_timeline(timeline, workload, f"{uid}w{i}"))
        if len(workloads) > MAX_WORKLOAD_PICTURES:
            evidence.append(
                f'<p class="muted">{len(workloads) - MAX_WORKLOAD_PICTURES} more workloads '
                "not drawn.</p>"
            )
    elif result not in ("skipped", "not-supported"):  # those ran nothing to record
        evidence.append('<p class="muted">No timeline recorded.</p>')
    if result in ("failed", "undecided") or not (timeline is not None and len(timeline)):
        parts += evidence
    else:
        what = "timeline" + (" and measurements" if check.measured else "")
        parts.append(f"<details><summary>{what}</summary>")
        parts += evidence
        parts.append("</details>")
    parts.append("</section>")
    return "\n".join(parts)


# Scorecard columns in reading order: key -> (group, heading); the key itself is each
# heading's tooltip. Figures the suite adds later follow under "other".
_FIGURES: dict[str, tuple[str, str]] = {
    "peakConcurrentCopies": ("peak at once", "copies"),
    "peakConcurrentProvisioningRequests": ("peak at once", "provisioning requests"),
    "peakConcurrentReservations": ("peak at once", "quota reservations"),
    "workersWithPreemptions": ("peak at once", "workers preempting"),
    "timeToFirstNominationSeconds": ("time to, p50 / p99", "first nomination"),
    "timeToPlacementSeconds": ("time to, p50 / p99", "placement"),
    "nominationWritesPerPlacement": ("per placement", "nomination writes"),
    "copiesCreatedPerPlacement": ("per placement", "copies created"),
    "copiesDeletedPerPlacement": ("per placement", "copies deleted"),
    "workloads": ("totals", "workloads"),
    "placedWorkloads": ("totals", "placed"),
    "nominationWrites": ("totals", "nomination writes"),
    "copiesCreated": ("totals", "copies created"),
    "copiesDeleted": ("totals", "copies deleted"),
}


def _scorecard_html(card: Mapping[str, Any]) -> str:
    """One table: the whole run, then a row per scenario; a column per figure, grouped
    under a heading of what kind of figure it is."""
    per = card.get("perScenario")
    total = {k: v for k, v in card.items() if k not in ("perScenario", "scenarios")}
    label = "whole run"
    if isinstance(card.get("scenarios"), int):
        label += f" ({card['scenarios']} scenarios)"
    rows: list[tuple[str, Mapping[str, Any]]] = [(label, total)]
    if isinstance(per, Mapping):
        rows += [(str(name), c) for name, c in per.items() if isinstance(c, Mapping)]
        rows += [(str(name), {"value": c}) for name, c in per.items() if not isinstance(c, Mapping)]
    elif per is not None:
        total["perScenario"] = per  # not the usual shape: shown as it is
    seen: list[str] = []
    for _, figures in rows:
        seen += [k for k in figures if k not in seen]
    columns = [k for k in _FIGURES if k in seen] + [k for k in seen if k not in _FIGURES]
    groups: list[tuple[str, int]] = []
    for key in columns:
        group = _FIGURES.get(key, ("other", ""))[0]
        if groups and groups[-1][0] == group:
            groups[-1] = (group, groups[-1][1] + 1)
        else:
            groups.append((group, 1))
    top = "".join(f'<th colspan="{n}" class="group">{_h(g)}</th>' for g, n in groups)
    head = "".join(f'<th title="{_h(k)}">{_h(_heading(k))}</th>' for k in columns)
    body = []
    for i, (name, figures) in enumerate(rows):
        cells = "".join(
            f'<td title="{_h(_fmt(figures.get(k)))}">{_h(_figure(k, figures.get(k)))}</td>'
            for k in columns
        )
        css = ' class="total"' if i == 0 else ""
        body.append(f'<tr{css}><td class="scenario">{_h(name)}</td>{cells}</tr>')
    return (
        '<p class="muted">Whole run: peaks are the largest of any scenario, counts are '
        "totals, times are percentiles over every workload of the run; — means not "
        "measured. Hover a heading for its name in report.yaml, a cell for its exact "
        "value.</p>"
        '<div class="scroll"><table class="scorecard">'
        f'<tr><th rowspan="2" class="scenario">scenario</th>{top}</tr><tr>{head}</tr>'
        f"{''.join(body)}</table></div>"
    )


def _heading(key: str) -> str:
    """A column's heading: its words, or a figure's key split into words."""
    if key in _FIGURES:
        return _FIGURES[key][1]
    return " ".join(re.split(r"(?<=[a-z])(?=[A-Z])", key)).lower()


def _is_percentiles(value: Any) -> bool:
    return isinstance(value, Mapping) and list(value) == list(_PERCENTILES)


def _figure(key: str, value: Any) -> str:
    """A scorecard cell: short numbers, percentiles as "p50 / p99 s"."""
    unit = " s" if key.endswith("Seconds") else ""
    if _is_percentiles(value):
        if all(value[p] is None for p in _PERCENTILES):
            return "—"
        return " / ".join(_short_number(value[p]) for p in _PERCENTILES) + unit
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _short_number(value) + unit
    return _fmt(value)


def _short_number(value: Any) -> str:
    """Two decimals (fewer for large figures), so a column's figures line up."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return _fmt(value)
    if isinstance(value, int):
        return str(value)
    digits = 2 if abs(value) < 100 else 1 if abs(value) < 1000 else 0
    text = f"{value:.{digits}f}"
    if float(text) == 0 and value != 0:
        return f"{value:.1g}"  # a small figure, not zero
    return text


def _replicas_html(replicas: list[dict[str, Any]]) -> str:
    """Each replica run as a kubelet runs a container: who it was, its restarts, its
    peaks beside its requests and limits, one over its memory limit marked."""
    if not replicas:
        return ""

    def amount(entry: dict[str, Any], resource: str, peak: str) -> str:
        scale, unit = (2**20, " MiB") if resource == "memory" else (1, " cores")
        said = f"{entry[peak] / scale:.2f}{unit}"
        for part in ("requests", "limits"):
            if resource in (entry.get(part) or {}):
                said += f" · {part[:-1]} {entry[part][resource] / scale:.2f}"
        return said

    rows = "".join(
        f"<tr><td>{_h(r['process'])}</td><td>{_h(r.get('environment', 1))}</td>"
        f"<td><code>{_h(r['identity'])}</code></td><td>{_h(_fmt(r.get('user')))}</td>"
        f"<td>{_h(r['restarts'])}</td>"
        f"<td>{_h(amount(r, 'memory', 'peakMemoryBytes'))}"
        f"{' <strong>over its limit</strong>' if r.get('overMemoryLimit') else ''}</td>"
        f"<td>{_h(amount(r, 'cpu', 'peakCpuCores'))}</td></tr>"
        for r in replicas
    )
    head = (
        "<tr><th>replica</th><th>environment</th><th>identity</th><th>user</th>"
        "<th>restarts</th><th>peak memory</th><th>peak CPU</th></tr>"
    )
    return f"<h3>Dispatcher replicas</h3><table>{head}{rows}</table>"


def _kv_table(data: Mapping[str, Any]) -> str:
    rows = "".join(f"<tr><th>{_h(k)}</th><td>{_h(_fmt(v))}</td></tr>" for k, v in _flatten(data))
    return f"<table>{rows}</table>" if rows else '<p class="muted">none</p>'


def _flatten(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and prefix.count(".") < 2:
            out.extend(_flatten(value, name + "."))
        else:
            out.append((name, value))
    return out


def _fmt(value: Any) -> str:
    """Plain words for any value: never a Python repr (lists joined, mappings as k: v)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    if isinstance(value, Mapping):
        if _is_percentiles(value):
            return " / ".join(_fmt(value[p]) for p in _PERCENTILES)
        return "; ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) or "{}"
    if isinstance(value, list | tuple):
        return ", ".join(_fmt(v) for v in value) or "[]"
    return str(value)
