"""Smoke of the kind provider: a manager and one worker as real kind clusters (node and
Kueue images built here when no registry is in reach), one Job placed once, and nothing
left afterwards: no container, no network this run made, no run directory. mkdc runs as a
vendor's CI installs it: the wheel in a fresh virtualenv, from an empty directory."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.e2e import installed
from tests.e2e.mkdc_cli import assert_conforms


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=False)


def _kind_containers() -> list[str]:
    out = _docker("ps", "-a", "--filter", "label=io.x-k8s.kind.cluster", "--format", "{{.Names}}")
    return [name for name in out.stdout.split() if name.startswith("mkdc-")]


def _has_kind_network() -> bool:
    return _docker("network", "inspect", "kind").returncode == 0


@pytest.mark.e2e
def test_a_job_is_placed_once_on_kind_and_nothing_is_left(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    engine = _docker("info", "--format", "{{.ServerVersion}}")
    if engine.returncode != 0:  # a failure, not a skip: .ci/run starts an engine
        pytest.fail(
            "no Docker engine answers: run `sudo scripts/docker-engine` (or start yours)",
            pytrace=False,
        )
    assert _kind_containers() == [], "kind clusters of an earlier run are still there"
    network_before = _has_kind_network()
    mkdc = installed.install(tmp_path / "install")
    empty = tmp_path / "empty"
    empty.mkdir()
    # short: the run's control socket lives in its run directory (AF_UNIX paths are short)
    private_tmp = Path(tempfile.mkdtemp(prefix="mkdc-smoke-"))
    request.addfinalizer(lambda: shutil.rmtree(private_tmp, ignore_errors=True))
    report_dir = empty / "report"
    args = ["run", "--profile", "reference", "--report-dir", str(report_dir)]
    args += ["--provider", "kind", "--workers", "1", "--checks", "CORE-08"]
    # a TMPDIR of its own: the run directory it makes and removes is seen there alone (the
    # unit tests beside it make and remove theirs in the machine's)
    proc = installed.mkdc(mkdc, args, empty, tmpdir=private_tmp)
    report = assert_conforms(proc, report_dir, "CORE-08")
    assert report["environment"]["provider"] == "kind"
    assert _kind_containers() == []
    assert _has_kind_network() == network_before
    assert list(private_tmp.iterdir()) == []
