"""Each conformance scenario declared once, as a value: the checks it decides, how it runs
(alone, on clusters of its own, only in the full run, for every dispatcher, with a
provider ability), and its description, the first sentence of its docstring, so it
cannot drift from what the scenario does. `@conformance(...)` on a test function makes
the value and the pytest marks that pytest reads (`exclusive` also by the harness's test
process plugin); the planner (`mkdc checks`, the run's plan) reads the values of the
modules it loads. As Gateway API's conformance suite declares a `ConformanceTest`."""

from __future__ import annotations

import importlib.util
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from suites.checks.catalogue import CATALOGUE

CONFORMANCE = Path(__file__).resolve().parent.parent / "conformance"
_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")
Test = TypeVar("Test", bound=Callable[..., Any])


@dataclass(frozen=True)
class Conformance:
    """One conformance scenario: its test module (file stem) and function, its
    description, and what the suite and the planner need to know of it."""

    module: str
    test: str
    description: str
    checks: tuple[str, ...]
    exclusive: bool = False  # kills the dispatcher or loads Kueue: runs alone
    own_clusters: bool = False  # changes the cluster set: its own MultiKueueClusters
    slow: bool = False  # only in the full run (--full)
    scorecard: bool = False  # measured for every dispatcher, claimed or not
    needs: str | None = None  # a provider ability (harness.providers), None: any provider

    @property
    def features(self) -> tuple[str, ...]:
        """The features its checks belong to (empty for core checks)."""
        found = (CATALOGUE[c].feature for c in self.checks if c in CATALOGUE)
        return tuple(dict.fromkeys(f for f in found if f is not None))

    def marks(self) -> list[pytest.MarkDecorator]:
        """The pytest marks that say it to pytest (and to `-m` expressions)."""
        flags = (
            (self.exclusive, pytest.mark.exclusive),
            (self.own_clusters, pytest.mark.own_clusters),
            (self.slow, pytest.mark.slow),
            (self.scorecard, pytest.mark.scorecard),
        )
        marks = [pytest.mark.checks(*self.checks), *(mark for on, mark in flags if on)]
        return marks + ([pytest.mark.needs(self.needs)] if self.needs else [])


_DECLARED: dict[Callable[..., Any], Conformance] = {}


def conformance(
    *checks: str,
    exclusive: bool = False,
    own_clusters: bool = False,
    slow: bool = False,
    scorecard: bool = False,
    needs: str | None = None,
) -> Callable[[Test], Test]:
    """Declare the decorated test a conformance scenario deciding `checks`."""

    def declare(test: Test) -> Test:
        value = Conformance(
            Path(test.__code__.co_filename).stem,
            test.__name__,
            first_sentence(test.__doc__),
            tuple(checks),
            exclusive,
            own_clusters,
            slow,
            scorecard,
            needs,
        )
        _DECLARED[test] = value
        for mark in value.marks():
            test = mark(test)
        return test

    return declare


def declared(test: Callable[..., Any]) -> Conformance | None:
    """The value `@conformance` declared for `test`, None for a test it did not."""
    return _DECLARED.get(test)


def first_sentence(doc: str | None) -> str:
    """The first sentence of `doc`, whitespace folded; "" without a docstring."""
    text = " ".join((doc or "").split())
    found = _SENTENCE.match(text)
    return found.group(1) if found else text


def scenarios(directory: Path = CONFORMANCE) -> list[Conformance]:
    """Every scenario declared in `directory`'s test_*.py (sorted by file name), in file
    order: each module is loaded (its declarations run; nothing is collected or run)."""
    found: list[Conformance] = []
    for path in sorted(directory.glob("test_*.py")):
        spec = importlib.util.spec_from_file_location(f"_conformance.{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        tests = (v for v in vars(module).values() if inspect.isfunction(v))
        found += [v for v in map(declared, tests) if v is not None]
    return found


def deciders(directory: Path = CONFORMANCE) -> dict[str, list[Conformance]]:
    """Check ID -> the scenarios that decide it, over `directory`. Only IDs some scenario
    names are keys, unknown ones included: validating them against the catalogue is the
    caller's business."""
    out: dict[str, list[Conformance]] = {}
    for scenario in scenarios(directory):
        for check_id in scenario.checks:
            out.setdefault(check_id, []).append(scenario)
    return out
