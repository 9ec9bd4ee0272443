"""Which conformance scenario decides each check, read from the `@pytest.mark.checks(...)`
markers in suites/conformance/test_*.py with `ast`: the scenario's own docstring is the
description, so it cannot drift from what the scenario does. No pytest, no clusters."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

CONFORMANCE = Path(__file__).resolve().parent.parent / "conformance"
_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")


@dataclass(frozen=True)
class Decider:
    """A scenario whose checks marker names a check: test module (file stem), test
    function, the first sentence of the test's docstring, and whether it runs alone
    (its ``exclusive`` marker)."""

    module: str
    test: str
    summary: str
    alone: bool = False


def first_sentence(doc: str | None) -> str:
    """The first sentence of `doc`, whitespace folded; "" without a docstring."""
    text = " ".join((doc or "").split())
    found = _SENTENCE.match(text)
    return found.group(1) if found else text


def markers(source: str, module: str) -> list[tuple[Decider, tuple[str, ...]]]:
    """Each test function of one module's `source` with the check IDs of its checks
    marker, in file order; tests without the marker are left out. A marker argument that
    is not a string literal raises ValueError (it could not be read without running it)."""
    out: list[tuple[Decider, tuple[str, ...]]] = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in node.decorator_list:
            if not (isinstance(decorator, ast.Call) and _is_mark(decorator.func, "checks")):
                continue
            ids = []
            for arg in decorator.args:
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    raise ValueError(
                        f"{module}.{node.name}: checks marker arguments must be strings"
                    )
                ids.append(arg.value)
            alone = any(_is_mark(d, "exclusive") for d in node.decorator_list)
            summary = first_sentence(ast.get_docstring(node))
            decider = Decider(module, node.name, summary, alone)
            out.append((decider, tuple(ids)))
    return out


def deciders(directory: Path = CONFORMANCE) -> dict[str, list[Decider]]:
    """Check ID -> the scenarios whose checks marker names it, over `directory`'s
    test_*.py (sorted by file name). Only IDs some marker names are keys, unknown ones
    included: validating them against the catalogue is the caller's business."""
    out: dict[str, list[Decider]] = {}
    for path in sorted(directory.glob("test_*.py")):
        for decider, ids in markers(path.read_text(), path.stem):
            for check_id in ids:
                out.setdefault(check_id, []).append(decider)
    return out


def _is_mark(func: ast.expr, name: str) -> bool:
    """`pytest.mark.<name>` or `mark.<name>`."""
    return (
        isinstance(func, ast.Attribute)
        and func.attr == name
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "mark"
    )
