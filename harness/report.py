"""The conformance report: report.yaml (the contract), junit.xml (for CI), report.html.

The YAML structure is fixed by spec/profile-and-report.md; readers (submission gates,
other tools) rely on it, so `verify_report` checks a file the way a gate would.
Everything written passes through `redact`, because reports get published and a
message or timeline detail could carry a kubeconfig fragment by accident.
"""

from __future__ import annotations

import datetime as dt
import enum
import html
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from harness import __version__
from harness.session import Result
from harness.suite import load as load_suite
from harness.timeline import MANAGER, Event, Kind, Timeline

if TYPE_CHECKING:
    from harness.profile import Profile

API_VERSION = "mkdc/v1alpha1"
KIND = "ConformanceReport"

PASSED, FAILED, SKIPPED, NOT_SUPPORTED = (
    Result.PASSED,
    Result.FAILED,
    Result.SKIPPED,
    Result.NOT_SUPPORTED,
)
# the scenario broke before this check's decision point: neither passed nor failed
UNDECIDED = Result.UNDECIDED
RESULTS = tuple(Result)
ERROR = "error"  # the run could not judge the dispatcher at all (e.g. it died at start)
SUMMARY_RESULTS = ("passed", "partial", "failed", ERROR)
_SUMMARY_KEYS: dict[str, str] = {  # keyed by Result, looked up by a check's result text
    PASSED: "passed",
    FAILED: "failed",
    UNDECIDED: "undecided",
    SKIPPED: "skipped",
    NOT_SUPPORTED: "notSupported",
}

ENVIRONMENT_FIELDS: dict[str, type | tuple[type, ...]] = {
    "provider": str,
    "kubernetesVersion": str,
    "kueueVersion": str,
    "workers": int,
    "nominationWriteMode": str,
}
SCORECARD_NUMBERS = (
    "peakConcurrentCopies",
    "peakConcurrentProvisioningRequests",
    "peakConcurrentReservations",
    "workersWithPreemptions",
    "nominationWritesPerPlacement",
)
SCORECARD_PERCENTILES = ("timeToFirstNominationSeconds", "timeToPlacementSeconds")
SCORECARD_ORDER = (
    "peakConcurrentCopies",
    "peakConcurrentProvisioningRequests",
    "peakConcurrentReservations",
    "workersWithPreemptions",
    "timeToFirstNominationSeconds",
    "timeToPlacementSeconds",
    "nominationWritesPerPlacement",
)


def catalogue() -> dict[str, tuple[str, str | None]]:
    """Check id -> (name, feature or None for core), from the installed suite."""
    return {cid: (c.name, c.feature) for cid, c in load_suite().catalogue.items()}


def core_ids(cat: Mapping[str, tuple[str, str | None]] | None = None) -> list[str]:
    cat = catalogue() if cat is None else cat
    return [cid for cid, (_, feature) in cat.items() if feature is None]


# --- redaction ---------------------------------------------------------------------------

