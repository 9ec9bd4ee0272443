"""Report writers and the submission-gate verifier, on hand-made results."""

from __future__ import annotations

import datetime as dt
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import userfiles
from harness.profile import load_profile
from harness.recording.timeline import MANAGER, Event, Kind, Timeline
from harness.report import (
    CheckResult,
    Finding,
    Report,
    core_ids,
    redact,
    verify_report,
    write_all,
    write_html,
)
from harness.results import Result
from harness.suite import catalogue
from tests.reports import WL, timeline

CORE = core_ids(catalogue())  # the core checks' IDs, in catalogue order

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretsecret\n-----END RSA PRIVATE KEY-----"

ENVIRONMENT = {
    "provider": "local",
    "kubernetesVersion": "v1.36.0",
    "kueueVersion": "v0.19.2",
    "workers": 4,
    "nominationWriteMode": "admission-policy",
}
SCORECARD = {
    "peakConcurrentCopies": 2,
    "peakConcurrentProvisioningRequests": 1,
    "peakConcurrentReservations": 1,
    "workersWithPreemptions": 1,
    "timeToFirstNominationSeconds": {"p50": 0.4, "p99": 1.2},
    "timeToPlacementSeconds": {"p50": 11.0, "p99": 12.5},
    "nominationWritesPerPlacement": 2.0,
}


def all_core_passed() -> list[CheckResult]:
    cat = catalogue()
    return [CheckResult(cid, cat[cid][0], "passed", duration_seconds=1.0) for cid in CORE]


def make_report(checks: list[CheckResult] | None = None, **kw: Any) -> Report:
    cat = catalogue()
    if checks is None:
        checks = all_core_passed()
        checks[0].timeline = timeline()
        checks.append(
            CheckResult(
                "EXT-01",
                cat["EXT-01"][0],
                "failed",
                "4 copies at t=2.0s, claim allows 2",
                3.5,
                timeline(),
                {"peakCopies": 4},
            )
        )
        checks.append(CheckResult("EXT-12", cat["EXT-12"][0], "not-supported"))
    fields: dict[str, Any] = {
        "implementation": {"organization": "Example"},
        "environment": dict(ENVIRONMENT),
        "claims": {"stepSize": 2},
        "timeouts": {"slackSeconds": 5},
        "scorecard": dict(SCORECARD),
        "date": dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC),
    }
    return Report("vendor", "example.com/vendor", checks, **{**fields, **kw}, catalogue=catalogue())


def test_yaml_has_the_contract_structure(tmp_path: Path) -> None:
    path = make_report().write_yaml(tmp_path / "report.yaml")
    doc = yaml.safe_load(path.read_text())
    assert list(doc) == [
        "apiVersion",
        "kind",
        "date",
        "suiteVersion",
        "profile",
        "dispatcherName",
        "implementation",
        "environment",
        "claims",
        "timeouts",
        "privileges",
        "summary",
        "checks",
        "findings",
        "dispatcherExits",
        "scorecard",
    ]
    assert doc["dispatcherExits"] == []  # every replica lived through the run
    assert doc["apiVersion"] == "mkdc/v1alpha1" and doc["kind"] == "ConformanceReport"
    assert doc["date"] == "2026-11-30T12:00:00Z"
    assert doc["environment"] == ENVIRONMENT
    assert doc["summary"] == {
        "result": "failed",
        "passed": len(CORE),
        "failed": 1,
        "undecided": 0,
        "skipped": 0,
        "notSupported": 1,
    }
    ids = [c["id"] for c in doc["checks"]]
    assert ids[: len(CORE)] == CORE and ids[-2:] == [
        "EXT-01",
        "EXT-12",
    ]
    ext01 = doc["checks"][-2]
    assert ext01["result"] == "failed" and ext01["durationSeconds"] == 3.5
    assert ext01["measured"] == {"peakCopies": 4}
    assert {"id", "name", "result", "message", "durationSeconds"} <= set(ext01)
    assert doc["checks"][-1]["message"]  # not-supported gets a reason
    assert doc["scorecard"] == SCORECARD
    assert verify_report(path, catalogue()) == []


def test_profile_fills_identity_and_claims(tmp_path: Path) -> None:
    report = Report.for_profile(
        load_profile("incremental"),
        all_core_passed(),
        catalogue=catalogue(),
        environment=ENVIRONMENT,
        timeouts={"placement_slack": 60.0, "roundTimeout": 300.0},
        scorecard=SCORECARD,
    )
    doc = yaml.safe_load(report.write_yaml(tmp_path / "r.yaml").read_text())
    assert doc["profile"] == "incremental"
    assert doc["claims"]["stepSize"] == 3 and doc["claims"]["roundTimeout"] == 300.0
    assert doc["summary"]["result"] == "passed"
    assert verify_report(tmp_path / "r.yaml", catalogue()) == []


