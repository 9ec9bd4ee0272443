"""The report's model and writers: report.yaml (the contract fixed by
spec/profile-and-report.md), junit.xml (for CI) and report.html."""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from harness import __version__, userfiles
from harness.check_terms import Bound
from harness.recording.timeline import Timeline
from harness.report.redaction import first_line, iso, plain, report_text
from harness.results import DispatcherActions, Result

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
SUMMARY_KEYS: dict[str, str] = {  # keyed by Result, looked up by a check's result text
    PASSED: "passed",
    FAILED: "failed",
    UNDECIDED: "undecided",
    SKIPPED: "skipped",
    NOT_SUPPORTED: "notSupported",
}

# the summary's counts as a verdict says them, the worst first
SUMMARY_WORDS = (
    ("failed", "failed"),
    ("undecided", "undecided"),
    ("passed", "passed"),
    ("skipped", "skipped"),
    ("notSupported", "not supported"),
)

# the fields the contract names, always written (null when unknown); their types are in
# report.schema.json
ENVIRONMENT_FIELDS = (
    "provider",
    "kubernetesVersion",
    "kueueVersion",
    "workers",
    "nominationWriteMode",
)
IMPLEMENTATION_FIELDS = ("organization", "project", "version", "url")
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


class CatalogueEntry(NamedTuple):
    """What a report knows of a check beyond its result."""

    name: str
    feature: str | None  # None: core
    bounds: tuple[Bound, ...] = ()  # whose each of its bounds is, and why


# check id -> its entry, in catalogue order: what a report knows of the suite, handed to
# it (harness.suite.catalogue()) so the report never loads a suite
Catalogue = Mapping[str, CatalogueEntry]


def not_decided(checks: Iterable[CheckResult], named: Iterable[str]) -> list[CheckResult]:
    """Of the checks a run was asked for by name (`--checks`), those it did not decide
    (skipped, undecided): a gate that names a check does not pass without its verdict."""
    wanted = set(named)
    return [c for c in checks if c.id in wanted and c.result in (SKIPPED, UNDECIDED)]


def core_ids(cat: Catalogue) -> list[str]:
    return [cid for cid, entry in cat.items() if entry.feature is None]


@dataclass
class CheckResult:
    """One check's result in the run: its worst over the scenarios that decided it, as
    every writer reads it (report.yaml's entry, junit.xml's testcase, report.html's
    section). `timeline` feeds the HTML picture; it is not in the YAML."""

    id: str
    name: str
    result: str
    message: str = ""
    duration_seconds: float = 0.0
    timeline: Timeline | None = None
    measured: dict[str, Any] = field(default_factory=dict)
    # what the dispatcher did in the scenario that decided it (a failed check)
    dispatcher_actions: DispatcherActions | None = None
    # the feature it belongs to (None: core); `Report.results()` says it from the catalogue
    feature: str | None = None

    def __post_init__(self) -> None:
        if self.result not in RESULTS:
            raise ValueError(f"check {self.id}: result {self.result!r} not in {RESULTS}")

    def to_dict(self) -> dict[str, Any]:
        """Its report.yaml entry (not yet redacted)."""
        entry: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "result": self.result,
            "message": self.message,
            "durationSeconds": round(float(self.duration_seconds), 3),
            "feature": self.feature,
        }
        if self.measured:
            entry["measured"] = self.measured
        if self.dispatcher_actions is not None:
            entry["dispatcherActions"] = self.dispatcher_actions.to_json()
        return entry


