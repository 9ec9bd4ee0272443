"""report.html reads top-down: the verdict, the checks (failed first), one scorecard
table, the environment last; every figure and detail of the report is on the page, in
words and short numbers, never as a Python repr."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from harness.report import Finding, write_html
from suites.checks import CATALOGUE
from tests import reports


class Outline(HTMLParser):
    """The page's h1/h2 headings and check sections, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple[str, str]] = []
        self._heading: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "section" and "check" in (attr.get("class") or "").split():
            self.items.append(("check", f"{attr['id']} {attr['class']}"))
        elif tag in ("h1", "h2"):
            self._heading, self._text = tag, []

    def handle_data(self, data: str) -> None:
        if self._heading:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == self._heading:
            self.items.append((tag, "".join(self._text).strip()))
            self._heading = None


def outline(page: str) -> list[tuple[str, str]]:
    parser = Outline()
    parser.feed(page)
    return parser.items


def page_of(tmp_path: Path, **kw: Any) -> str:
    return write_html(reports.report(**kw), tmp_path / "report.html").read_text()


def test_verdict_then_checks_worst_first_then_scorecard_then_environment(
    tmp_path: Path,
) -> None:
    items = outline(page_of(tmp_path))
    headings = [text for kind, text in items if kind != "check"]
    assert headings == ["Conformance report: vendor", "Checks", "Scorecard", "Environment"]
    checks = [text.split() for kind, text in items if kind == "check"]
    assert [c[0] for c in checks[:3]] == ["CORE-05", "EXT-01", "CORE-07"]
    assert [c[2] for c in checks[:3]] == ["failed", "failed", "undecided"]
    assert {c[2] for c in checks[3:-1]} == {"passed"} and checks[-1][:3] == [
        "EXT-12",
        "check",
        "not-supported",
    ]
    assert len(checks) == len(CATALOGUE)
    # every check section sits between the Checks and Scorecard headings
    at = [i for i, (kind, _) in enumerate(items) if kind == "check"]
    assert items.index(("h2", "Checks")) < at[0] and at[-1] < items.index(("h2", "Scorecard"))


def test_the_verdict_says_result_counts_and_indexes_the_checks(tmp_path: Path) -> None:
    page = page_of(tmp_path)
    verdict = page[page.index('<header class="verdict') : page.index("</header>")]
    assert '<span class="badge failed">failed</span>' in verdict
    passed = f"{len(CATALOGUE) - 4} passed"  # all but 2 failed, 1 undecided, 1 not supported
    for words in ("2 failed", "1 undecided", passed, "0 skipped", "1 not supported"):
        assert words in verdict
    assert '<a href="#CORE-05">CORE-05 SingleExecution</a>' in verdict
    assert '<a href="#EXT-12">EXT-12</a>' in verdict
    assert "Nominated clusters that are in no MultiKueueConfig" in verdict
    assert "example.com/vendor" in verdict and "2026-11-30T12:00:00Z" in verdict


def test_a_finding_sits_with_the_checks_it_explains(tmp_path: Path) -> None:
    loose = Finding("api-forbidden", "API requests refused with 403", "get secrets: 3 times")
    page = page_of(tmp_path, findings=[reports.FINDING, loose])
    section = page[page.index('id="CORE-05"') : page.index('id="EXT-01"')]
    assert 'id="finding-nominated-outside-config"' in section
    assert "nominated w9; the config had w2, w3" in section
    # a finding that names no check is shown in full in the verdict: nowhere else has it
    verdict = page[: page.index("</header>")]
    assert 'id="finding-api-forbidden"' in verdict and "get secrets: 3 times" in verdict


def test_the_scorecard_is_one_table_of_scenarios_by_figure(tmp_path: Path) -> None:
    page = page_of(tmp_path)
    scorecard = page[page.index('id="scorecard"') : page.index('id="environment"')]
    assert scorecard.count("<table") == 1
    rows = re.findall(r'<td class="scenario">([^<]*)</td>', scorecard)
    assert rows == ["whole run (17 scenarios)", *reports.SCENARIOS]
    # percentiles as "p50 / p99 s", short numbers; an unplaced scenario's as a dash
    assert ">0.73 / 1.63 s<" in scorecard and ">49.31 / 61.54 s<" in scorecard
    assert ">0.08 / 0.08 s<" in scorecard  # bounded-duplicate-admission, 0.0771
    first = scorecard[scorecard.index("bounded-fan-out") :].split("</tr>")[0]
    assert "<td" in first and ">—<" in first
    for key in reports.scorecard()["perScenario"]["bounded-fan-out"]:
        assert f'title="{key}"' in scorecard, key  # every figure has its column


def test_no_python_repr_anywhere(tmp_path: Path) -> None:
    page = page_of(tmp_path)
    text = re.sub(r"<[^>]+>", " ", page)
    assert "{'" not in page and "'p50'" not in page and "['" not in text
    assert "None" not in text and "True" not in text


