"""A workload's timeline drawn as SVG: a row per cluster, named at its left in full (the
margin sized to the longest name, a name past the widest margin shortened in its middle
with the whole on hover), lanes of state bars, marks for instants."""

from __future__ import annotations

import math

from harness.recording.timeline import Timeline
from harness.report.markup import escaped as _h
from harness.report.picture import COLORS, picture

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
_PLOT_W = 820
_TOP = 34
_AXIS_H = 30
MAX_WORKLOAD_PICTURES = 6
# the row names' margin: sized to the longest name, between these (px); a name is drawn
# in a monospace face, whose width per character is known (12 px: 0.6 em, 7.2 px)
_MIN_LEFT, _MAX_LEFT, _NAME_GAP = 120, 330, 12
_CHAR_W = 7.4


def margin(rows: list[str]) -> int:
    """The left margin that holds the longest row name whole, within its bounds."""
    longest = max((len(r) for r in rows), default=0)
    return max(_MIN_LEFT, min(_MAX_LEFT, math.ceil(_NAME_GAP + _CHAR_W * longest)))


def fitted(name: str, left: int) -> str:
    """`name` as drawn in a margin of `left` px: whole where it fits, else shortened in
    its middle, where a run's long names are alike (a scenario's prefix on the left,
    the worker on the right keep them apart)."""
    room = int((left - _NAME_GAP) / _CHAR_W)
    if len(name) <= room:
        return name
    tail = (room - 1) // 2
    return name[: room - 1 - tail] + "…" + name[len(name) - tail :]


def _nice_step(span: float) -> float:
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600):
        if span / step <= 10:
            return float(step)
    return 7200.0


def svg_timeline(timeline: Timeline, workload: str, uid: str = "t") -> str:
    """One picture: a row per cluster, lanes of state bars, marks for instants."""
    pic = picture(timeline, workload)
    span = pic.t1 - pic.t0
    height = _TOP + _ROW_H * len(pic.rows) + _AXIS_H
    left = margin(pic.rows)
    width = left + _PLOT_W + 20

    def x(t: float) -> float:
        return left + max(0.0, min(1.0, (t - pic.t0) / span)) * _PLOT_W

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
            f'<rect x="{left}" y="{top}" width="{_PLOT_W}" height="{_ROW_H}" fill="{fill}"/>'
        )
        out.append(
            f'<g><title>{_h(row)}</title><text x="{left - 8}" y="{top + _ROW_H / 2 + 4}" '
            f'text-anchor="end" class="row">{_h(fitted(row, left))}</text></g>'
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
        f'<text x="{left + _PLOT_W}" y="{height - 2}" text-anchor="end" class="axis">'
        "seconds since the workload was first seen</text>"
    )
    for bar in sorted(pic.bars, key=lambda b: b.lane == "admitted"):
        if bar.lane == "inactive":
            top, h, fill = y(bar.row), _ROW_H, f"url(#hatch-{uid})"
        else:
            off, h = _LANES[bar.lane]
            top, fill = y(bar.row) + off, COLORS[bar.lane]
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
            f'stroke="{COLORS["action"]}" stroke-dasharray="4 3"/>'
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


def legend() -> str:
    items = []
    for shape, key, label in _LEGEND:
        color = COLORS[key]
        if shape == "bar":
            icon = f'<span class="swatch {key}" style="background:{color}"></span>'
        else:
            svg = _shape(shape, 10, 8, color, label).replace("title>", "desc>")
            icon = f'<svg width="20" height="16" aria-hidden="true">{svg}</svg>'
        items.append(f'<span class="item">{icon}{_h(label)}</span>')
    return '<div class="legend">' + "".join(items) + "</div>"