def summarize(checks: Iterable[CheckResult], cat: Catalogue) -> dict[str, Any]:
    """summary: failed if any failed; partial if a check is undecided or a core check did
    not pass (nothing was shown wrong, but not everything was decided); else passed."""
    checks = list(checks)
    counts = {key: 0 for key in SUMMARY_KEYS.values()}
    for check in checks:
        counts[SUMMARY_KEYS[check.result]] += 1
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
    # replicas that exited by themselves while the scenarios ran (harness.orchestrate.exits)
    dispatcher_exits: list[dict[str, Any]] = field(default_factory=list)
    catalogue: Catalogue = field(default_factory=dict, repr=False)  # empty: only `checks`

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
        catalogue: Catalogue,
        dispatcher_exits: Iterable[dict[str, Any]] = (),
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
            dispatcher_exits=list(dispatcher_exits),
            catalogue=catalogue,
        )

    def results(self) -> list[CheckResult]:
        """Checks in catalogue order, as the report says them: missing core checks added
        as skipped, each with its feature, and a message where it had none to say why."""
        cat = self.catalogue
        have = {c.id for c in self.checks}
        out = list(self.checks)
        for cid in core_ids(cat):
            if cid not in have:
                out.append(CheckResult(cid, cat[cid][0], SKIPPED, "not run in this session"))
        order = {cid: i for i, cid in enumerate(cat)}
        return [
            replace(
                c,
                feature=_feature(c.id, cat),
                message=c.message or _default_message(c.id, c.result, cat),
            )
            for c in sorted(out, key=lambda c: (order.get(c.id, len(order)), c.id))
        ]

    def summary(self) -> dict[str, Any]:
        summary = summarize(self.results(), self.catalogue)
        return {**summary, "result": ERROR} if self.error else summary

    def to_dict(self) -> dict[str, Any]:
        """The report.yaml document (redacted, plain data)."""
        checks = [check.to_dict() for check in self.results()]
        environment = {key: self.environment.get(key) for key in ENVIRONMENT_FIELDS}
        environment.update(self.environment)
        implementation = {key: _text(self.implementation.get(key)) for key in IMPLEMENTATION_FIELDS}
        implementation.update(
            (k, v) for k, v in self.implementation.items() if k not in IMPLEMENTATION_FIELDS
        )
        doc = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "date": iso(self.date),
            "suiteVersion": self.suite_version,
            "profile": self.profile,
            "dispatcherName": self.dispatcher_name,
            "implementation": implementation,
            "environment": environment,
            "claims": self.claims,
            "timeouts": self.timeouts,
            "privileges": self.privileges,
            "summary": self.summary(),
            "checks": checks,
            "findings": [f.to_dict() for f in self.findings],
            "dispatcherExits": list(self.dispatcher_exits),
            "scorecard": _complete_scorecard(self.scorecard),
        }
        if self.error:
            doc["error"] = self.error
        return plain(doc)

    def write_yaml(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = userfiles.dump_yaml(
            self.to_dict(), sort_keys=False, allow_unicode=True, default_flow_style=False
        )
        path.write_text(text, encoding="utf-8")
        return path

    def write_junit(self, path: str | Path) -> Path:
        """JUnit XML: one testcase per check; not-supported counts as skipped, undecided as
        an error (the run could not judge it); findings go to the suite's system-out, the
        reason a run could not judge the dispatcher at all to its system-err."""
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
            if check.get("dispatcherActions"):
                did = "\n".join(check["dispatcherActions"]["lines"])
                message += "\n\nwhat the dispatcher did:\n" + _xml(did)
            if check["result"] == FAILED:
                failure = ET.SubElement(case, "failure", {"message": first_line(message)})
                failure.text = message
            elif check["result"] == UNDECIDED:
                error = ET.SubElement(case, "error", {"message": first_line(message)})
                error.text = message
            elif check["result"] in (SKIPPED, NOT_SUPPORTED):
                ET.SubElement(case, "skipped", {"message": f"{check['result']}: {message}"})
        if doc["findings"]:
            out = ET.SubElement(suite, "system-out")
            out.text = "\n\n".join(_xml(_finding_text(f)) for f in doc["findings"])
        if doc.get("error"):  # why nothing was judged: CI shows it beside the skipped checks
            ET.SubElement(suite, "system-err").text = _xml(doc["error"])
        ET.indent(suites)
        ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)
        return path


def _finding_text(finding: Mapping[str, Any]) -> str:
    where = ", ".join(finding["scenarios"]) or "the run"
    checks = f" (not passed there: {', '.join(finding['checks'])})" if finding["checks"] else ""
    return f"{finding['title']}{checks}\n{finding['detail']}\nseen in: {where}"


def _feature(check_id: str, cat: Catalogue) -> str | None:
    if check_id in cat:
        return cat[check_id][1]
    return None if check_id.startswith("CORE-") else "extended"


def _default_message(check_id: str, result: str, cat: Catalogue) -> str:
    if result == NOT_SUPPORTED:
        feature = _feature(check_id, cat)
        return f"the profile does not claim feature {feature}" if feature else "not supported"
    return ""


def _text(value: Any) -> Any:
    """An implementation field as text (a profile's unquoted `version: 1.2` is a number
    in YAML); null stays null: the profile did not say."""
    return str(value) if isinstance(value, int | float) else value


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


def _xml(value: Any) -> str:
    """A string XML 1.0 can hold, redacted; lists and mappings as JSON, not as Python."""
    if isinstance(value, list | dict):
        value = json.dumps(value, ensure_ascii=False)
    return report_text("" if value is None else str(value))
