"""A workload's timeline as a picture's parts: a row per cluster, bars for the periods
a state held (nominated, a copy, quota, a Job, ...), marks for instants and lines for
the harness's actions; `timeline_svg` draws them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.recording.timeline import MANAGER, Event, Kind, Timeline

COLORS = {
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


@dataclass
class Bar:
    row: str
    lane: str
    start: float
    end: float
    label: str


@dataclass
class Mark:
    row: str
    shape: str
    color: str
    t: float
    label: str


@dataclass
class Picture:
    t0: float
    t1: float
    rows: list[str]
    bars: list[Bar]
    marks: list[Mark]
    lines: list[tuple[float, str]]


def natural(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def picture(timeline: Timeline, workload: str) -> Picture:
    """Turn events into per-cluster bars (state periods) and marks (instants)."""
    events = list(timeline.of(workload))
    own = [e.t for e in events if e.workload == workload]
    t0 = min(own) if own else (events[0].t if events else 0.0)
    t1 = max([e.t for e in events] + [t0])
    t1 = max(t1, t0 + 1.0)
    t1 += (t1 - t0) * 0.03
    bars: list[Bar] = []
    marks: list[Mark] = []
    lines: list[tuple[float, str]] = []
    rows: set[str] = set()
    open_: dict[tuple[str, str, str], tuple[float, str]] = {}

    def start(row: str, lane: str, t: float, label: str, key: str = "") -> None:
        rows.add(row)
        open_.setdefault((row, lane, key), (t, label))

    def stop(row: str, lane: str, t: float, key: str = "", suffix: str = "") -> None:
        begun = open_.pop((row, lane, key), None)
        if begun is not None:
            bars.append(Bar(row, lane, begun[0], t, begun[1] + suffix))

    def mark(row: str, shape: str, color: str, e: Event, label: str) -> None:
        rows.add(row)
        marks.append(Mark(row, shape, color, e.t, f"t={e.t - t0:.2f}s {label}"))

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
            mark(MANAGER, "tick", COLORS["nomination"], e, f"nominated {names}{writer}")
        elif e.kind is Kind.PLACEMENT:
            target = str(d.get("cluster") or "")
            if target:
                mark(target, "diamond", COLORS["placement"], e, f"placed on {target}")
            else:
                mark(MANAGER, "diamond", COLORS["state"], e, "clusterName cleared")
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
            mark(c, "cross", COLORS["eviction"], e, f"evicted: {d.get('reason', '')}")
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
            mark(c, "tick", COLORS["provreq"], e, f"ProvisioningRequest {name}: {d.get('state')}")
        elif e.kind is Kind.PROVREQ_DELETED:
            stop(c, "provreq", e.t, key=str(d.get("name", "")))
        elif e.kind is Kind.PREEMPTION:
            mark(c, "triangle", COLORS["preemption"], e, f"preempted {d.get('victim', '')}")
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
            mark(MANAGER, "tick", COLORS["state"], e, e.kind.value)
        elif e.kind is Kind.CHECK_STATE:
            mark(MANAGER, "tick", COLORS["state"], e, f"admission check: {d.get('state')}")
    end = max(e.t for e in events) if events else t0
    for (row, lane, _key), (begun, label) in list(open_.items()):
        bars.append(Bar(row, lane, begun, end, label + " (until the end)"))
    workers = sorted((r for r in rows if r != MANAGER), key=natural)
    return Picture(t0, t1, [MANAGER, *workers], bars, marks, lines)
