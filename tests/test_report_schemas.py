"""Every way a run ends writes valid files: report.yaml against its JSON Schema
(harness/report/report.schema.json) and junit.xml against the common JUnit XSD
(tests/schemas/junit.xsd), for passed, failed, errored and interrupted runs, and for
messages carrying text XML cannot hold. `mkdc report verify` reports schema problems
one line each."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import xmlschema
import yaml
from jsonschema import Draft202012Validator

from harness import cli
from harness.profile import FEATURES, ORDERINGS
from harness.report import RESULTS, verify_report, write_all
from harness.report.model import (
    API_VERSION,
    ENVIRONMENT_FIELDS,
    IMPLEMENTATION_FIELDS,
    KIND,
    SCORECARD_ORDER,
    SUMMARY_KEYS,
    SUMMARY_RESULTS,
)
from harness.report.verify import schema, schema_problems
from harness.suite import catalogue
from tests import reports

ROOT = Path(__file__).resolve().parent.parent
JUNIT_XSD = xmlschema.XMLSchema(Path(__file__).parent / "schemas" / "junit.xsd")
OUTCOMES = reports.outcomes()
EXPECTED = {"passed": "passed", "failed": "failed", "error": "error", "interrupted": "partial"}


def test_the_schema_is_a_valid_json_schema_and_ships_with_the_package() -> None:
    Draft202012Validator.check_schema(schema())
    on_disk = json.loads((ROOT / "harness" / "report" / "report.schema.json").read_text())
    assert schema() == on_disk


def test_the_schema_says_what_the_code_says() -> None:
    """The schema is data; these are the constants the writers and checks use."""
    props = schema()["properties"]
    defs = schema()["$defs"]
    assert props["apiVersion"]["const"] == API_VERSION and props["kind"]["const"] == KIND
    assert props["environment"]["required"] == list(ENVIRONMENT_FIELDS)
    assert props["implementation"]["required"] == list(IMPLEMENTATION_FIELDS)
    assert props["scorecard"]["required"] == list(SCORECARD_ORDER)
    assert set(props["summary"]["properties"]) == {"result", *SUMMARY_KEYS.values()}
    assert props["summary"]["properties"]["result"]["enum"] == list(SUMMARY_RESULTS)
    assert set(defs["check"]["properties"]["result"]["enum"]) == set(RESULTS)
    assert props["claims"]["properties"]["features"]["items"]["enum"] == list(FEATURES)
    assert props["claims"]["properties"]["ordering"]["enum"] == list(ORDERINGS)


@pytest.mark.parametrize("outcome", list(OUTCOMES))
def test_every_outcome_writes_a_valid_report_and_junit(tmp_path: Path, outcome: str) -> None:
    written = write_all(OUTCOMES[outcome], tmp_path)
    doc = yaml.safe_load(written["yaml"].read_text())
    assert doc["summary"]["result"] == EXPECTED[outcome]
    assert schema_problems(doc) == []
    assert verify_report(written["yaml"], catalogue()) == []
    JUNIT_XSD.validate(str(written["junit"]))
    assert written["html"].read_text().endswith("</html>")


def test_an_interrupted_run_is_partial_with_its_gaps_named(tmp_path: Path) -> None:
    doc = yaml.safe_load(write_all(OUTCOMES["interrupted"], tmp_path)["yaml"].read_text())
    results = {c["id"]: c for c in doc["checks"]}
    assert results["CORE-07"]["result"] == "undecided"
    assert results["CORE-09"]["result"] == "skipped" and results["CORE-09"]["message"]
    assert "EXT-09" not in results  # an extended check that did not run is absent
    # skipped: CORE-09 and the core checks it never reached (CORE-08, CORE-10)
    assert doc["summary"]["undecided"] == 1 and doc["summary"]["skipped"] == 3


def test_an_error_report_says_so_in_junit_too(tmp_path: Path) -> None:
    junit = write_all(OUTCOMES["error"], tmp_path)["junit"]
    data: Any = JUNIT_XSD.to_dict(str(junit))
    suite = data["testsuite"][0]
    assert "exited with code 3 at start" in suite["system-err"]
    props = {p["@name"]: p["@value"] for p in suite["properties"]["property"]}
    assert props["summary"] == "error"


HOSTILE = {
    "control characters": "why\x00 \x1b[31mred\x1b[0m \x07bell",
    "noncharacters": "why \ufffe\uffff",
    "a lone surrogate": "why \ud800 from a file name",
    "C1 and emoji": "why \x85next \U0001f600",
    "markup": "<failure>]]></failure> & <![CDATA[x]]>",
}


@pytest.mark.parametrize("what", list(HOSTILE))
def test_any_message_text_still_gives_valid_files(tmp_path: Path, what: str) -> None:
    """A message or error copied from a log may hold text no XML can; every file is
    still written and valid, the text kept as far as it can be."""
    checks = reports.checks()
    checks[4].message = HOSTILE[what]  # CORE-05, failed
    report = reports.report(checks, error="")
    report.findings[0] = reports.Finding("f", HOSTILE[what], HOSTILE[what], ("s",), ("CORE-05",))
    report.environment["provider"] = f"local {HOSTILE[what]}"
    written = write_all(report, tmp_path)
    JUNIT_XSD.validate(str(written["junit"]))
    doc = yaml.safe_load(written["yaml"].read_text(encoding="utf-8"))
    assert schema_problems(doc) == [] and verify_report(written["yaml"], catalogue()) == []
    message = next(c["message"] for c in doc["checks"] if c["id"] == "CORE-05")
    assert message.startswith("why") or message.startswith("<failure>")
    page = written["html"].read_text(encoding="utf-8")
    assert "CORE-05" in page and "\ud800" not in page and "\x00" not in page


def _edited(tmp_path: Path, edit: Any) -> tuple[Path, list[str]]:
    path = OUTCOMES["failed"].write_yaml(tmp_path / "report.yaml")
    doc = yaml.safe_load(path.read_text())
    edit(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path, verify_report(path, catalogue())


@pytest.mark.parametrize(
    ("edit", "line"),
    [
        (lambda d: d.update(date="yesterday"), "date: must be an ISO 8601 timestamp"),
        (lambda d: d["environment"].update(workers="four"), "environment.workers: must be an"),
        (lambda d: d["environment"].update(workers=-1), "environment.workers: must be at least"),
        (lambda d: d["claims"].update(stepSize="some"), "claims.stepSize: must be a positive"),
        (lambda d: d["claims"].update(features=["Teleport"]), "claims.features[0]: must be one of"),
        (lambda d: d["implementation"].pop("url"), "implementation.url: required"),
        (lambda d: d["timeouts"].update(placement_slack="1m"), "timeouts.placement_slack: must"),
        (lambda d: d["summary"].update(failed=-2), "summary.failed: must be at least 0"),
        (lambda d: d["checks"][4].pop("message"), "checks[4] (CORE-05).message: required"),
        (lambda d: d["checks"][0].update(id="C5"), "checks[0] (C5).id: must be CORE-nn or EXT-nn"),
        (
            lambda d: d["scorecard"]["perScenario"]["bounded-fan-out"].update(workloads=1.5),
            "scorecard.perScenario.bounded-fan-out.workloads: must be an integer or null",
        ),
        (lambda d: d.update(privileges="all"), "privileges: must be a list, got 'all'"),
        (lambda d: d.update(error=""), "error: must not be empty"),
    ],
)
def test_verify_names_each_schema_problem_in_one_line(tmp_path: Path, edit: Any, line: str) -> None:
    _path, problems = _edited(tmp_path, edit)
    assert any(p.startswith(line) for p in problems), problems
    assert len(problems) == len(set(problems))


def test_verify_takes_yaml_timestamps_as_they_load(tmp_path: Path) -> None:
    """An unquoted date loads as a datetime; it is the same timestamp."""
    _path, problems = _edited(
        tmp_path, lambda d: d.update(date=dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC))
    )
    assert problems == []


def test_mkdc_report_verify_prints_a_line_per_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def two_problems(doc: dict[str, Any]) -> None:
        doc["environment"]["workers"] = "four"
        doc["checks"][1]["durationSeconds"] = "fast"

    path, problems = _edited(tmp_path, two_problems)
    assert cli.main(["report", "verify", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{path}: {p}" for p in problems] and len(out) == 2
    assert out[1].endswith("checks[1] (CORE-02).durationSeconds: must be a number, got 'fast'")
    good = OUTCOMES["passed"].write_yaml(tmp_path / "good.yaml")
    assert cli.main(["report", "verify", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: ok\n"
