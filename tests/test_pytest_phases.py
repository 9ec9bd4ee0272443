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


def test_with_a_second_environment_both_phases_run_at_once(monkeypatch, tmp_path):
    """Each on its own session (its environment), started together."""
    batches: list[list[tuple[list[str], dict]]] = []

    def run_groups(commands, out) -> list[int]:
        batches.append(commands)
        return [0, 1]

    monkeypatch.setattr(run.procs, "run_groups", run_groups)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    aside = tmp_path / "b" / "session.json"
    code = run._pytest(
        tmp_path / "a" / "session.json", 2, tmp_path / "pytest.log", lambda: True, aside
    )
    assert code == 1 and len(batches) == 1
    (shared, shared_env), (alone, alone_env) = batches[0]
    assert "not exclusive" in shared and alone[-2:] == ["-m", "exclusive"]
    assert shared_env[run.SESSION_ENV].endswith("a/session.json")
    assert alone_env[run.SESSION_ENV] == str(aside)
    assert alone_env["TMPDIR"].startswith(str(tmp_path / "b"))
