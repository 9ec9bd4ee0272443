"""Imports flow one way: suites and dispatchers use the harness, the harness uses neither
(it finds the suite through the `mkdc.suites` entry point). Imports inside functions count:
they hide a cycle, they do not remove it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"harness": ("suites", "dispatchers"), "dispatchers": ("suites",)}


# inside the harness, by role: plumbing below what test processes use, below a run
LAYERS = {
    "harness/cluster": ("harness.scenarios", "harness.orchestrate"),
    "harness/scenarios": ("harness.orchestrate",),
}


def imported_modules(source: str) -> set[str]:
    """Every module named by an import anywhere in `source`, with its parents."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        for name in names:
            parts = name.split(".")
            found |= {".".join(parts[: i + 1]) for i in range(len(parts))}
    return found


def against(rules: dict[str, tuple[str, ...]]) -> list[str]:
    """Each import, in a folder of `rules`, of a module that folder may not use."""
    return [
        f"{path.relative_to(ROOT)} imports {module}"
        for folder, banned in rules.items()
        for path in sorted((ROOT / folder).rglob("*.py"))
        for module in sorted(imported_modules(path.read_text()) & set(banned))
    ]


def test_harness_layers_import_downward() -> None:
    assert against(LAYERS) == []


def test_a_layer_crossed_upward_is_seen() -> None:
    assert "harness.orchestrate" in imported_modules("from harness.orchestrate import run\n")
    assert "harness.scenarios" in imported_modules("from harness import scenarios\n")


def test_imports_flow_one_way() -> None:
    assert against(FORBIDDEN) == []


@pytest.mark.parametrize(
    "source",
    [
        "from suites.checks import CATALOGUE\n",
        "import suites.findings\n",
        "def late():\n    from suites import scorecard\n",
    ],
)
def test_an_import_against_the_direction_is_seen(source: str) -> None:
    assert "suites" in imported_modules(source)


def test_the_harness_finds_the_suite_by_its_entry_point() -> None:
    from harness.suite import load

    suite = load()
    assert list(suite.catalogue)[:2] == ["CORE-01", "CORE-02"]
    assert (suite.scenarios / "conftest.py").is_file()
