"""A run's scenarios: the parallel pytest, then the one for scenarios that must run alone,
started only when the first one's collection planned some."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import run


def phases(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, planned: bool, codes: list[int]):
    calls: list[list[str]] = []

    def run_group(argv: list[str], out, *, env=None) -> int:
        calls.append(argv)
        return codes[len(calls) - 1]

    monkeypatch.setattr(run.procs, "run_group", run_group)
    code = run._pytest(tmp_path / "session.json", 2, tmp_path / "pytest.log", lambda: planned)
    return code, calls


def test_the_alone_phase_runs_only_when_planned(monkeypatch, tmp_path):
    code, calls = phases(monkeypatch, tmp_path, planned=False, codes=[0])
    assert code == 0
    assert len(calls) == 1 and calls[0][-4:] == ["-m", "not exclusive", "-n", "2"]
    code, calls = phases(monkeypatch, tmp_path, planned=True, codes=[0, 1])
    assert code == 1  # the worse of the two
    assert "not exclusive" in calls[0] and calls[1][-2:] == ["-m", "exclusive"]
    assert "-n" not in calls[1]  # alone: no parallel workers


def test_nothing_selected_in_a_phase_is_not_a_failure(monkeypatch, tmp_path):
    code, _ = phases(monkeypatch, tmp_path, planned=True, codes=[5, 0])
    assert code == 0
