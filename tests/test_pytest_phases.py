"""A run's scenarios: the parallel pytest, then the one for scenarios that must run alone,
started only when some are left to run; on two environments, a third pytest runs those
on the second from the start."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster import procs, versions
from harness.orchestrate import suite_run
from harness.orchestrate.options import Options
from harness.orchestrate.plan import Plan
from harness.profile import load_profile


def lanes_of(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, aside: Path | None = None):
    """The lanes `_pytest` hands to `run_lanes`, and its exit code when they exit 0 and 1."""
    seen: list[list[list[procs.Step]]] = []

    def run_lanes(lanes, out) -> list[int]:
        seen.append([list(lane) for lane in lanes])
        return [0, 1]

    monkeypatch.setattr(suite_run.procs, "run_lanes", run_lanes)
    (tmp_path / "a").mkdir(exist_ok=True)
    code = suite_run.pytest(
        tmp_path / "a" / "session.json", 2, tmp_path / "pytest.log", lambda: True, aside
    )
    return code, seen[0]


def test_one_environment_runs_the_alone_phase_after_the_other_when_some_are_left(
    monkeypatch, tmp_path
):
    code, [[shared, alone]] = lanes_of(monkeypatch, tmp_path)
    assert code == 1  # the worse of the two
    assert shared.argv[-4:] == ["-m", "not exclusive", "-n", "2"] and shared.when is None
    assert alone.argv[-2:] == ["-m", "exclusive"] and "-n" not in alone.argv
    assert alone.when is not None and alone.when() is True  # the `alone_left` given
    assert shared.env == alone.env


def test_nothing_selected_in_a_phase_is_not_a_failure(monkeypatch, tmp_path):
    monkeypatch.setattr(suite_run.procs, "run_lanes", lambda lanes, out: [5, 0])
    code = suite_run.pytest(tmp_path / "session.json", 2, tmp_path / "pytest.log", lambda: True)
    assert code == 0


def test_with_a_second_environment_its_alone_phase_runs_from_the_start(monkeypatch, tmp_path):
    """Each on its own session (its environment); the first environment's lane is the
    same as with one environment, so it joins in on what is left."""
    (tmp_path / "b").mkdir()
    aside = tmp_path / "b" / "session.json"
    _, [[shared, alone_here], [alone_there]] = lanes_of(monkeypatch, tmp_path, aside)
    assert "not exclusive" in shared.argv and alone_here.when is not None
    assert alone_there.argv == alone_here.argv and alone_there.when is None
    assert shared.env is not None and shared.env[suite_run.SESSION_ENV].endswith("a/session.json")
    assert alone_there.env is not None and alone_there.env[suite_run.SESSION_ENV] == str(aside)
    assert alone_there.env["TMPDIR"].startswith(str(tmp_path / "b"))


def test_no_more_run_at_once_than_the_checks_have_scenarios_to_run_beside_each_other() -> None:
    """Each scenario run at once is an xdist worker: a one-scenario run starts none."""

    def parallel(n: int, checks: list[str]) -> int:
        plan = Plan(
            Options(profile="reference", parallel=n),
            load_profile("reference"),
            versions.select(None, None),
            Path("r"),
            None,  # type: ignore[arg-type]  # parallelism asks nothing of the provider
        )
        return suite_run.parallelism(plan, checks)

    assert parallel(2, ["CORE-08"]) == 1
    assert parallel(2, ["CORE-08", "EXT-11", "EXT-12"]) == 1  # the other two run alone
    assert parallel(2, ["CORE-03", "CORE-04"]) == 2
    assert parallel(3, ["CORE-02"]) == 3  # judged on every timeline: no scenario to count
