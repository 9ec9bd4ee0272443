"""The project's own end-to-end tests: real local clusters, built binaries."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import toolchain, versions

# The e2e modules whose tests took longest in `make test` (its --durations), started first:
# the e2e tests share the 2 cores in a parallel run, and a long one started last kept one
# worker busy for a minute after the others ran out of tests.
LONGEST_FIRST = (
    "test_example_go.py",
    "test_selftest_quick.py",
    "test_faults.py",
    "test_conformance_run.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest e2e modules first, the rest in collection order (a stable sort)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(
        key=lambda item: (
            rank.get(item.path.name, len(rank)) if "e2e" in item.path.parts else len(rank) + 1
        )
    )


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


DISCOVERY_CACHE_DIR = Path(tempfile.gettempdir())  # where the client would put its files


@pytest.fixture(autouse=True)
def no_discovery_cache_left() -> Iterator[None]:
    """The kubernetes client's dynamic client caches API discovery in
    <tmp>/osrcp-<hash>.json unless told otherwise: a file per cluster and run, left
    behind. Every client the harness makes keeps it in memory (``kube.InMemoryDiscovery``)."""
    before = set(DISCOVERY_CACHE_DIR.glob("osrcp-*.json"))
    yield
    left = set(DISCOVERY_CACHE_DIR.glob("osrcp-*.json")) - before
    assert not left, f"discovery cache files left behind: {sorted(map(str, left))[:3]}"
