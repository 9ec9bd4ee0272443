"""report.html's tables: the scorecard (a column per figure, grouped), the dispatcher's
replicas, and key-value tables of plain words for any value."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness.report.markup import escaped as _h

_PERCENTILES = ("p50", "p99")

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


def scorecard_html(card: Mapping[str, Any]) -> str:
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


def replicas_html(replicas: list[dict[str, Any]]) -> str:
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


def environment_rows(environment: Mapping[str, Any]) -> dict[str, Any]:
    """The environment as table rows: replicas have a table of their own, and Kueue's
    feature gates read as the two lists of those on and those off."""
    rows = {k: v for k, v in environment.items() if k != "replicas"}
    gates = rows.pop("kueueFeatureGates", None)
    if gates:
        for state, word in ((True, "on"), (False, "off")):
            rows[f"kueueFeatureGates.{word}"] = [g for g, v in gates.items() if v is state]
    return rows


def kv_table(data: Mapping[str, Any]) -> str:
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
