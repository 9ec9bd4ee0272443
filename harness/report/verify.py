"""Checking a report as a submission gate would: its structure by the JSON Schema shipped
beside this module (report.schema.json, the contract of spec/profile-and-report.md in a
form any language can use), then what a schema cannot say: every core check present
once under its catalogue name, results consistent with the summary, findings naming
known checks. One line per problem."""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import UserError
from harness.report.model import (
    ERROR,
    FAILED,
    PASSED,
    RESULTS,
    SUMMARY_KEYS,
    SUMMARY_RESULTS,
    UNDECIDED,
    Catalogue,
    CheckResult,
    core_ids,
    summarize,
)
from harness.schema_errors import say
from harness.userfiles import decode, parse_yaml, read_bytes

MAX_REPORT_BYTES = 256 * 1024 * 1024  # timelines of every scenario: large, not this large

if TYPE_CHECKING:
    pass

SCHEMA_FILE = "report.schema.json"


@functools.cache
def schema() -> dict[str, Any]:
    """report.yaml's JSON Schema (draft 2020-12)."""
    text = resources.files("harness.report").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    return dict(json.loads(text))


def verify_report(path: str | Path, catalogue: Catalogue) -> list[str]:
    """Problems a submission gate would reject the report for, against the suite's
    `catalogue` (harness.suite.catalogue()); [] means it is sound."""
    try:
        data = read_bytes(Path(path), "report", MAX_REPORT_BYTES)
    except UserError as exc:  # no such file, unreadable: "report: ..."
        return [str(exc)]
    return verify_report_bytes(data, catalogue)


def verify_report_bytes(data: bytes, catalogue: Catalogue) -> list[str]:
    """verify_report on the file's content: not UTF-8 or not YAML is a problem too."""
    try:
        doc = parse_yaml(decode(data, "report"), "report")
    except UserError as exc:
        return [str(exc)]
    return verify_report_data(doc, catalogue)


def verify_report_data(doc: Any, catalogue: Catalogue) -> list[str]:
    """verify_report on an already loaded document."""
    if not isinstance(doc, dict):
        return ["report: must be a mapping"]
    problems = schema_problems(doc)
    problems += _verify_checks(doc, catalogue)
    problems += _verify_findings(doc.get("findings", []), catalogue)
    return list(dict.fromkeys(problems))  # one line per problem, in the order found


def schema_problems(doc: Any) -> list[str]:
    """Where the document breaks report.schema.json, a line each, named by its path."""
    from jsonschema import Draft202012Validator  # only here: a run never needs it

    validator = Draft202012Validator(schema())
    return list(
        dict.fromkeys(
            say(e, lambda path: _where(path, doc)) for e in validator.iter_errors(_json_ready(doc))
        )
    )


def _verify_checks(doc: dict[str, Any], cat: Catalogue) -> list[str]:
    """The catalogue and the summary: what the schema cannot know."""
    problems: list[str] = []
    add = problems.append
    checks: list[Any] = doc["checks"] if isinstance(doc.get("checks"), list) else []
    valid: list[CheckResult] = []
    seen: dict[str, int] = {}
    for i, check in enumerate(checks):
        cid = check.get("id") if isinstance(check, dict) else None
        if not isinstance(check, dict) or not isinstance(cid, str):
            continue  # the schema said what is wrong with it
        where = f"checks[{i}] ({cid})"
        if cid in seen:
            add(f"{where}: duplicate of checks[{seen[cid]}]")
        seen.setdefault(cid, i)
        name, result, message = check.get("name"), check.get("result"), check.get("message")
        if cid not in cat:
            add(f"{where}.id: unknown check id")
        elif name != cat[cid][0]:
            add(f"{where}.name: {name!r}, but {cid} is {cat[cid][0]!r}")
        if result not in RESULTS:
            continue
        if result != PASSED and (message is None or message == ""):
            add(f"{where}.message: required when the result is {result}")
        valid.append(CheckResult(cid, str(name), result))
    for cid in core_ids(cat):
        if cid not in seen:
            add(f"checks: core check {cid} missing")
    judged = [c for c in valid if c.result in (PASSED, FAILED, UNDECIDED)]
    if judged and doc.get("timeouts") == {}:
        add(f"timeouts: empty, but {len(judged)} check(s) were judged with slacks and timeouts")

    summary: dict[str, Any] = doc["summary"] if isinstance(doc.get("summary"), dict) else {}
    expected = summarize(valid, cat)
    complete = len(valid) == len(checks)  # else the counts cannot be compared
    result = summary.get("result")
    if result == ERROR or doc.get("error") is not None:
        if result != ERROR or not isinstance(doc.get("error"), str):
            add("error: a report says why it is an error (summary.result error and an error text)")
    elif complete and result in SUMMARY_RESULTS and result != expected["result"]:
        add(f"summary.result: {result!r}, but the checks say {expected['result']!r}")
    for key in SUMMARY_KEYS.values():
        value = summary.get(key)
        if key == "undecided" and value is None and expected[key]:
            add(f"summary.undecided: missing, but the checks count {expected[key]}")
        elif complete and _integer(value) and value != expected[key]:
            add(f"summary.{key}: {value}, but the checks count {expected[key]}")
    return problems


def _verify_findings(findings: Any, cat: Catalogue) -> list[str]:
    """Every check a finding names must be in the catalogue (its shape is the schema's)."""
    problems: list[str] = []
    for i, finding in enumerate(findings if isinstance(findings, list) else []):
        named = finding.get("checks") if isinstance(finding, dict) else None
        if isinstance(named, list):
            unknown = [str(v) for v in named if isinstance(v, str) and v not in cat]
            if unknown:
                problems.append(f"findings[{i}].checks: unknown check id(s) {', '.join(unknown)}")
    return problems


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_ready(value: Any) -> Any:
    """The document as JSON would hold it: YAML's unquoted timestamps as ISO text."""
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    return value


def _where(path: Iterable[str | int], doc: Any) -> str:
    """A dotted path, a check named by its id: checks[3] (CORE-04).durationSeconds."""
    out, node = "", doc
    for part in path:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and part < len(node) else None
            out += f"[{part}]"
            if re.fullmatch(r"checks\[\d+\]", out) and isinstance(node, dict):
                out += f" ({node['id']})" if isinstance(node.get("id"), str) else ""
        else:
            node = node.get(part) if isinstance(node, dict) else None
            out += f".{part}" if out else str(part)
    return out or "report"
