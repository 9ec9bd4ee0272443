"""The Go example dispatcher, judged as a vendor's would be: built from its Go module by
the harness, run unmodified as in a Pod (in-cluster config, leader election in the Pod's
namespace, settings from $DISPATCHER_CONFIG).

Its discover-once variant, in the shared cluster scope, is the pattern the suite must
explain rather than bury: it fails the check that changes the cluster set, and only that.
"""

from __future__ import annotations

import pytest

from harness.report import verify_report
from harness.suite import catalogue
from tests.e2e.mkdc_cli import (
    assert_conforms,
    mkdc_run,
    profile_variant,
    report_of,
    results_of,
)

CORE_SUBSET = "CORE-01,CORE-03,CORE-04,CORE-07,CORE-08"
# CORE-07 fails here only once its bound has passed, and the bound holds a placement slack
# (60 s by default): with 15 s, CORE-04's bound (its one 10 s round and the slack) is over
# twice the 11.2 s its placement took (2026-12-04), and the test is about which check
# fails and why, not about the slack
SLACK = "placement_slack=15s"


@pytest.mark.e2e
def test_the_go_example_from_its_deploy_folder_conforms_with_two_replicas(
    selected_versions, tmp_path
) -> None:
    """Started from dispatchers/example-go/deploy/ (no run.command): two replicas, each
    listening on :8080 and :8081 on a network of its own. EXT-12 (leader failover) runs
    after the others on the same environment: a second one would cost make test four
    clusters, and the killed-run test brings up two."""
    report_dir = tmp_path / "report"
    checks = f"{CORE_SUBSET},EXT-12"
    # one environment, three scenarios at a time (as in test_existing_provider.py)
    args = ("--checks", checks, "--workers", "3", "--environments", "1", "-n", "3")
    proc = mkdc_run("example-go-deploy-ha", report_dir, *args)
    assert_conforms(proc, report_dir, checks)
    assert "example-go: built into" in proc.stderr or "example-go: cached in" in proc.stderr
    assert "each replica on a network of its own (2 replica(s))" in proc.stderr
    assert (
        "made before the dispatcher starts: ConfigMap kueue-system/example-dispatcher-settings"
        in (proc.stderr)
    )
    environment = report_of(report_dir)["environment"]
    assert environment["dispatcherRun"] == "deploy folder (Deployment example-dispatcher)"
    assert environment["replicaNetwork"] == "one of its own per replica (pasta)"
    assert environment["notApplied"] == []  # its probe and resources too
    replicas = {r["identity"]: r for r in environment["replicas"]}
    account = "system:serviceaccount:kueue-system:example-dispatcher"
    assert set(replicas) == {f"{account}-0", f"{account}-1"}  # its own ServiceAccount's name
    # its liveness probe (httpGet :8081/healthz, in each replica's network) never failed
    assert all(r["restarts"] == 0 and r["peakMemoryBytes"] > 0 for r in replicas.values())


@pytest.mark.e2e
def test_discovering_clusters_once_fails_only_the_config_change_and_says_why(
    selected_versions, tmp_path
) -> None:
    report_dir = tmp_path / "report"
    # its two clusters: both scenarios run on the claimed stepSize + 1 workers (each worker
    # more is an apiserver and a Kueue on the 2 cores the e2e tests share)
    profile = profile_variant(
        tmp_path / "discover-once.yaml",
        lambda doc: doc["spec"]["environment"].update(clusters=["west-cluster", "east-cluster"]),
        base="example-go-discover-once",
    )
    checks = ("--checks", "CORE-04,CORE-07", "--slack", SLACK)
    proc = mkdc_run(profile, report_dir, *checks)
    assert proc.returncode == 1, proc.stderr[-3000:]
    report = report_of(report_dir)
    results = results_of(report)
    assert (results["CORE-04"], results["CORE-07"]) == ("passed", "failed"), results
    [finding] = [f for f in report["findings"] if f["id"] == "ignored-new-clusters"]
    assert finding["checks"] == ["CORE-07"], finding
    assert verify_report(report_dir / "report.yaml", catalogue()) == []
