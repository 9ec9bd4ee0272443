"""The fault matrix counts what each fault did to each dispatcher's checks."""

from __future__ import annotations

from suites import faultmatrix
from suites.selftest import Expectation, Outcome


def outcome(**results: tuple[str, str]) -> Outcome:
    return Outcome(Expectation("", (), profile="reference"), dict(results))


def test_a_cell_counts_passed_undecided_failed_and_names_failures():
    rode_it_out = outcome(CORE_04=("passed", ""), EXT_05=("undecided", "environment: etcd"))
    blamed = outcome(CORE_01=("failed", "nominated w9"), CORE_04=("passed", ""))
    assert faultmatrix.summarize(rode_it_out) == "1 / 1 / 0"
    assert faultmatrix.summarize(blamed) == "1 / 0 / 1 (**failed: CORE_01**)"
    assert faultmatrix.excused_by_environment(rode_it_out) == 1
    broken = Outcome(Expectation("", ()), error="mkdc run exited 2")
    assert faultmatrix.summarize(broken) == "error: mkdc run exited 2"


def test_the_matrix_has_a_row_per_dispatcher_and_a_column_per_fault():
    cells = {
        ("reference", "etcd-restart"): outcome(CORE_04=("undecided", "environment: etcd")),
        ("reference", "kueue-crash"): outcome(CORE_04=("failed", "late")),
    }
    text = faultmatrix.render(cells, ["reference"], ["etcd-restart", "kueue-crash"])
    assert text.splitlines()[0] == "| dispatcher | etcd-restart | kueue-crash |"
    assert "| reference | 0 / 1 / 0 | 0 / 0 / 1 (**failed: CORE_04**) |" in text
    assert "1 results excused by an environment fault; 1 runs with a failure" in text