REDACTED = "[REDACTED]"
_PEM_RE = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|\Z)", re.DOTALL)
_SECRET_KEYS = (
    "client-key-data",
    "client-certificate-data",
    "token",
    "password",
    "client-key",
    "private-key",
)
_SECRET_KV_RE = re.compile(
    r"""(["']?)(?<![A-Za-z0-9])(client-key-data|client-certificate-data|token|password)\1"""
    r"""(\s*[:=]\s*)(?!\[REDACTED\])"""  # idempotent: redacting twice changes nothing
    r"""("[^"]*"|'[^']*'|[^\s,;}\]]+)""",
    re.IGNORECASE,
)
_BEARER_RE = re.compile(r"\b(Bearer)\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE)


def redact(text: str) -> str:
    """Blank out anything that looks like key material: PEM blocks, keys, tokens."""
    text = _PEM_RE.sub("[REDACTED PEM block]", text)
    text = _SECRET_KV_RE.sub(lambda m: f"{m[1]}{m[2]}{m[1]}{m[3]}{REDACTED}", text)
    return _BEARER_RE.sub(rf"\1 {REDACTED}", text)


def _plain(value: Any) -> Any:
    """YAML-safe plain data with every string redacted (and secret-named keys blanked)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.datetime):
        return _iso(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, val in value.items():
            name = str(key)
            secret = name.lower() in _SECRET_KEYS and val not in (None, "")
            out[redact(name)] = REDACTED if secret else _plain(val)
        return out
    if isinstance(value, bytes | bytearray):
        return redact(bytes(value).decode("utf-8", errors="replace"))
    if isinstance(value, set | frozenset):
        return [_plain(v) for v in sorted(value, key=str)]
    if isinstance(value, Iterable):
        return [_plain(v) for v in value]
    return redact(str(value))


def _iso(when: dt.datetime) -> str:
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the model ---------------------------------------------------------------------------


@dataclass
class CheckResult:
    """The outcome of one check. `timeline` feeds the HTML picture; it is not in the YAML."""

    id: str
    name: str
    result: str
    message: str = ""
    duration_seconds: float = 0.0
    timeline: Timeline | None = None
    measured: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.result not in RESULTS:
            raise ValueError(f"check {self.id}: result {self.result!r} not in {RESULTS}")


def summarize(
    checks: Iterable[CheckResult], cat: Mapping[str, tuple[str, str | None]]
) -> dict[str, Any]:
    """summary: failed if any failed; partial if a check is undecided or a core check did
    not pass (nothing was shown wrong, but not everything was decided); else passed."""
    checks = list(checks)
    counts = {key: 0 for key in _SUMMARY_KEYS.values()}
    for check in checks:
        counts[_SUMMARY_KEYS[check.result]] += 1
    core = set(core_ids(cat))
    if counts["failed"]:
        result = "failed"
    elif counts["undecided"] or any(c.id in core and c.result != PASSED for c in checks):
        result = "partial"
    else:
        result = "passed"
    return {"result": result, **counts}


@dataclass(frozen=True)
class Finding:
    """A machine-detected explanation across scenarios, in words a vendor can act on.

    `id` is stable per kind of problem (e.g. "nominated-outside-config"); `scenarios` say
    where it was seen, `checks` which checks failed or are undecided there (the results it
    may explain)."""

    id: str
    title: str
    detail: str
    scenarios: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "detail": self.detail,
            "scenarios": list(self.scenarios),
            "checks": list(self.checks),
        }


@dataclass
class Report:
    """Everything one run produced, with writers for the three report files.

    Core checks the run never produced are reported as skipped ("not run"), so a
    filtered run still yields a complete report whose summary says `partial`.
    """

    profile: str
    dispatcher_name: str
    checks: list[CheckResult] = field(default_factory=list)
    implementation: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    claims: dict[str, Any] = field(default_factory=dict)
    timeouts: dict[str, Any] = field(default_factory=dict)
    scorecard: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    date: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    suite_version: str = __version__
    privileges: list[str] = field(default_factory=list)  # granted beyond the baseline role
    error: str = ""  # why the run could not judge the dispatcher; the summary says "error"

    @classmethod
    def for_profile(
        cls,
        profile: Profile,
        checks: Iterable[CheckResult] = (),
        *,
        environment: Mapping[str, Any] | None = None,
        timeouts: Mapping[str, Any] | None = None,
        scorecard: Mapping[str, Any] | None = None,
        findings: Iterable[Finding] = (),
        date: dt.datetime | None = None,
        privileges: Iterable[str] = (),
        error: str = "",
    ) -> Report:
        """A report whose identity, implementation and claims come from the profile."""
        return cls(
            profile=profile.name,
            dispatcher_name=profile.dispatcher_name,
            checks=list(checks),
            implementation=dict(profile.implementation),
            environment=dict(environment or {}),
            claims=profile.claims.to_dict(),
            timeouts=dict(timeouts or {}),
            scorecard=dict(scorecard or {}),
            findings=list(findings),
            date=date or dt.datetime.now(dt.UTC),
            privileges=list(privileges),
            error=error,
        )

    def results(self) -> list[CheckResult]:
        """Checks in catalogue order, missing core checks added as skipped."""
        cat = catalogue()
        have = {c.id for c in self.checks}
        out = list(self.checks)
        for cid in core_ids(cat):
            if cid not in have:
                out.append(CheckResult(cid, cat[cid][0], SKIPPED, "not run in this session"))
        order = {cid: i for i, cid in enumerate(cat)}
        return sorted(out, key=lambda c: (order.get(c.id, len(order)), c.id))

    def summary(self) -> dict[str, Any]:
        summary = summarize(self.results(), catalogue())
        return {**summary, "result": ERROR} if self.error else summary

    def to_dict(self) -> dict[str, Any]:
        """The report.yaml document (redacted, plain data)."""
        cat = catalogue()
        checks = []
        for check in self.results():
            entry: dict[str, Any] = {
                "id": check.id,
                "name": check.name,
                "result": check.result,
                "message": check.message or _default_message(check, cat),
                "durationSeconds": round(float(check.duration_seconds), 3),
            }
            feature = _feature(check.id, cat)
            entry["feature"] = feature
            if check.measured:
                entry["measured"] = check.measured
            checks.append(entry)
        environment = {key: self.environment.get(key) for key in ENVIRONMENT_FIELDS}
        environment.update(self.environment)
        doc = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "date": _iso(self.date),
            "suiteVersion": self.suite_version,
            "profile": self.profile,
            "dispatcherName": self.dispatcher_name,
            "implementation": self.implementation,
            "environment": environment,
            "claims": self.claims,
            "timeouts": self.timeouts,
            "privileges": self.privileges,
            "summary": self.summary(),
            "checks": checks,
            "findings": [f.to_dict() for f in self.findings],
            "scorecard": _complete_scorecard(self.scorecard),
        }
        if self.error:
            doc["error"] = self.error
        return _plain(doc)

    def write_yaml(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump(
            self.to_dict(), sort_keys=False, allow_unicode=True, default_flow_style=False
        )
        path.write_text(text, encoding="utf-8")
        return path

    def write_junit(self, path: str | Path) -> Path:
        """JUnit XML: one testcase per check; not-supported counts as skipped, undecided as
        an error (the run could not judge it); findings go to the suite's system-out."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = self.to_dict()
        summary = doc["summary"]
        total = len(doc["checks"])
        skipped = summary["skipped"] + summary["notSupported"]
        seconds = sum(c["durationSeconds"] for c in doc["checks"])
        attrs = {
            "tests": str(total),
            "failures": str(summary["failed"]),
            "errors": str(summary["undecided"]),
            "skipped": str(skipped),
            "time": f"{seconds:.3f}",
        }
        suites = ET.Element("testsuites", {"name": "mkdc", **attrs})
        suite = ET.SubElement(
            suites,
            "testsuite",
            {"name": f"mkdc.{_xml(doc['profile'])}", **attrs, "timestamp": doc["date"]},
        )
        props = ET.SubElement(suite, "properties")
        for key in ("profile", "dispatcherName", "suiteVersion"):
            ET.SubElement(props, "property", {"name": key, "value": _xml(doc[key])})
        for key, value in doc["environment"].items():
            ET.SubElement(props, "property", {"name": f"environment.{key}", "value": _xml(value)})
        ET.SubElement(props, "property", {"name": "summary", "value": summary["result"]})
        for check in doc["checks"]:
            case = ET.SubElement(
                suite,
                "testcase",
                {
                    "classname": f"mkdc.{check['feature'] or 'core'}",
                    "name": _xml(f"{check['id']} {check['name']}"),
                    "time": f"{check['durationSeconds']:.3f}",
                },
            )
            message = _xml(check["message"] or "")
            if check["result"] == FAILED:
                failure = ET.SubElement(case, "failure", {"message": _first_line(message)})
                failure.text = message
            elif check["result"] == UNDECIDED:
                error = ET.SubElement(case, "error", {"message": _first_line(message)})
                error.text = message
            elif check["result"] in (SKIPPED, NOT_SUPPORTED):
                ET.SubElement(case, "skipped", {"message": f"{check['result']}: {message}"})
        if doc["findings"]:
            out = ET.SubElement(suite, "system-out")
            out.text = "\n\n".join(_xml(_finding_text(f)) for f in doc["findings"])
        ET.indent(suites)
        ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)
        return path

    def write_html(self, path: str | Path) -> Path:
        """One self-contained page: no scripts, no network, inline CSS and SVG."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_render_html(self), encoding="utf-8")
        return path

    def write_all(self, report_dir: str | Path) -> dict[str, Path]:
        """report.yaml, junit.xml and report.html in `report_dir`."""
        report_dir = Path(report_dir)
        return {
            "yaml": self.write_yaml(report_dir / "report.yaml"),
            "junit": self.write_junit(report_dir / "junit.xml"),
            "html": self.write_html(report_dir / "report.html"),
        }


def _finding_text(finding: Mapping[str, Any]) -> str:
    where = ", ".join(finding["scenarios"]) or "the run"
    checks = f" (not passed there: {', '.join(finding['checks'])})" if finding["checks"] else ""
    return f"{finding['title']}{checks}\n{finding['detail']}\nseen in: {where}"


def _feature(check_id: str, cat: Mapping[str, tuple[str, str | None]]) -> str | None:
    if check_id in cat:
        return cat[check_id][1]
    return None if check_id.startswith("CORE-") else "extended"


def _default_message(check: CheckResult, cat: Mapping[str, tuple[str, str | None]]) -> str:
    if check.result == NOT_SUPPORTED:
        feature = _feature(check.id, cat)
        return f"the profile does not claim feature {feature}" if feature else "not supported"
    return ""


def _complete_scorecard(scorecard: Mapping[str, Any]) -> dict[str, Any]:
    """All contract keys present (null = not measured), extra keys kept after them."""
    out: dict[str, Any] = {}
    for key in SCORECARD_ORDER:
        value = scorecard.get(key)
        if key in SCORECARD_PERCENTILES:
            value = dict(value or {})
            value = {"p50": value.pop("p50", None), "p99": value.pop("p99", None), **value}
        out[key] = value
    for key, value in scorecard.items():
        out.setdefault(key, value)
    return out


_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _xml(value: Any) -> str:
    """A string XML 1.0 can hold (control characters dropped)."""
    return _XML_BAD.sub("", redact("" if value is None else str(value)))


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


# --- verification --------------------------------------------------------------------------


def verify_report(path: str | Path) -> list[str]:
    """Problems a submission gate would reject the report for; [] means it is sound."""
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        return [f"{path}: cannot read: {exc.strerror or exc}"]
    except yaml.YAMLError as exc:
        return [f"{path}: not valid YAML: {str(exc).splitlines()[0]}"]
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
    for key in _SUMMARY_KEYS.values():
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


# --- HTML ------------------------------------------------------------------------------------


def _h(value: Any) -> str:
    """Escaped (and redacted) text for HTML and SVG."""
    return html.escape(redact("" if value is None else str(value)), quote=True)


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
h1{font-size:1.5em;margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f4f4f4}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:.9em}
.passed{background:#d4f4dd;color:#0a6b2a}.failed{background:#fde0e0;color:#a01010}
.skipped{background:#eeeeee;color:#555}.not-supported{background:#f2f2f2;color:#888}
.partial{background:#fff1cc;color:#8a5a00}.undecided{background:#e9e0f7;color:#5a2d91}
.error{background:#f3d9f7;color:#6a1080}
.finding{border-left:4px solid #a01010;padding:2px 12px;margin:10px 0}
.finding h3{margin:4px 0}
.check{border:1px solid #e2e2e2;border-radius:6px;padding:8px 16px;margin:16px 0}
.check h3{margin:6px 0}.message{white-space:pre-wrap;background:#f8f8f8;padding:6px;
border-radius:4px;font-family:ui-monospace,monospace;font-size:.9em}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.85em;margin:6px 0}
.legend .item{display:inline-flex;align-items:center;gap:4px}
svg.timeline{display:block;max-width:100%;height:auto;margin:6px 0 14px}
svg text.row{font-size:12px;fill:#333}svg text.axis{font-size:11px;fill:#666}
svg text.action{font-size:10px;fill:#555}
.muted{color:#777}
.swatch{display:inline-block;width:18px;height:9px}
.swatch.inactive{background:
repeating-linear-gradient(45deg,#bdbdbd 0 2px,#eeeeee 2px 5px)!important}
"""


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
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    if isinstance(value, list):
        return ", ".join(_fmt(v) for v in value) or "[]"
    return str(value)


