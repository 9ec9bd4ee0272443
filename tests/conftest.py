"""Settings every unit test shares: the property tests' fixed hypothesis profile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests import secrets_left

# CI: the same examples on every run (derandomize), no example database, no deadline (a
# loaded machine must not fail a case); HYPOTHESIS_PROFILE=explore for a longer, random
# search when looking for new defects.
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=100,
    print_blob=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "explore",
    parent=settings.get_profile("ci"),
    derandomize=False,
    max_examples=1000,  # ten times the CI examples of every bad-input test
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


_PEM_FILES_AT_START: set[Path] = set()
_SECRETS_LEFT: list[Path] = []


def _controller(session: pytest.Session) -> bool:
    """The single process of a run, or a parallel run's controller (not its workers)."""
    return not hasattr(session.config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if _controller(session):
        _PEM_FILES_AT_START.update(secrets_left.pem_files())


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a parallel run's worker: hand this worker's tally of bad inputs to the controller.
    In the controller: fail the session if its processes left key files in the temp dir."""
    from tests import bad_input

    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["badInput"] = bad_input.tally()
    if _controller(session):
        _SECRETS_LEFT.extend(secrets_left.left_since(_PEM_FILES_AT_START))
        if _SECRETS_LEFT:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """In a parallel run's controller: add up what each worker tried."""
    from tests import bad_input

    bad_input.add_tally(getattr(node, "workeroutput", {}).get("badInput") or {})


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests import bad_input

    for line in bad_input.summary():
        terminalreporter.write_line(line)
    if _SECRETS_LEFT:
        names = ", ".join(map(str, _SECRETS_LEFT[:5]))
        terminalreporter.write_line(
            f"FAILED: {len(_SECRETS_LEFT)} key or certificate file(s) left in the temp "
            f"directory (a process that read a kubeconfig was killed outside its run "
            f"directory's TMPDIR): {names}",
            red=True,
        )
