"""The parallel test order: each worker's first slice starts with its share of the slow
tests, so none of them waits for a steal and none ends the run alone."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.e2e.conftest import SECONDS as E2E_SECONDS
from tests.schedule import deal, slices

SECONDS = {"a": 130.0, "b": 126.0, "c": 119.0, "d": 100.0, "e": 79.0, "f": 45.0}


def test_slices_are_worksteals_first_split() -> None:
    assert slices(983, 3) == [327, 328, 328]
    assert slices(2, 3) == [0, 1, 1] and slices(5, 1) == [5]


def test_slow_tests_are_dealt_longest_first_onto_the_slice_that_ends_first() -> None:
    items = [*"uvwxyz", *SECONDS, *"pqrstlmn"]  # unit tests around the slow ones
    order = deal(items, 3, SECONDS.get)
    first, second, third = order[:6], order[6:13], order[13:]  # slices(20, 3) == [6, 7, 7]
    assert (first[:2], second[:2], third[:2]) == (["a", "f"], ["b", "e"], ["c", "d"])
    assert sorted(order) == sorted(items)
    assert [i for i in order if i not in SECONDS] == [*"uvwxyz", *"pqrstlmn"]  # kept in order


def test_one_worker_runs_the_slow_tests_first() -> None:
    order = deal(["u", "e", "v", "a"], 1, SECONDS.get)
    assert order == ["a", "e", "u", "v"]


def test_a_slice_holds_no_more_than_worksteal_gives_it() -> None:
    # slices of 2 and 2: c joins b (126 s < 130 s), which fills that slice; u fills a's
    assert deal(["a", "b", "c", "u"], 2, SECONDS.get) == ["a", "u", "b", "c"]
    # slices of 1, 1 and 2: d goes to c's, the only one with room left
    assert deal(["a", "b", "c", "d"], 3, SECONDS.get) == ["a", "b", "c", "d"]


def test_the_e2e_order_names_only_tests_that_exist() -> None:
    """A renamed e2e test falls back to the default estimate and unbalances the slices."""
    e2e = Path(__file__).parent / "e2e"
    names = {
        node.name
        for path in e2e.glob("test_*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }
    assert set(E2E_SECONDS) <= names, set(E2E_SECONDS) - names
