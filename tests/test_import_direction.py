"""Imports point down: every module of the project stands on a floor, and may import its
own part and the parts of the floors below it, nothing beside or above it. Suites and
dispatchers use the harness, the harness uses neither (it finds the suite through the
`mkdc.suites` entry point). Imports inside functions and under TYPE_CHECKING count: they
hide a dependency, they do not remove it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The floors, ground first. Each names its parts (a package, or a module); a module
# belongs to the longest part its name starts with.
FLOORS: tuple[tuple[str, ...], ...] = (
    # what a dispatcher under test is: nothing of the harness or the suite
    ("dispatchers",),
    # words and numbers every floor uses
    (
        "harness",
        "harness.errors",
        "harness.counts",
        "harness.stats",
        "harness.templates",
        "harness.console",
    ),
    ("harness.durations", "harness.userfiles", "harness.schema_errors"),
    # one check's result, as the suite hands it on
    ("harness.results",),
    # cluster plumbing: processes, binaries, certificates, kubeconfigs, objects
    ("harness.cluster",),
    # what an environment is made of (providers) and what a run records (recording)
    ("harness.providers", "harness.recording"),
    # everything a vendor hands in about a dispatcher
    ("harness.profile",),
    # what test processes use: a scenario's building blocks
    ("harness.scenarios",),
    # the report and its writers
    ("harness.report",),
    # the suite as the harness sees it (found by its entry point)
    ("harness.suite",),
    # a run from start to report; the suite's checks, scenarios and judge
    ("harness.orchestrate", "suites"),
    # commands: the CLI, tools beside it, and the suite's self-test, which starts runs
    ("harness.cli", "harness.tools", "suites.selftest"),
    # the self-test under each fault
    ("suites.faultmatrix",),
)

# Beside the floors, one direction: the harness finds the suite by its entry point and
# runs a dispatcher as a process, so it imports neither, whatever floor it stands on.
APART = {"harness": ("suites", "dispatchers"), "dispatchers": ("suites",)}


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


def part_of(module: str) -> tuple[int, str] | None:
    """The floor and the part `module` belongs to (the longest part naming it), or None
    for a module of no floor (the standard library, a third party)."""
    best: tuple[int, str] | None = None
    for floor, parts in enumerate(FLOORS):
        for part in parts:
            if module == part or module.startswith(part + "."):
                if best is None or len(part) > len(best[1]):
                    best = (floor, part)
    return best


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> list[Path]:
    return sorted(
        p for top in ("harness", "suites", "dispatchers") for p in (ROOT / top).rglob("*.py")
    )


def against_the_floors(module: str, imported: set[str]) -> list[str]:
    """The imports of `module` that reach beside or above its part. Only the most
    precise name of each import counts (`harness.cluster.kube`, not `harness` too)."""
    own = part_of(module)
    if own is None:
        return []
    wrong = []
    for name in sorted(imported):
        target = part_of(name)
        if target is None or target[1] == own[1] or _is_parent(name, imported):
            continue
        if target[0] >= own[0]:
            wrong.append(name)
    return wrong


def _is_parent(name: str, imported: set[str]) -> bool:
    """`name` is only the parent of a more precise import (`harness` of `harness.errors`)."""
    return any(other.startswith(name + ".") for other in imported)


def upward_imports() -> dict[tuple[str, str], str]:
    """(file, module it imports) for each import against the floors, with the parts."""
    modules = {module_name(path) for path in sources()}
    found = {}
    for path in sources():
        module = module_name(path)
        for name in against_the_floors(module, imported_modules(path.read_text())):
            target = max((m for m in modules if name == m or name.startswith(m + ".")), key=len)
            found[(str(path.relative_to(ROOT)), target)] = f"{part_of(module)} -> {part_of(name)}"
    return found


def across(rules: dict[str, tuple[str, ...]]) -> list[str]:
    """Each import, in a folder of `rules`, of a package that folder may not use."""
    return [
        f"{path.relative_to(ROOT)} imports {module}"
        for folder, banned in rules.items()
        for path in sorted((ROOT / folder).rglob("*.py"))
        for module in sorted(imported_modules(path.read_text()) & set(banned))
    ]


def test_the_harness_uses_neither_suites_nor_dispatchers() -> None:
    assert across(APART) == []


def test_every_module_stands_on_a_floor() -> None:
    assert [str(p.relative_to(ROOT)) for p in sources() if part_of(module_name(p)) is None] == []


def test_imports_point_down() -> None:
    assert upward_imports() == {}


@pytest.mark.parametrize(
    ("module", "source", "wrong"),
    [
        (
            "harness.cluster.kube",
            "from harness.profile import templates\n",
            ["harness.profile.templates"],
        ),
        (
            "harness.cluster.kube",
            "def late():\n    import harness.scenarios.turns\n",
            ["harness.scenarios.turns"],
        ),
        (
            "harness.providers.kind",
            "from harness.recording import timeline\n",
            ["harness.recording.timeline"],
        ),
        ("harness.report.model", "from harness import __version__, userfiles\n", []),
        ("harness.cluster.kube", "from harness.cluster import procs\nimport yaml\n", []),
        (
            "harness.orchestrate.run",
            "from suites.checks import CATALOGUE\n",
            ["suites.checks.CATALOGUE"],
        ),
        ("suites.judge", "from harness.orchestrate import run\n", ["harness.orchestrate.run"]),
        ("suites.selftest", "from harness.orchestrate import run\n", []),
        ("dispatchers.reference.kube", "import harness.cluster.kube\n", ["harness.cluster.kube"]),
    ],
)
def test_an_import_beside_or_above_is_seen(module: str, source: str, wrong: list[str]) -> None:
    assert against_the_floors(module, imported_modules(source)) == wrong


@pytest.mark.parametrize(
    "source",
    [
        "from suites.checks import CATALOGUE\n",
        "import suites.findings\n",
        "def late():\n    from suites import scorecard\n",
    ],
)
def test_an_import_of_the_suite_is_seen(source: str) -> None:
    assert "suites" in imported_modules(source)


def test_the_harness_finds_the_suite_by_its_entry_point() -> None:
    from harness.suite import load

    suite = load()
    assert list(suite.catalogue)[:2] == ["CORE-01", "CORE-02"]
    assert (suite.scenarios / "conftest.py").is_file()
