"""The catalogue against the scenarios: each check is decided by exactly one scenario
declared with `@conformance(...)` (read from the values the modules declare, no
clusters), and lives in the check module of that scenario's area."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from harness.check_terms import OWNERS
from harness.recording.timeline import Timeline
from harness.suite import load as load_suite
from suites.checks import CATALOGUE, Bounds, Verdict, bounds_doc
from suites.checks.catalogue import Check, catalogue_order, every_timeline, register
from suites.checks.scenarios import (
    CONFORMANCE,
    Conformance,
    conformance,
    deciders,
    declared,
    first_sentence,
    scenarios,
)


def coverage_problems(found: Mapping[str, list[Conformance]]) -> list[str]:
    """What is wrong with `found` (deciders()): a check no scenario (or several) decides,
    except the ones judged on every timeline, which may be named by any number; an ID
    that is not in the catalogue."""
    problems = [
        f"{cid}: unknown check in {_where(found[cid])}" for cid in found if cid not in CATALOGUE
    ]
    for cid in CATALOGUE:
        deciding = found.get(cid, [])
        if CATALOGUE[cid].every_timeline:
            continue
        if not deciding:
            problems.append(f"{cid}: no scenario decides it")
        elif len(deciding) > 1:
            problems.append(f"{cid}: decided by {len(deciding)} scenarios: {_where(deciding)}")
    return problems


def _where(ds: list[Conformance]) -> str:
    return ", ".join(f"{d.module}.{d.test}" for d in ds)


def conformance_copy(tmp_path: Path, module: str, old: str, new: str) -> Path:
    """The conformance scenarios copied to tmp_path, with `old` replaced in one module."""
    for path in CONFORMANCE.glob("test_*.py"):
        shutil.copy(path, tmp_path / path.name)
    target = tmp_path / f"{module}.py"
    source = target.read_text()
    assert old in source
    target.write_text(source.replace(old, new, 1))
    return tmp_path


def test_every_check_is_decided_by_exactly_one_scenario() -> None:
    assert coverage_problems(deciders()) == []


def test_checks_judged_on_every_timeline_are_declared_so() -> None:
    assert every_timeline() == ["CORE-01", "CORE-02", "CORE-05"]


def test_decision_points_are_declared_on_the_checks() -> None:
    decided = [cid for cid, c in CATALOGUE.items() if c.decided_by_wait is not None]
    assert decided == [
        "CORE-04",
        "CORE-06",
        "CORE-07",
        "CORE-09",
        "EXT-09",
        "EXT-11",
        "EXT-13",
        "EXT-14",
    ]


def test_removed_declaration_leaves_its_check_undecided(tmp_path: Path) -> None:
    src = conformance_copy(tmp_path, "test_ordering", '@conformance("EXT-07")\n', "")
    assert coverage_problems(deciders(src)) == ["EXT-07: no scenario decides it"]


def test_check_decided_by_two_scenarios_fails(tmp_path: Path) -> None:
    src = conformance_copy(
        tmp_path, "test_resilience", '@conformance("EXT-10"', '@conformance("EXT-10", "EXT-07"'
    )
    assert coverage_problems(deciders(src)) == [
        "EXT-07: decided by 2 scenarios: test_ordering.test_ordered_dispatch, "
        "test_resilience.test_skips_inactive_clusters"
    ]


def test_unknown_id_in_a_declaration_fails(tmp_path: Path) -> None:
    src = conformance_copy(
        tmp_path, "test_ordering", '@conformance("EXT-07")', '@conformance("EXT-07", "EXT-99")'
    )
    assert coverage_problems(deciders(src)) == [
        "EXT-99: unknown check in test_ordering.test_ordered_dispatch"
    ]


def test_checks_judged_on_every_timeline_need_no_scenario(tmp_path: Path) -> None:
    src = conformance_copy(tmp_path, "test_core_placement", '@conformance("CORE-01")\n', "")
    assert "CORE-01" not in deciders(src)
    assert coverage_problems(deciders(src)) == []


def test_deciders_read_the_scenarios() -> None:
    found = deciders()
    escalation = Conformance(
        "test_escalation",
        "test_timeout_escalation",
        "No worker has room until three escalations came (fewer where the config, step or "
        "time budget allow fewer); each escalation is judged on its own.",
        ("EXT-05", "EXT-06"),
    )
    assert found["EXT-05"] == found["EXT-06"] == [escalation]
    assert escalation.features == ("Escalation",)
    assert [d.module for d in found["CORE-09"]] == ["test_core_burst"]
    assert all(d.exclusive for d in found["CORE-09"])
    assert all(d.description.endswith(".") for ds in found.values() for d in ds)


def test_a_declaration_is_one_value_pytest_and_the_planner_read(tmp_path: Path) -> None:
    source = '''
from suites.checks.scenarios import conformance

@conformance("CORE-03", "EXT-01", exclusive=True, needs="faults")
def test_a(scenario):
    """First sentence here. Second one
    is not part of it."""

def test_undeclared(scenario):
    """Not a conformance scenario."""
'''
    (tmp_path / "test_x.py").write_text(source)
    (value,) = scenarios(tmp_path)
    assert value == Conformance(
        "test_x",
        "test_a",
        "First sentence here.",
        ("CORE-03", "EXT-01"),
        exclusive=True,
        needs="faults",
    )

    @conformance("CORE-04", own_clusters=True, slow=True)
    def test_b(scenario: object) -> None: ...

    said = declared(test_b)
    assert said is not None and said.checks == ("CORE-04",) and said.own_clusters
    marks = {m.name: m.args for m in getattr(test_b, "pytestmark", [])}  # where pytest keeps them
    assert marks == {"checks": ("CORE-04",), "own_clusters": (), "slow": ()}


def test_first_sentence() -> None:
    assert first_sentence("One, two.\n  Three.") == "One, two."
    assert first_sentence("Placed on w1 at t=1.5s: placed again") == (
        "Placed on w1 at t=1.5s: placed again"
    )
    assert first_sentence(None) == ""


def test_each_check_lives_in_its_scenarios_area() -> None:
    """suites/checks/<area>.py holds the checks suites/conformance/test_<area>.py decides."""
    for cid, ds in deciders().items():
        area = CATALOGUE[cid].evaluate.__module__.rpartition(".")[2]
        assert [d.module for d in ds] == [f"test_{area}"] * len(ds), cid


def test_catalogue_order_whatever_the_registration_order() -> None:
    assert list(CATALOGUE) == [f"CORE-{n:02}" for n in range(1, 11)] + [
        f"EXT-{n:02}" for n in range(1, 15)
    ]
    registry: dict[str, Check] = {}
    for check in reversed(list(CATALOGUE.values())):
        register(registry, check)
    assert list(registry) == list(CATALOGUE)


def test_register_refuses_a_duplicate_or_malformed_id() -> None:
    registry = dict(CATALOGUE)
    with pytest.raises(ValueError, match="CORE-01 declared twice"):
        register(registry, CATALOGUE["CORE-01"])

    def evaluate(tl: Timeline, b: Bounds) -> Verdict:
        return Verdict.ok()

    with pytest.raises(ValueError, match="CHK-1"):
        register(registry, Check("CHK-1", "Odd", None, "Odd.", evaluate))
    assert catalogue_order("EXT-10") > catalogue_order("EXT-9") > catalogue_order("CORE-09")


def test_the_suite_says_which_checks_run_alone() -> None:
    """What `mkdc run` gives a second environment: the burst and the restarts."""
    suite = load_suite()
    alone = {c for c in suite.catalogue if suite.runs_alone(c)}
    assert alone == {"CORE-09", "EXT-11", "EXT-12", "EXT-13", "EXT-14"}
    # judged on every timeline only (CORE-01 also has a scenario of its own)
    assert {c for c in suite.catalogue if suite.runs_alone(c) is None} == {"CORE-02", "CORE-05"}


def test_the_suite_counts_the_scenarios_that_share_the_environment() -> None:
    """What `mkdc run` starts test processes for: no more than the selection's shared scenarios."""
    suite = load_suite()
    assert suite.shared_scenarios(["CORE-08"]) == 1
    assert suite.shared_scenarios(["CORE-08", "EXT-11", "EXT-12"]) == 1  # those two run alone
    assert suite.shared_scenarios(["CORE-02", "CORE-05"]) == 0  # every timeline's, none their own
    everything = suite.shared_scenarios(suite.catalogue)
    assert everything > suite.shared_scenarios(["CORE-03", "CORE-04"]) >= 2


def test_every_check_says_whose_each_of_its_bounds_is() -> None:
    """Declared once on the check: `mkdc checks`, docs/checks.md and report.html read it."""
    for check in CATALOGUE.values():
        assert check.bounds, f"{check.id} declares no bound"
        for bound in check.bounds:
            assert bound.owner in OWNERS and bound.what and bound.why, (check.id, bound)


def test_gates_the_checks_need_are_handed_to_the_harness() -> None:
    """EXT-04's fan-out is hidden while the manager orchestrates preemption."""
    assert load_suite().kueue_gates() == {"MultiKueueOrchestratedPreemption": False}


def test_docs_table_of_bounds_is_the_catalogues() -> None:
    text = bounds_doc.DOC.read_text()
    assert text == bounds_doc.rewritten(text), "run python -m suites.checks.bounds_doc"