def _render_html(report: Report) -> str:
    doc = report.to_dict()
    summary = doc["summary"]
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>mkdc conformance report: {_h(doc['profile'])}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Conformance report: {_h(doc['profile'])}</h1>",
        f"<p>Dispatcher <code>{_h(doc['dispatcherName'])}</code> · {_h(doc['date'])} · "
        f"suite {_h(doc['suiteVersion'])}</p>",
        "<h2>Summary</h2>",
        f'<p><span class="badge {_h(summary["result"])}">{_h(summary["result"])}</span> '
        f"{summary['passed']} passed, {summary['failed']} failed, {summary['undecided']} "
        f"undecided, {summary['skipped']} skipped, {summary['notSupported']} not supported</p>",
        *([f'<div class="message">{_h(doc["error"])}</div>'] if doc.get("error") else []),
        _findings_html(doc["findings"]),
        "<h2>Environment</h2>",
        _kv_table(doc["environment"]),
        "<h3>Privileges beyond the baseline dispatcher role</h3>",
        "<ul>" + "".join(f"<li>{_h(p)}</li>" for p in doc["privileges"]) + "</ul>"
        if doc["privileges"]
        else '<p class="muted">None: the baseline role only.</p>',
        "<h3>Implementation</h3>",
        _kv_table(doc["implementation"]),
        "<h3>Claims</h3>",
        _kv_table(doc["claims"]),
        "<h3>Timeouts</h3>",
        _kv_table(doc["timeouts"]),
        "<h2>Scorecard</h2>",
        _kv_table(doc["scorecard"]),
        "<h2>Checks</h2>",
        "<table><tr><th>ID</th><th>Name</th><th>Feature</th><th>Result</th>"
        "<th>Seconds</th><th>Message</th></tr>",
    ]
    for c in doc["checks"]:
        parts.append(
            f'<tr><td><a href="#{_h(c["id"])}">{_h(c["id"])}</a></td><td>{_h(c["name"])}</td>'
            f"<td>{_h(c['feature'] or 'core')}</td>"
            f'<td><span class="badge {_h(c["result"])}">{_h(c["result"])}</span></td>'
            f"<td>{c['durationSeconds']:.1f}</td>"
            f"<td>{_h(_short(_first_line(c['message'] or ''), 120))}</td></tr>"
        )
    parts.append("</table>")
    for uid, (entry, check) in enumerate(zip(doc["checks"], report.results(), strict=True)):
        parts.append(_check_section(entry, check, f"c{uid}"))
    parts.append("</body></html>")
    return "\n".join(parts)


