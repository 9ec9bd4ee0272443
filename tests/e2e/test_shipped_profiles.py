"""Everything shipped is started: every profile in dispatchers/profiles/ but the faulty
ones (the self-test starts those, each by the glob in tests/test_selftest.py) is run for
real, in one `mkdc run --plan` so that those needing the same clusters share one
environment, and decides a check. A profile added later is picked up by the glob.

Each run's verdict and time (from its progress stream) are printed, and the test's
total: `pytest tests/e2e/test_shipped_profiles.py -s`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from harness.profile import load_profile
from tests.e2e.mkdc_cli import PROFILES, mkdc, report_of, results_of

CHECK = "CORE-08"  # decided in one short scenario on one worker by every dispatcher


def shipped() -> list[Path]:
    """Every shipped profile but the faulty ones, by glob."""
    return sorted(p for p in PROFILES.glob("*.yaml") if not p.name.startswith("faulty-"))


def test_the_glob_finds_the_shipped_forms() -> None:
    """The glob is not empty-handed: each form of running a dispatcher is among them, and
    none needs a cluster other than local ones (a deploy folder whose command is not on
    this machine would: such a profile belongs with the kind tests)."""
    profiles = {p.stem: load_profile(p) for p in shipped()}
    assert {"reference", "reference-ha", "all-at-once", "incremental", "example-go"} <= set(
        profiles
    )
    runs = [p.run for p in profiles.values() if p.run is not None]
    assert any(r.image for r in runs) and any(r.deploy for r in runs)
    assert not [name for name, p in profiles.items() if p.run and p.run.host_problem]


def _verdict(report_dir: Path) -> tuple[str, float]:
    """The run's summary result and its time from start to end, by its progress stream."""
    events = [
        json.loads(line) for line in (report_dir / "progress.jsonl").read_text().split("\n") if line
    ]
    end = next(e for e in events if e["event"] == "run-end")
    return report_of(report_dir)["summary"]["result"], float(end["elapsedSeconds"])


@pytest.mark.e2e
def test_every_shipped_profile_starts_and_decides_a_check(
    selected_versions, tmp_path: Path
) -> None:
    profiles = shipped()
    plan = []
    for p in profiles:
        run: dict[str, object] = {"profile": str(p), "reportDir": str(tmp_path / p.stem)}
        if load_profile(p).environment.clusters is None:  # else the ones it names
            run["workers"] = 1
        plan.append(run)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan))
    started = time.monotonic()
    proc = mkdc(
        ["run", "--plan", str(plan_file), "--checks", CHECK, "--environments", "1"], timeout=1500
    )
    total = time.monotonic() - started
    assert proc.returncode in (0, 1), proc.stderr[-4000:]  # 1: a check not passed, below
    lines = []
    for p in profiles:
        result, seconds = _verdict(tmp_path / p.stem)
        decided = results_of(report_of(tmp_path / p.stem))[CHECK]
        lines.append(f"{p.stem}: {result} ({CHECK} {decided}) in {seconds:.1f}s")
    print("\n".join([*lines, f"total {total:.1f}s for {len(profiles)} profiles"]))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert all(results_of(report_of(tmp_path / p.stem))[CHECK] == "passed" for p in profiles), lines
