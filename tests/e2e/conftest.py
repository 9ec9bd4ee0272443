"""The project's own end-to-end tests: real local clusters, built binaries."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cluster import toolchain, versions
from tests import schedule

# Seconds each e2e test took in a parallel `make test` beside the kind smoke (its
# --durations), for the order below; a test not listed counts as DEFAULT_SECONDS.
SECONDS = {
    "test_every_shipped_profile_starts_and_decides_a_check": 527,
    "test_faulty_dispatchers_sharing_an_environment_are_each_rejected_by_their_checks": 383,
    "test_the_go_example_from_its_deploy_folder_conforms_with_two_replicas": 307,
    "test_suite_passes_on_existing_clusters_and_leaves_nothing": 296,
    "test_discovering_clusters_once_fails_only_the_config_change_and_says_why": 258,
    "test_injected_environment_faults_are_never_blamed_on_the_dispatcher": 127,
    "test_a_vendor_shaped_environment_is_built_and_reported": 175,
    "test_each_start_failure_says_its_cause_and_what_it_lacked_lets_it_run": 130,
    "test_the_go_example_image_conforms_as_a_local_container": 50,
    "test_replicas_keep_a_kubelets_promises_in_two_environments": 184,
    "test_a_job_runs_on_exactly_one_worker_under_each_dispatcher_in_turn": 36,
    "test_a_killed_run_leaves_nothing_running_and_down_removes_its_directory": 32,
    "test_the_installed_wheel_judges_from_an_empty_directory": 191,
    "test_a_kueue_tree_whose_incremental_nominates_every_worker_is_rejected": 173,
    "test_a_replica_that_dies_mid_run_is_said_at_once_and_by_the_checks_after_it": 111,
    "test_an_init_container_from_a_registry_out_of_reach_is_named_in_one_line": 5,
}
DEFAULT_SECONDS = 60.0


@pytest.hookimpl(trylast=True)  # after -m and -k took theirs out: the slices are of the rest
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each xdist worker's first slice starts with its share of the e2e tests
    (``tests.schedule``); the unit tests fill the slices in collection order."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))

    def seconds(item: pytest.Item) -> float | None:
        if "e2e" not in item.path.parts:
            return None
        return float(SECONDS.get(item.originalname, DEFAULT_SECONDS))  # type: ignore[attr-defined]

    items[:] = schedule.deal(items, workers, seconds)


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