def test_missing_core_checks_are_reported_skipped_and_partial(tmp_path: Path) -> None:
    checks = all_core_passed()[1:]
    doc = make_report(checks).to_dict()
    first = doc["checks"][0]
    assert first["id"] == CORE[0] and first["result"] == "skipped" and first["message"]
    assert doc["summary"]["result"] == "partial"
    path = make_report(checks).write_yaml(tmp_path / "r.yaml")
    assert verify_report(path, catalogue()) == []


def test_scorecard_keys_always_present() -> None:
    doc = Report("p", "d", all_core_passed(), catalogue=catalogue()).to_dict()
    assert doc["scorecard"]["peakConcurrentCopies"] is None
    assert doc["scorecard"]["timeToPlacementSeconds"] == {"p50": None, "p99": None}


def test_invalid_result_value_rejected() -> None:
    with pytest.raises(ValueError):
        CheckResult("CORE-01", "NominatesConfiguredOnly", "ok")


def test_junit_counts(tmp_path: Path) -> None:
    path = make_report().write_junit(tmp_path / "junit.xml")
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    total = len(CORE) + 2
    assert len(cases) == total
    assert suite.get("tests") == str(total) and root.get("tests") == str(total)
    assert suite.get("failures") == "1" and suite.get("skipped") == "1"
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == 1
    assert failed[0].get("classname") == f"mkdc.{catalogue()['EXT-01'][1]}"
    assert "4 copies" in (failed[0].find("failure").text or "")  # type: ignore[union-attr]
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert len(skipped) == 1 and skipped[0].get("name", "").startswith("EXT-12 ")
    assert {c.get("classname") for c in cases[: len(CORE)]} == {"mkdc.core"}


def test_html_has_a_timeline_per_check_and_escapes(tmp_path: Path) -> None:
    cat = catalogue()
    checks = all_core_passed()
    for check in checks:
        check.timeline = timeline()
    checks[1].message = "<script>alert(1)</script>"
    checks[1].result = "failed"
    page = write_html(make_report(checks), tmp_path / "report.html").read_text()
    assert page.count('<svg class="timeline"') == len(checks)
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "job-<b>" not in page and "job-&lt;b&gt;&amp;x" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    for cid in CORE:
        assert f'id="{cid}"' in page and cat[cid][0] in page
    # the picture tells the story: rows per cluster, placement, preemption, inactive
    for text in ("w1", "w2", "w3", "w4", "placed on w3", "preempted ns-1/low", "inactive"):
        assert text in page
    assert "ProvisioningRequest pr" in page and "restart dispatcher" in page
    assert "Scorecard" in page and "peakConcurrentCopies" in page


def test_html_without_timeline(tmp_path: Path) -> None:
    page = write_html(make_report(all_core_passed()), tmp_path / "r.html").read_text()
    assert "No timeline recorded" in page
    assert '<svg class="timeline"' not in page


def test_many_workloads_are_capped(tmp_path: Path) -> None:
    events = [Event(float(i), MANAGER, Kind.WORKLOAD_CREATED, f"ns/w{i}") for i in range(20)]
    checks = all_core_passed()
    checks[0].timeline = Timeline(events)
    page = write_html(make_report(checks), tmp_path / "r.html").read_text()
    assert 0 < page.count('<svg class="timeline"') < 20 and "more workloads" in page