def test_everything_the_report_says_is_on_the_page(tmp_path: Path) -> None:
    """Nothing the page showed before the layout changed is lost: every value of the
    environment, claims, timeouts, implementation and privileges, and every message."""
    report = reports.report()
    page = write_html(report, tmp_path / "report.html").read_text()
    doc = report.to_dict()
    environment = page[page.index('id="environment"') :]
    for section in ("environment", "implementation", "claims", "timeouts"):
        for key, value in _leaves(doc[section]):
            assert f"<th>{key}</th>" in environment, (section, key)
            shown = ", ".join(map(str, value)) if isinstance(value, list) else value
            if isinstance(shown, float):
                shown = f"{shown:g}"
            assert str(shown) in environment, (section, key, shown)
    assert "get, list, watch secrets in kueue-system" in environment
    for check in doc["checks"]:
        assert check["message"].replace("<", "&lt;") in page
        assert f'<section class="check {check["result"]}" id="{check["id"]}">' in page
    # every check that ran has its picture (all but EXT-12, not supported)
    assert page.count('<svg class="timeline"') == len(CATALOGUE) - 1


def _leaves(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, dict):
            out += _leaves(value, f"{prefix}{key}.")
        elif value is not None:
            out.append((f"{prefix}{key}", value))
    return out


def test_an_error_report_leads_with_why(tmp_path: Path) -> None:
    report = reports.outcomes()["error"]
    page = write_html(report, tmp_path / "report.html").read_text()
    verdict = page[: page.index("</header>")]
    assert '<span class="badge error">error</span>' in verdict
    assert "exited with code 3 at start" in verdict
    scorecard = page[page.index('id="scorecard"') : page.index('id="environment"')]
    assert re.findall(r'<td class="scenario">([^<]*)</td>', scorecard) == ["whole run"]


def test_the_page_needs_nothing_from_outside(tmp_path: Path) -> None:
    page = page_of(tmp_path)
    assert "<script" not in page and "<link" not in page and "<img" not in page
    assert "@import" not in page and "url(http" not in page
    assert re.findall(r'(?:src|href)="(?!#)[^"]*"', page) == []


def test_what_the_dispatcher_did_sits_under_a_failed_check_before_its_picture(
    tmp_path: Path,
) -> None:
    page = page_of(tmp_path)
    section = page[page.index('id="CORE-05"') :]
    section = section[: section.index("</section>")]
    said = section.index("What the dispatcher did")
    assert said < section.index('<svg class="timeline"')
    for line in reports.ACTIONS.lines:
        assert f"<li>{line}</li>" in section
    passed = page[page.index('id="CORE-01"') :]
    assert "What the dispatcher did" not in passed[: passed.index("</section>")]


def test_a_dispatcher_that_exited_is_said_in_the_verdict(tmp_path: Path) -> None:
    page = write_html(reports.outcomes()["failed"], tmp_path / "report.html").read_text()
    verdict = page[: page.index('id="checks"')]
    assert "The dispatcher exited while the scenarios ran" in verdict
    assert "dispatcher-0 exited with code 1 133.2 s into the run: urllib3" in verdict
    assert "exited while" not in page_of(tmp_path)  # none exited: nothing said


def test_each_replica_run_as_a_kubelet_runs_it_has_a_row(tmp_path: Path) -> None:
    report = reports.report()
    report.environment["replicas"] = [
        {
            "process": "dispatcher-1",
            "environment": 2,
            "identity": "system:serviceaccount:kueue-system:vendor-1",
            "user": 65534,
            "restarts": 2,
            "peakMemoryBytes": 96 * 2**20,
            "peakCpuCores": 0.25,
            "requests": {"memory": 64 * 2**20},
            "limits": {"memory": 64 * 2**20},
            "overMemoryLimit": True,
        }
    ]
    page = write_html(report, tmp_path / "report.html").read_text()
    environment = page[page.index('id="environment"') :]
    assert (
        "<tr><td>dispatcher-1</td><td>2</td>"
        "<td><code>system:serviceaccount:kueue-system:vendor-1</code></td><td>65534</td>"
        "<td>2</td><td>96.00 MiB · request 64.00 · limit 64.00 <strong>over its limit</strong>"
        "</td><td>0.25 cores</td></tr>"
    ) in environment


def test_kueues_feature_gates_read_as_those_on_and_those_off(tmp_path: Path) -> None:
    report = reports.report()
    report.environment["kueueFeatureGates"] = {
        "MultiKueue": True,
        "MultiKueueOrchestratedPreemption": False,
        "TopologyAwareScheduling": True,
    }
    page = write_html(report, tmp_path / "report.html").read_text()
    environment = page[page.index('id="environment"') :]
    assert "<th>kueueFeatureGates.on</th><td>MultiKueue, TopologyAwareScheduling</td>" in (
        environment
    )
    assert "<th>kueueFeatureGates.off</th><td>MultiKueueOrchestratedPreemption</td>" in (
        environment
    )


def test_each_check_says_whose_its_bounds_are(tmp_path: Path) -> None:
    """The catalogue's bounds, each with its owner and why, under the check they bound."""
    page = page_of(tmp_path)
    section = page[page.index('id="CORE-02"') :]
    section = section[: section.index("</section>")]
    assert "Bounds: <b>Kueue API</b>: at most 20 names" in section
    assert "<b>mkdc</b>: no name twice" in section
