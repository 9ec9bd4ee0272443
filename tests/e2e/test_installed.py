"""An installed mkdc judges from any directory: the wheel in a fresh virtualenv outside
the checkout, run from an empty directory, finds its profiles, suite and binary cache
(the kind provider's run from an installed mkdc is the kind smoke's)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e import installed
from tests.e2e.mkdc_cli import assert_conforms

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.e2e
def test_the_wheel_ships_the_kind_configurations_from_kind_configs(tmp_path: Path) -> None:
    """kind-configs/ (their one source, at the checkout's top) is in the wheel as the data
    of harness.kind_configs, and the installed kind provider reads it there."""
    mkdc = installed.install(tmp_path / "install")
    python = mkdc.parent / "python"
    code = "from harness.providers.kind_config import CONFIG_DIR; print(CONFIG_DIR)"
    found = subprocess.run(
        [str(python), "-c", code],
        cwd=tmp_path,
        env=installed.environ(mkdc),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    shipped = Path(found)
    assert (tmp_path / "install" / "venv") in shipped.parents, shipped
    for config in sorted((ROOT / "kind-configs").glob("*.yaml")):
        assert (shipped / config.name).read_text() == config.read_text(), config.name
