"""Pytest wiring for the e2e suites: options and the binaries they need."""

from __future__ import annotations

import os

import pytest

from harness import toolchain, versions

# The conformance scenarios run only inside a session made by `mkdc run`.
collect_ignore = [] if os.environ.get("MKDC_SESSION") else ["conformance"]


@pytest.fixture(scope="session")
def selected_versions() -> versions.Versions:
    """The version matrix point under test; its binaries must be built (`mkdc bins`)."""
    v = versions.select()
    missing = [c.key for c in toolchain.components(v) if not toolchain.is_built(c)]
    if missing:
        pytest.fail(
            f"binaries missing for {', '.join(missing)}: run `mkdc bins` first", pytrace=False
        )
    return v
