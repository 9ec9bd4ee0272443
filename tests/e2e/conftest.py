"""The project's own end-to-end tests: real local clusters, built binaries."""

from __future__ import annotations

import pytest

from harness import toolchain, versions


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