def _verify_edited(tmp_path: Path, edit: Any) -> list[str]:
    path = make_report().write_yaml(tmp_path / "report.yaml")
    doc = yaml.safe_load(path.read_text())
    edit(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return verify_report(path, catalogue())


def test_verify_catches_missing_core_check(tmp_path: Path) -> None:
    def drop(doc: dict[str, Any]) -> None:
        doc["checks"] = [c for c in doc["checks"] if c["id"] != "CORE-03"]
        doc["summary"]["passed"] -= 1

    problems = _verify_edited(tmp_path, drop)
    assert any("CORE-03 missing" in p for p in problems), problems


def test_verify_catches_count_mismatch(tmp_path: Path) -> None:
    def bump(doc: dict[str, Any]) -> None:
        doc["summary"]["passed"] += 1

    problems = _verify_edited(tmp_path, bump)
    assert any(p.startswith("summary.passed") for p in problems), problems


def test_verify_catches_bad_result_value(tmp_path: Path) -> None:
    def bad(doc: dict[str, Any]) -> None:
        doc["checks"][0]["result"] = "ok"

    problems = _verify_edited(tmp_path, bad)
    assert any(
        p.endswith(
            ".result: must be one of passed, failed, undecided, skipped, not-supported, got 'ok'"
        )
        for p in problems
    ), problems


def test_verify_catches_inconsistent_summary_result(tmp_path: Path) -> None:
    def passed(doc: dict[str, Any]) -> None:
        doc["summary"]["result"] = "passed"

    problems = _verify_edited(tmp_path, passed)
    assert any(p.startswith("summary.result") for p in problems), problems


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d.pop("scorecard"), "scorecard"),
        (lambda d: d["scorecard"].pop("peakConcurrentCopies"), "scorecard.peakConcurrentCopies"),
        (lambda d: d["scorecard"]["timeToPlacementSeconds"].pop("p99"), "p99"),
        (lambda d: d["checks"].append(dict(d["checks"][0])), "duplicate"),
        (lambda d: d["checks"][-1].update(id="EXT-99"), "unknown check id"),
        (lambda d: d["checks"][0].update(name="Other"), ".name"),
        (lambda d: d["environment"].pop("kueueVersion"), "environment.kueueVersion"),
        (lambda d: d.update(kind="Report"), "kind"),
        (lambda d: d["checks"][-2].update(message=""), "message"),
        (lambda d: d["checks"][0].update(durationSeconds="fast"), "durationSeconds"),
    ],
)
def test_verify_catches_schema_problems(tmp_path: Path, edit: Any, words: str) -> None:
    problems = _verify_edited(tmp_path, edit)
    assert any(words in p for p in problems), problems


def test_verify_unreadable_files(tmp_path: Path) -> None:
    assert verify_report(tmp_path / "missing.yaml", catalogue())
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1,\n")
    assert verify_report(bad, catalogue())
    bad.write_text("- 1\n")
    assert verify_report(bad, catalogue()) == ["report: must be a mapping"]


def test_redaction_in_every_output(tmp_path: Path) -> None:
    checks = all_core_passed()
    checks[0].result = "failed"
    checks[0].message = f"kubeconfig leaked:\n{PEM}\nclient-key-data: QUJDREVG\ntoken: s3cr3t"
    checks[0].timeline = Timeline([Event(0.0, MANAGER, Kind.ACTION, WL, {"what": "token: s3cr3t"})])
    checks[0].measured = {"token": "s3cr3t", "note": "Bearer abc.def"}
    report = make_report(checks, implementation={"password": "hunter2"})
    written = write_all(report, tmp_path)
    for path in written.values():
        text = path.read_text()
        for secret in ("MIIEsecretsecret", "BEGIN RSA", "QUJDREVG", "s3cr3t", "hunter2", "abc.def"):
            assert secret not in text, (path.name, secret)
        assert "REDACTED" in text


def test_redact_is_idempotent_and_keeps_plain_text() -> None:
    text = "client-key-data: QUJD, tokens: 5, ok"
    once = redact(text)
    assert once == "client-key-data: [REDACTED], tokens: 5, ok"
    assert redact(once) == once
    assert redact("nothing secret here") == "nothing secret here"
    assert re.search("REDACTED", redact(PEM))


