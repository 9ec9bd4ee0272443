"""The Go example as a vendor ships it, a container image (built here from its module):
judged as a Docker container beside the local clusters, and as a Deployment in the
manager of kind clusters; no container, cluster or run directory left afterwards."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from harness.cluster.inventory import RUN_LABEL
from tests.e2e.mkdc_cli import assert_conforms, mkdc_run

CHECKS = "CORE-04,CORE-08"
IMAGE = "mkdc.local/example-go:dev"


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=False)


def _run_containers() -> list[str]:
    """Containers of any mkdc run (dispatcher replicas carry the run label)."""
    out = _docker("ps", "-a", "--filter", f"label={RUN_LABEL}", "--format", "{{.Names}}")
    return out.stdout.split()


def _kind_containers() -> list[str]:
    out = _docker("ps", "-a", "--filter", "label=io.x-k8s.kind.cluster", "--format", "{{.Names}}")
    return [name for name in out.stdout.split() if name.startswith("mkdc-")]


def _need_docker() -> None:
    if _docker("info", "--format", "{{.ServerVersion}}").returncode != 0:
        pytest.fail(
            "no Docker engine answers: run `sudo scripts/docker-engine` (or start yours)",
            pytrace=False,
        )


@pytest.mark.e2e
def test_the_go_example_image_conforms_as_a_local_container(
    selected_versions, tmp_path: Path
) -> None:
    _need_docker()
    assert _run_containers() == [], "dispatcher containers of an earlier run are still there"
    report_dir = tmp_path / "report"
    proc = mkdc_run("example-go-image", report_dir, "--checks", CHECKS, "--workers", "2")
    report = assert_conforms(proc, report_dir, CHECKS)
    assert report["environment"]["dispatcherRun"] == f"container image {IMAGE}"
    assert "starting the dispatcher as containers" in proc.stderr
    assert _run_containers() == []
    assert _docker("image", "inspect", IMAGE).returncode == 0  # loaded, and kept


@pytest.mark.e2e
@pytest.mark.slow
def test_the_go_example_image_conforms_as_a_deployment_on_kind(tmp_path: Path) -> None:
    _need_docker()
    assert _kind_containers() == [], "kind clusters of an earlier run are still there"
    dirs_before = set(Path(tempfile.gettempdir()).glob("mkdc-kind-*"))
    report_dir = tmp_path / "report"
    proc = mkdc_run(
        "example-go-image", report_dir, "--provider", "kind", "--workers", "2", "--checks", CHECKS
    )
    report = assert_conforms(proc, report_dir, CHECKS)
    assert report["environment"]["provider"] == "kind"
    assert report["environment"]["dispatcherRun"] == f"container image {IMAGE}"
    assert "as Deployments in the manager" in proc.stderr
    assert _kind_containers() == []
    assert set(Path(tempfile.gettempdir()).glob("mkdc-kind-*")) == dirs_before
