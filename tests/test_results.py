"""The one record type a check's result travels in, from a test process to the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import results
from harness.errors import UserError
from harness.results import DispatcherActions, Result, ScenarioResult


def test_written_and_read_back_alike(tmp_path: Path) -> None:
    record = ScenarioResult(
        "CORE-04",
        "eventual-placement-1a2b",
        Result.FAILED,
        "not placed",
        duration_seconds=12.5,
        timeline=[{"t": 0.0, "kind": "CREATED"}],
        observed_until=30.0,
        config=("w1", "w2"),
        dispatcher_users=("me",),
        scorecard={"peakConcurrentCopies": 1},
        dispatcher_actions=DispatcherActions(
            ("it wrote nothing for 30.0s",), until=30.0, workloads=("ns/wl",)
        ),
    )
    path = results.write(tmp_path, record)
    assert json.loads(path.read_text())["observedUntil"] == 30.0
    assert results.read_all(tmp_path) == [record]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "not a JSON object"),
        ({"check": "CORE-01", "scenario": "s"}, "result is missing"),
        ({"check": "CORE-01", "scenario": "s", "result": "great"}, "result 'great' is not one"),
        (
            {"check": "CORE-01", "scenario": "s", "result": "passed", "extra": 1},
            "unknown key(s) extra",
        ),
        (
            {"check": "CORE-01", "scenario": "s", "result": "passed", "config": "w1"},
            "config must be a list of strings, got str",
        ),
        (
            {"check": "CORE-01", "scenario": "s", "result": "passed", "origin": "0"},
            "origin must be a number, got str",
        ),
        (
            {"check": "CORE-01", "scenario": "s", "result": "passed", "timeline": [1]},
            "timeline must be a list of events, got list",
        ),
        (
            {"check": "CORE-01", "scenario": "s", "result": "failed", "dispatcherActions": []},
            "dispatcherActions must be an object",
        ),
        (
            {
                "check": "CORE-01",
                "scenario": "s",
                "result": "failed",
                "dispatcherActions": {"lines": ["x"], "writes": "3"},
            },
            "dispatcherActions.writes must be an integer",
        ),
    ],
)
def test_what_does_not_fit_is_refused(data: object, problem: str) -> None:
    with pytest.raises(ValueError) as raised:
        ScenarioResult.from_json(data)
    assert problem in str(raised.value)


def test_a_file_that_is_not_a_record_is_named(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"check": "CORE-01"}')
    with pytest.raises(UserError, match="x.json is not a scenario result: scenario is missing"):
        results.read_all(tmp_path)
