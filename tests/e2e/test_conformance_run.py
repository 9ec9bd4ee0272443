"""`mkdc run` end to end on an environment shaped as a vendor's dispatcher assumes.

The reference's conformance run on the quick checks is in test_existing_provider.py (on
clusters the run did not start, so it costs the suite no bring-up of its own), and a run on
two environments, killed, in test_killed_run.py. The restart check (EXT-11) is judged here, on a
local environment: there the harness knows when a restarted dispatcher is back (it reads
Workloads again, in the manager's audit log), on existing clusters only when it was started.
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
    the older API version gets that environment (scenarios then run one at a time); on it
    the reference keeps its round through a restart (EXT-11), after CORE-04's scenario on
    the same environment rather than on a second one of its own."""

    def shaped(doc: dict) -> None:
        doc["metadata"]["name"] = "reference-gpu-shaped"
        doc["spec"]["environment"] = SHAPE

    profile = profile_variant(tmp_path / "shaped.yaml", shaped)
    report_dir = tmp_path / "report"
    # EXT-11's scenario runs on 3 workers
    checks = ("--checks", "CORE-04,EXT-11", "--workers", "3", "--environments", "1")
    proc = mkdc_run(profile, report_dir, *checks)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "one at a time" in proc.stderr
    report = report_of(report_dir)
    assert (results_of(report)["CORE-04"], results_of(report)["EXT-11"]) == ("passed", "passed")
    shape = report["environment"]["shape"]
    assert shape["workerClusterQueue"] == "gpu-cluster-queue"
    assert (shape["resource"], shape["flavor"]) == ("nvidia.com/gpu", "gpu-flavor")
    assert report["environment"]["kueueApiVersion"] == "v1beta1"
