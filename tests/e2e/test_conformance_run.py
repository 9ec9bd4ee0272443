"""`mkdc run` end to end on an environment shaped as a vendor's dispatcher assumes.

The reference's conformance run on the quick checks is in test_existing_provider.py (on
clusters the run did not start, so it costs the suite no bring-up of its own), and a run on
two environments in test_example_go.py.
"""

from __future__ import annotations

import pytest

from tests.e2e.mkdc_cli import mkdc_run, profile_variant, report_of, results_of

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
