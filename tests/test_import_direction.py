"""Imports flow one way: suites and dispatchers use the harness, the harness uses neither
(it finds the suite through the `mkdc.suites` entry point). Imports inside functions count:
they hide a cycle, they do not remove it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"harness": ("suites", "dispatchers"), "dispatchers": ("suites",)}


def imported_packages(source: str) -> set[str]:
    """Top-level package of every import anywhere in `source` (functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_imports_flow_one_way() -> None:
    wrong = [
        f"{path.relative_to(ROOT)} imports {package}"
        for owner, banned in FORBIDDEN.items()
        for path in sorted((ROOT / owner).rglob("*.py"))
        for package in sorted(imported_packages(path.read_text()) & set(banned))
    ]
    assert wrong == []


@pytest.mark.parametrize(
    "source",
    [
        "from suites.checks import CATALOGUE\n",
        "import suites.findings\n",
        "def late():\n    from suites import scorecard\n",
    ],
)
def test_an_import_against_the_direction_is_seen(source: str) -> None:
    assert "suites" in imported_packages(source)


def test_the_harness_finds_the_suite_by_its_entry_point() -> None:
    from harness.suite import load

    suite = load()
    assert list(suite.catalogue)[:2] == ["CORE-01", "CORE-02"]
    assert (suite.scenarios / "conftest.py").is_file()
