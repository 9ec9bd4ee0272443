"""The reference dispatcher's command line: exit codes and structured log lines."""

from __future__ import annotations

import json
import logging

import pytest

from dispatchers.reference.__main__ import JsonFormatter, main


def test_bad_setting_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--write-mode", "update"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "write-mode" in err[0]


def test_explain_needs_namespace_and_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "just-a-name"]) == 2
    assert "NAMESPACE/WORKLOAD" in capsys.readouterr().err


def test_log_lines_are_json_with_extra_fields() -> None:
    record = logging.LogRecord("mkdc", logging.INFO, "f", 1, "decision", None, None)
    record.workload = "ns/a"
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "decision" and line["workload"] == "ns/a" and line["level"] == "info"