def _findings_html(findings: list[Mapping[str, Any]]) -> str:
    """What went wrong across scenarios, first thing after the summary."""
    if not findings:
        return ""
    parts = ["<h2>Findings</h2>"]
    for f in findings:
        checks = ", ".join(f'<a href="#{_h(c)}">{_h(c)}</a>' for c in f["checks"])
        parts.append(
            f'<div class="finding" id="finding-{_h(f["id"])}"><h3>{_h(f["title"])}</h3>'
            f'<div class="message">{_h(f["detail"])}</div>'
            f'<p class="muted">checks failed or undecided there: {checks or "—"} · seen in: '
            f"{_h(', '.join(f['scenarios']) or 'the run')}</p></div>"
        )
    return "\n".join(parts)


def _check_section(entry: Mapping[str, Any], check: CheckResult, uid: str) -> str:
    parts = [
        f'<section class="check" id="{_h(entry["id"])}">',
        f"<h3>{_h(entry['id'])} {_h(entry['name'])} "
        f'<span class="badge {_h(entry["result"])}">{_h(entry["result"])}</span></h3>',
        f'<p class="muted">{_h(entry["feature"] or "core")} · {entry["durationSeconds"]:.1f} s</p>',
    ]
    if entry.get("message"):
        parts.append(f'<div class="message">{_h(entry["message"])}</div>')
    if entry.get("measured"):
        parts.append("<h4>Measured</h4>" + _kv_table(entry["measured"]))
    timeline = check.timeline
    if timeline is not None and len(timeline):
        workloads = timeline.workloads()
        parts.append(_legend())
        if not workloads:
            parts.append(_svg_timeline(timeline, "", f"{uid}w"))
        for i, workload in enumerate(workloads[:MAX_WORKLOAD_PICTURES]):
            parts.append(f"<h4>Workload {_h(workload)}</h4>")
            parts.append(_svg_timeline(timeline, workload, f"{uid}w{i}"))
        if len(workloads) > MAX_WORKLOAD_PICTURES:
            parts.append(
                f'<p class="muted">{len(workloads) - MAX_WORKLOAD_PICTURES} more workloads '
                "not drawn.</p>"
            )
    else:
        parts.append('<p class="muted">No timeline recorded.</p>')
    parts.append("</section>")
    return "\n".join(parts)
