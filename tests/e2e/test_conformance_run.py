"""`mkdc run` end to end: the reference dispatcher conforms, and the report verifies.

This is the quick e2e subset of `make test`: the whole session (environment,
dispatcher identity and process, recorder, scenarios in parallel, report), run as a
user runs it, on checks whose scenarios take seconds with the reference's 10 s rounds.
"""

from __future__ import annotations

import pytest

from tests.e2e.mkdc_cli import (
    assert_conforms,
    mkdc_run,
    profile_variant,
    report_of,
    results_of,
)

QUICK = "CORE-01,CORE-03,CORE-04,CORE-07,EXT-05,EXT-06,EXT-07"
# the dispatcher's restart runs alone: on a second environment, beside the quick checks
ALONE = "EXT-11"
# the fewest workers every scenario of these checks runs on (CORE-01's needs 3): each worker
# more is an apiserver, Kueue and their CPU in a suite whose e2e tests share 2 cores
WORKERS = "3"


@pytest.mark.e2e
def test_reference_conforms_on_the_quick_checks(selected_versions, tmp_path) -> None:
    """With the dispatcher's restart on a second environment, beside them."""
    report_dir = tmp_path / "report"
    checks = f"{QUICK},{ALONE}"
    proc = mkdc_run("reference", report_dir, "--checks", checks, "-n", "2", "--workers", WORKERS)
    report = assert_conforms(proc, report_dir, checks)
    assert (report_dir / "junit.xml").exists() and (report_dir / "report.html").exists()
    assert report["environment"]["environments"] == 2
    assert "second environment: environment ready" in proc.stderr


SHAPE = {
    "workerClusterQueue": "gpu-cluster-queue",
    "resource": "nvidia.com/gpu",
    "flavor": "gpu-flavor",
    "workerKubeconfigSecret": "{cluster}-kubeconfig",
    "priorityClasses": ["low", "high"],
    "apiVersion": "v1beta1",
}


@pytest.mark.e2e
def test_a_vendor_shaped_environment_is_built_and_reported(selected_versions, tmp_path) -> None:
    """A dispatcher that assumes one fixed worker ClusterQueue, GPUs in a named flavor and
    the older API version gets that environment (scenarios then run one at a time)."""

    def shaped(doc: dict) -> None:
        doc["metadata"]["name"] = "reference-gpu-shaped"
        doc["spec"]["environment"] = SHAPE

    profile = profile_variant(tmp_path / "shaped.yaml", shaped)
    report_dir = tmp_path / "report"
    # CORE-04's scenario needs the claimed stepSize + 1 workers: 2
    proc = mkdc_run(profile, report_dir, "--checks", "CORE-04", "--workers", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "one at a time" in proc.stderr
    report = report_of(report_dir)
    assert results_of(report)["CORE-04"] == "passed"
    shape = report["environment"]["shape"]
    assert shape["workerClusterQueue"] == "gpu-cluster-queue"
    assert (shape["resource"], shape["flavor"]) == ("nvidia.com/gpu", "gpu-flavor")
    assert report["environment"]["kueueApiVersion"] == "v1beta1"
