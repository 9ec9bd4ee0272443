"""Checking a report as a submission gate would: schema, every core check present once,
results consistent with the summary, findings well formed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.report.model import (
    API_VERSION,
    ENVIRONMENT_FIELDS,
    ERROR,
    FAILED,
    KIND,
    PASSED,
    RESULTS,
    SCORECARD_NUMBERS,
    SCORECARD_PERCENTILES,
    SUMMARY_KEYS,
    SUMMARY_RESULTS,
    UNDECIDED,
    CheckResult,
    catalogue,
    core_ids,
    summarize,
)
from harness.userfiles import decode, parse_yaml, read_bytes

MAX_REPORT_BYTES = 256 * 1024 * 1024  # timelines of every scenario: large, not this large


def verify_report(path: str | Path) -> list[str]:
    """Problems a submission gate would reject the report for; [] means it is sound."""
    try:
        data = read_bytes(Path(path), "report", MAX_REPORT_BYTES)
    except UserError as exc:  # no such file, unreadable: "report: ..."
        return [str(exc)]
    return verify_report_bytes(data)


def verify_report_bytes(data: bytes) -> list[str]:
    """verify_report on the file's content: not UTF-8 or not YAML is a problem too."""
    try:
        doc = parse_yaml(decode(data, "report"), "report")
    except UserError as exc:
        return [str(exc)]
    return verify_report_data(doc)


def verify_report_data(doc: Any) -> list[str]:
    """verify_report on an already loaded document."""
    if not isinstance(doc, dict):
        return ["report: must be a mapping"]
    problems: list[str] = []
    add = problems.append
    if doc.get("apiVersion") != API_VERSION:
        add(f"apiVersion: must be {API_VERSION}, got {doc.get('apiVersion')!r}")
    if doc.get("kind") != KIND:
        add(f"kind: must be {KIND}, got {doc.get('kind')!r}")
    if not isinstance(doc.get("date"), str | dt.datetime | dt.date):
        add("date: required (ISO 8601 timestamp)")
    for key in ("suiteVersion", "profile", "dispatcherName"):
        if not isinstance(doc.get(key), str) or not doc.get(key):
            add(f"{key}: required string")
    for key in ("implementation", "environment", "claims", "timeouts", "summary", "scorecard"):
        if not isinstance(doc.get(key), dict):
            add(f"{key}: required mapping")
    environment = _mapping(doc.get("environment"))
    for key, kind in ENVIRONMENT_FIELDS.items():
        value = environment.get(key)
        if isinstance(value, bool) or not isinstance(value, kind):
            add(f"environment.{key}: required {_kind_name(kind)}, got {value!r}")

    cat = catalogue()
    checks = doc.get("checks")
    valid: list[CheckResult] = []
    if not isinstance(checks, list):
        add("checks: required list")
        checks = []
    seen: dict[str, int] = {}
    for i, check in enumerate(checks):
        where = f"checks[{i}]"
        if not isinstance(check, dict):
            add(f"{where}: must be a mapping")
            continue
        cid, name, result = check.get("id"), check.get("name"), check.get("result")
        if not isinstance(cid, str):
            add(f"{where}.id: required string")
            continue
        where = f"checks[{i}] ({cid})"
        if cid in seen:
            add(f"{where}: duplicate of checks[{seen[cid]}]")
        seen.setdefault(cid, i)
        if cid not in cat:
            add(f"{where}.id: unknown check id")
        elif name != cat[cid][0]:
            add(f"{where}.name: {name!r}, but {cid} is {cat[cid][0]!r}")
        if result not in RESULTS:
            add(f"{where}.result: {result!r} not one of {', '.join(RESULTS)}")
            continue
        message = check.get("message")
        if message is not None and not isinstance(message, str):
            add(f"{where}.message: must be a string")
        elif result != PASSED and not message:
            add(f"{where}.message: required when the result is {result}")
        seconds = check.get("durationSeconds")
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            add(f"{where}.durationSeconds: required non-negative number, got {seconds!r}")
        valid.append(CheckResult(cid, str(name), result))
    for cid in core_ids(cat):
        if cid not in seen:
            add(f"checks: core check {cid} missing")
    judged = [c for c in valid if c.result in (PASSED, FAILED, UNDECIDED)]
    if judged and doc.get("timeouts") == {}:
        add(f"timeouts: empty, but {len(judged)} check(s) were judged with slacks and timeouts")

    summary = _mapping(doc.get("summary"))
    expected = summarize(valid, cat)
    if summary.get("result") not in SUMMARY_RESULTS:
        add(f"summary.result: {summary.get('result')!r} not one of {', '.join(SUMMARY_RESULTS)}")
    elif summary.get("result") == ERROR or doc.get("error") is not None:
        if summary.get("result") != ERROR or not isinstance(doc.get("error"), str):
            add("error: a report says why it is an error (summary.result error and an error text)")
    elif len(valid) == len(checks) and summary.get("result") != expected["result"]:
        add(f"summary.result: {summary.get('result')!r}, but the checks say {expected['result']!r}")
    for key in SUMMARY_KEYS.values():
        value = summary.get(key)
        if key == "undecided" and value is None and not expected[key]:
            continue  # reports from before undecided existed
        if isinstance(value, bool) or not isinstance(value, int):
            add(f"summary.{key}: required integer, got {value!r}")
        elif len(valid) == len(checks) and value != expected[key]:
            add(f"summary.{key}: {value}, but the checks count {expected[key]}")

    problems += _verify_findings(doc.get("findings", []))
    scorecard = _mapping(doc.get("scorecard"))
    for key in SCORECARD_NUMBERS:
        if key not in scorecard:
            add(f"scorecard.{key}: missing")
        elif not _number_or_null(scorecard[key]):
            add(f"scorecard.{key}: must be a number or null, got {scorecard[key]!r}")
    for key in SCORECARD_PERCENTILES:
        value = scorecard.get(key)
        if not isinstance(value, dict):
            add(f"scorecard.{key}: missing (mapping with p50 and p99)")
            continue
        for pct in ("p50", "p99"):
            if pct not in value:
                add(f"scorecard.{key}.{pct}: missing")
            elif not _number_or_null(value[pct]):
                add(f"scorecard.{key}.{pct}: must be a number or null, got {value[pct]!r}")
    return problems


def _verify_findings(findings: Any) -> list[str]:
    """findings (optional): a list of {id, title, detail: strings; scenarios, checks: lists
    of strings}; every check a finding names must be in the catalogue."""
    if not isinstance(findings, list):
        return ["findings: must be a list"]
    problems, cat = [], catalogue()
    for i, finding in enumerate(findings):
        where = f"findings[{i}]"
        if not isinstance(finding, dict):
            problems.append(f"{where}: must be a mapping")
            continue
        for key in ("id", "title", "detail"):
            if not isinstance(finding.get(key), str) or not finding.get(key):
                problems.append(f"{where}.{key}: required string")
        for key in ("scenarios", "checks"):
            value = finding.get(key)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                problems.append(f"{where}.{key}: required list of strings")
            elif key == "checks" and (unknown := [v for v in value if v not in cat]):
                problems.append(f"{where}.checks: unknown check id(s) {', '.join(unknown)}")
    return problems


def _mapping(value: Any) -> dict[Any, Any]:
    """`value` if it is a mapping (as YAML loads one), else an empty one to read from."""
    return value if isinstance(value, dict) else {}


def _number_or_null(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "string", int: "integer", float: "number"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)