def test_a_run_that_could_not_judge_says_error_and_why(tmp_path: Path) -> None:
    why = "the dispatcher could not be judged: it exited with code 3 at start"
    report = make_report([], error=why, privileges=["get, list, watch secrets in kueue-system"])
    write_all(report, tmp_path)
    doc = yaml.safe_load((tmp_path / "report.yaml").read_text())
    assert doc["summary"]["result"] == "error" and doc["error"] == why
    assert doc["privileges"] == ["get, list, watch secrets in kueue-system"]
    assert verify_report(tmp_path / "report.yaml", catalogue()) == []
    html_text = (tmp_path / "report.html").read_text()
    assert "exited with code 3" in html_text and "watch secrets in kueue-system" in html_text
    del doc["error"]
    (tmp_path / "report.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    assert any(p.startswith("error:") for p in verify_report(tmp_path / "report.yaml", catalogue()))


def test_an_error_text_without_an_error_result_is_caught(tmp_path: Path) -> None:
    problems = _verify_edited(tmp_path, lambda doc: doc.update(error="x"))
    assert any(p.startswith("error:") for p in problems), problems


# --- undecided and findings ------------------------------------------------------------------

UNDECIDED_MSG = "undecided: CORE-01 failed in this scenario: t=1.0s nominated w9"
FINDING = Finding(
    "nominated-outside-config",
    "Nominated clusters that are in no MultiKueueConfig of the workload",
    "nominated w9; the config had w2, w3",
    ("nominates-configured-only-1a2b",),
    ("CORE-01",),
)


def undecided_report(failed: bool = False) -> Report:
    checks = all_core_passed()
    checks[2].result, checks[2].message = "undecided", UNDECIDED_MSG
    if failed:
        checks[0].result, checks[0].message = "failed", "t=1.0s nominated w9"
    return make_report(checks, findings=[FINDING])


def test_undecided_is_counted_apart_and_never_passed() -> None:
    summary = undecided_report().summary()
    assert summary["undecided"] == 1 and summary["failed"] == 0
    assert summary["result"] == "partial"
    assert undecided_report(failed=True).summary()["result"] == "failed"


def test_undecided_round_trips_through_yaml_junit_and_verify(tmp_path: Path) -> None:
    written = write_all(undecided_report(), tmp_path)
    doc = yaml.safe_load(written["yaml"].read_text())
    entry = next(c for c in doc["checks"] if c["id"] == CORE[2])
    assert entry["result"] == "undecided" and entry["message"] == UNDECIDED_MSG
    assert doc["findings"] == [FINDING.to_dict()]
    assert verify_report(written["yaml"], catalogue()) == []
    suite = ET.parse(written["junit"]).getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("failures") == "0"
    errors = [c for c in suite.findall("testcase") if c.find("error") is not None]
    assert [c.get("name", "").split()[0] for c in errors] == [CORE[2]]
    assert "no MultiKueueConfig" in (suite.findtext("system-out") or "")
    page = written["html"].read_text()
    assert '<span class="badge undecided">' in page and ".undecided{" in page
    assert 'id="finding-nominated-outside-config"' in page and "the config had w2, w3" in page


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d["summary"].update(undecided=0), "summary.undecided"),
        (lambda d: d["summary"].update(result="passed"), "summary.result"),
        (lambda d: d["checks"][2].update(message=""), "message"),
        (lambda d: d["findings"][0].pop("detail"), "findings[0].detail"),
        (lambda d: d["findings"][0].update(checks=["CORE-77"]), "unknown check id(s) CORE-77"),
        (lambda d: d["findings"][0].update(scenarios="x"), "findings[0].scenarios"),
        (lambda d: d.update(findings={}), "findings: must be a list"),
    ],
)
def test_verify_checks_undecided_and_findings(tmp_path: Path, edit: Any, words: str) -> None:
    path = undecided_report().write_yaml(tmp_path / "report.yaml")
    doc = yaml.safe_load(path.read_text())
    edit(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    problems = verify_report(path, catalogue())
    assert any(words in p for p in problems), problems


def test_verify_accepts_a_report_from_before_undecided(tmp_path: Path) -> None:
    path = make_report().write_yaml(tmp_path / "report.yaml")
    doc = yaml.safe_load(path.read_text())
    del doc["summary"]["undecided"], doc["findings"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert verify_report(path, catalogue()) == []


def test_verify_wants_the_timeouts_when_a_check_was_judged(tmp_path: Path) -> None:
    problems = _verify_edited(tmp_path, lambda doc: doc.update(timeouts={}))
    assert any(p.startswith("timeouts: empty") for p in problems), problems
    cat = catalogue()
    nothing_judged = [CheckResult(cid, cat[cid][0], "skipped", "filtered out") for cid in CORE] + [
        CheckResult("EXT-05", cat["EXT-05"][0], "not-supported")
    ]
    path = make_report(nothing_judged, timeouts={}).write_yaml(tmp_path / "r.yaml")
    assert verify_report(path, catalogue()) == []


def test_a_result_given_as_the_enum_is_written_as_its_word(tmp_path: Path) -> None:
    """Results are a StrEnum; YAML's safe dumper knows only plain strings."""
    report = Report(
        catalogue=catalogue(),
        profile="p",
        dispatcher_name="d",
        checks=[CheckResult("CORE-01", "NominatesConfiguredOnly", Result.UNDECIDED, "why")],
    )
    write_all(report, tmp_path)
    doc = yaml.safe_load((tmp_path / "report.yaml").read_text())
    assert doc["checks"][0]["result"] == "undecided"


def test_report_yaml_is_the_text_pythons_own_emitter_writes(tmp_path: Path) -> None:
    """Written through libyaml where PyYAML has it, for speed: the text must not change."""
    report = make_report()
    text = report.write_yaml(tmp_path / "report.yaml").read_text(encoding="utf-8")
    assert text == yaml.safe_dump(
        report.to_dict(), sort_keys=False, allow_unicode=True, default_flow_style=False
    )
    odd = {"message": "two\nlines, a tab\tand ü", "empty": "", "numberish": "0012", "n": [1.5]}
    assert userfiles.dump_yaml(odd, sort_keys=False) == yaml.safe_dump(odd, sort_keys=False)
