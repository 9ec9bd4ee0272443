"""The existing provider, for real: the suite runs against clusters it did not start.

A local environment stands in for a vendor's clusters, named as a vendor names them.
`mkdc run --provider existing` is pointed at its kubeconfigs; the reference dispatcher
must pass, and afterwards the clusters must hold nothing the suite created.
"""

from __future__ import annotations

import pytest

from harness import inventory
from harness.providers.local import LocalProvider, running
from tests.e2e.mkdc_cli import mkdc_run

REFERENCE = "mkdc.example/reference"
CHECKS = "CORE-01,CORE-04,EXT-05"
VENDOR_NAMES = ["east-cluster", "west-cluster", "gpu-reserved-cluster"]


@pytest.mark.e2e
def test_suite_passes_on_existing_clusters_and_leaves_nothing(selected_versions, tmp_path) -> None:
    provider = LocalProvider(
        selected_versions,
        workers=VENDOR_NAMES,
        dispatcher_name=REFERENCE,
        write_mode="admission-policy",
    )
    with running(provider) as env:
        before = inventory.snapshot(env)
        clusters = [f"--cluster={w.name}={w.kubeconfig}" for w in env.workers]
        args = ["--provider", "existing", "--checks", CHECKS]
        args += ["--cluster", f"manager={env.manager.kubeconfig}", *clusters]
        proc = mkdc_run("reference", tmp_path / "r", *args)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert inventory.added(before, inventory.snapshot(env)) == {}


@pytest.mark.e2e
def test_wrong_dispatcher_name_is_one_clear_line(selected_versions, tmp_path) -> None:
    provider = LocalProvider(selected_versions, workers=1, dispatcher_name="example.com/other")
    with running(provider) as env:
        args = ["--provider", "existing", "--cluster", f"manager={env.manager.kubeconfig}"]
        args += ["--cluster", f"{env.workers[0].name}={env.workers[0].kubeconfig}"]
        proc = mkdc_run("reference", tmp_path / "r", *args, timeout=300)
        assert proc.returncode == 2
        lines = [line for line in proc.stderr.splitlines() if "error" in line]
        assert len(lines) == 1 and "example.com/other" in lines[0], proc.stderr
