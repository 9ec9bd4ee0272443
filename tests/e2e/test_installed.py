"""An installed mkdc judges from any directory: the wheel in a fresh virtualenv outside
the checkout, run from an empty directory, finds its profiles, suite and binary cache
(the kind provider's run from an installed mkdc is the kind smoke's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e import installed
from tests.e2e.mkdc_cli import assert_conforms


@pytest.mark.e2e
def test_the_installed_wheel_judges_from_an_empty_directory(
    selected_versions, tmp_path: Path
) -> None:
    mkdc = installed.install(tmp_path / "install")
    empty = tmp_path / "empty"
    empty.mkdir()
    checks = installed.mkdc(mkdc, ["checks"], empty)
    assert checks.returncode == 0 and "CORE-08" in checks.stdout, checks.stderr
    doctor = installed.mkdc(mkdc, ["doctor"], empty)
    assert "manifests: ok" in doctor.stdout, doctor.stdout + doctor.stderr
    report_dir = empty / "report"
    args = ["run", "--profile", "reference", "--report-dir", str(report_dir)]
    args += ["--workers", "1", "--environments", "1", "--checks", "CORE-08"]
    proc = installed.mkdc(mkdc, args, empty)
    report = assert_conforms(proc, report_dir, "CORE-08")
    assert report["environment"]["provider"] == "local"
    # nothing was read from, or written to, the checkout: the run's only traces are here
    assert sorted(p.name for p in empty.iterdir()) == ["report"]
