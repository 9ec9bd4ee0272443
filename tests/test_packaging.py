"""pyproject.toml: package data that exists, pytest markers declared once."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def folder(package: str) -> Path:
    """Where a package's files are in the checkout: its folder, or the one package-dir
    maps it from (harness.kind_configs from kind-configs/)."""
    return ROOT / SETUPTOOLS.get("package-dir", {}).get(package, package.replace(".", "/"))


def test_every_package_data_pattern_matches_files() -> None:
    data = SETUPTOOLS["package-data"]
    empty = [
        f"{package}: {pattern}"
        for package, patterns in data.items()
        for pattern in patterns
        if not any(folder(package).glob(pattern))
    ]
    assert not empty, f"package-data patterns that match nothing: {empty}"


def test_every_marker_is_declared_once() -> None:
    names = [
        m.split(":")[0].split("(")[0] for m in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]
    ]
    declared = re.compile(r'addinivalue_line\(\s*"markers",\s*"(\w+)')
    for conftest in sorted(ROOT.glob("**/conftest.py")):
        if ".venv" not in conftest.parts:
            names += declared.findall(conftest.read_text())
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_every_file_the_packages_read_is_shipped() -> None:
    """An installed mkdc has no checkout: every tracked file inside a package folder that is
    not a module (profiles, the Go example a profile builds, kind configurations, the
    report's schema) must be package data."""
    tracked = subprocess.run(
        ["git", "ls-files", "harness", "suites", "dispatchers", "kind-configs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    data = SETUPTOOLS["package-data"]
    shipped = {
        path.relative_to(ROOT).as_posix()
        for package, patterns in data.items()
        for pattern in patterns
        for path in folder(package).glob(pattern)
    }
    left_out = [f for f in tracked if not f.endswith(".py") and f not in shipped]
    assert left_out == [], f"not package data, so missing from an installed mkdc: {left_out}"


def test_the_kind_configurations_have_one_source() -> None:
    """kind-configs/ at the top is where they are; the checkout has no second copy, and
    the kind provider reads them from there."""
    from harness.providers.kind_config import CONFIG_DIR

    assert sorted(p.name for p in (ROOT / "kind-configs").glob("*.yaml")) == [
        "manager.yaml",
        "worker.yaml",
    ]
    assert not (ROOT / "harness" / "kind_configs").exists()
    assert CONFIG_DIR.resolve() == (ROOT / "kind-configs").resolve()
