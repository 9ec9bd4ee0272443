"""report.html: the checks with a timeline picture of each workload on every cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.check_terms import Bound
from harness.report.markup import escaped as _h
from harness.report.model import SUMMARY_WORDS, CheckResult, Report
from harness.report.redaction import plain
from harness.report.style import CSS
from harness.report.tables import environment_rows, kv_table, replicas_html, scorecard_html
from harness.report.timeline_svg import MAX_WORKLOAD_PICTURES, legend, svg_timeline
from harness.results import Result

# The order a reader wants, worst first: what broke, what could not be judged, the rest.
_RESULT_ORDER = tuple(r.value for r in sorted(Result, key=lambda r: r.rank))
_RESULT_WORDS = {"not-supported": "not supported"}


def render_html(report: Report) -> str:
    """The page top-down: the verdict, the checks (failed first), the scorecard as one
    table, then the environment: a reader sees what broke on the first screen."""
    doc = report.to_dict()
    checks = sorted(report.results(), key=lambda check: _rank(check.result))
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>mkdc conformance report: {_h(doc['profile'])} "
        f"({_h(doc['summary']['result'])})</title>",
        f"<style>{CSS}</style></head><body>",
        _verdict_html(doc, checks),
        '<h2 id="checks">Checks</h2>',
    ]
    findings = doc["findings"]
    for uid, check in enumerate(checks):
        related = [f for f in findings if check.id in f["checks"]]
        known = report.catalogue.get(check.id)
        bounds = known.bounds if known is not None else ()
        parts.append(_check_section(check, f"c{uid}", related, bounds))
    parts += [
        '<h2 id="scorecard">Scorecard</h2>',
        scorecard_html(doc["scorecard"]),
        '<h2 id="environment">Environment</h2>',
        kv_table(environment_rows(doc["environment"])),
        replicas_html(doc["environment"].get("replicas") or []),
        "<h3>Privileges beyond the baseline dispatcher role</h3>",
        "<ul>" + "".join(f"<li>{_h(p)}</li>" for p in doc["privileges"]) + "</ul>"
        if doc["privileges"]
        else '<p class="muted">None: the baseline role only.</p>',
        "<h3>Implementation</h3>",
        kv_table(doc["implementation"]),
        "<h3>Claims</h3>",
        kv_table(doc["claims"]),
        "<h3>Timeouts (seconds)</h3>",
        kv_table(doc["timeouts"]),
        "<h3>Report</h3>",
        kv_table(
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
    counts = " · ".join(f"{summary.get(key, 0)} {word}" for key, word in SUMMARY_WORDS)
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


def _check_section(
    check: CheckResult,
    uid: str,
    findings: list[Mapping[str, Any]],
    bounds: Sequence[Bound] = (),
) -> str:
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
    if bounds:
        parts.append(
            '<p class="muted">Bounds: '
            + "; ".join(f"<b>{_h(b.owner)}</b>: {_h(b.what)} ({_h(b.why)})" for b in bounds)
            + "</p>"
        )
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
        evidence.append("<h4>Measured</h4>" + kv_table(plain(check.measured)))
    timeline = check.timeline
    if timeline is not None and len(timeline):
        workloads = timeline.workloads()
        evidence.append(legend())
        if not workloads:
            evidence.append(svg_timeline(timeline, "", f"{uid}w"))
        for i, workload in enumerate(workloads[:MAX_WORKLOAD_PICTURES]):
            evidence.append(f"<h4>Workload {_h(workload)}</h4>")
            evidence.append(svg_timeline(timeline, workload, f"{uid}w{i}"))
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
