"""A run's verdict as a CI job's summary (GitHub's `$GITHUB_STEP_SUMMARY` renders it):
Markdown, one table per report, one row per check with its verdict, what the dispatcher
did (a failed check) or why it was not decided, and where the full report is kept.

A check the run selected but did not judge (skipped for time, undecided) is named as such,
so a green job never passes a check in silence."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.report.model import SUMMARY_WORDS
from harness.report.verify import MAX_REPORT_BYTES
from harness.userfiles import decode, parse_yaml, read_bytes

VERDICTS = {
    "passed": "✅ passed",
    "failed": "❌ failed",
    "undecided": "⚠️ undecided",
    "skipped": "⏭️ not judged in this run",
    "not-supported": "➖ not supported (claims)",
}
# a summary GitHub accepts (1 MiB per step): a check's account is cut well before that
CELL_CHARS = 300


def reports_below(folder: Path) -> list[Path]:
    """The report.yaml of a run's report folder: its own, or one per run of several."""
    own = folder / "report.yaml"
    return [own] if own.is_file() else sorted(folder.glob("*/report.yaml"))


def markdown(folder: Path, artifact: str = "", artifact_url: str = "") -> str:
    """The job summary of the reports in `folder`; `artifact` names the uploaded copy and
    `artifact_url` links it."""
    found = reports_below(folder)
    if not found:
        return f"### mkdc\n\nNo report in `{folder}`: the run ended before judging.\n"
    where = _artifact(artifact, artifact_url)
    parts = []
    for path in found:
        doc = parse_yaml(decode(read_bytes(path, "report", MAX_REPORT_BYTES), "report"), "report")
        parts.append(report_markdown(doc if isinstance(doc, dict) else {}, where))
    return "\n".join(parts)


def _artifact(name: str, url: str) -> str:
    if name and url:
        return f"[{_cell(name)}]({url})"
    return f"`{_cell(name)}`" if name else ""


def report_markdown(doc: Mapping[str, Any], artifact: str = "") -> str:
    summary = doc.get("summary") or {}
    env = doc.get("environment") or {}
    verdict = str(summary.get("result", "error"))
    counts = ", ".join(f"{summary[key]} {word}" for key, word in SUMMARY_WORDS if summary.get(key))
    lines = [
        f"### mkdc: {_cell(doc.get('profile', '?'))} — {verdict} ({counts or 'no checks'})",
        "",
        f"Kueue {_cell(env.get('kueueVersion'))} · Kubernetes {_cell(env.get('kubernetesVersion'))}"
        f" · provider {_cell(env.get('provider'))}"
        + (f" · full report: {artifact}" if artifact else ""),
        "",
    ]
    if doc.get("error"):
        lines += [f"**The run could not judge the dispatcher:** {_cell(doc['error'])}", ""]
    network = str(env.get("replicaNetwork") or "")
    if network.startswith("the host's"):  # a promise a root run keeps, this one did not
        lines += [f"Each replica's own network: not in this run, {_cell(network)}.", ""]
    lines += [
        "| check | verdict | what the dispatcher did, or why not judged | report |",
        "|---|---|---|---|",
    ]
    lines += [_row(check, artifact) for check in _checks(doc.get("checks"))]
    # skipped for time: judged where the full scenarios run (a periodic job's --full)
    too_long = [
        str(c.get("id"))
        for c in _checks(doc.get("checks"))
        if c.get("result") == "skipped" and "--full" in str(c.get("message", ""))
    ]
    if too_long:
        lines += [
            "",
            f"Not judged in this run, their scenarios too long for it: {', '.join(too_long)}"
            " (the periodic job judges them: `mkdc run --full`).",
        ]
    return "\n".join(lines) + "\n"


def _checks(value: Any) -> Iterable[Mapping[str, Any]]:
    return [c for c in value or [] if isinstance(c, Mapping)]


def _row(check: Mapping[str, Any], artifact: str) -> str:
    result = str(check.get("result", "?"))
    said = check.get("message") or ""
    actions = check.get("dispatcherActions")
    if isinstance(actions, Mapping) and actions.get("summary"):
        said = f"{actions['summary']} ({said})" if said else actions["summary"]
    if result == "passed":
        said = ""
    name = f"{_cell(check.get('id'))} {_cell(check.get('name', ''))}".strip()
    return f"| {name} | {VERDICTS.get(result, result)} | {_cell(said)} | {artifact} |"


def _cell(value: Any) -> str:
    """A value as one table cell: one line, no column breaks, cut to CELL_CHARS."""
    text = " ".join(str(value if value is not None else "?").split())
    text = text.replace("|", "\\|")
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"
