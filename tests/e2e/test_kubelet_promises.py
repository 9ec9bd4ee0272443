"""What a kubelet promises a container, kept on the local provider, for a vendor's deploy
folder: two replicas in each of two environments share nothing in /tmp and leave nothing
there, an exec readiness probe (run inside the replica's view) gates the start, a replica
that exits is started again with the kubelet's back-off and counted, and each replica is
named after the Deployment's ServiceAccount and runs as an unprivileged user."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from tests.e2e.mkdc_cli import assert_conforms, mkdc_run, report_of
from tests.e2e.vendor_like import kubelet_tenant

TENANT = Path(kubelet_tenant.__file__).resolve()
ARGS = [
    "--dispatcher-name", "mkdc.example/tenant", "--round-timeout", "10s", "--step", "1",
    "--mode", "cumulative", "--write-mode", "admission-policy", "--leader-elect",
    "--lease-namespace", "kueue-system", "--lease-duration", "6s",
]  # fmt: skip


def deploy_folder(folder: Path) -> Path:
    folder.mkdir()
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant"}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "tenant", "namespace": "kueue-system"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "tenant"}},
            "template": {
                "metadata": {"labels": {"app": "tenant"}},
                "spec": {
                    "serviceAccountName": "tenant",
                    "containers": [
                        {
                            "name": "dispatcher",
                            "image": "vendor.example/tenant:1",
                            "command": ["python", str(TENANT), *ARGS],
                            "readinessProbe": {
                                "exec": {"command": ["cat", "/tmp/ready"]},
                                "periodSeconds": 1,
                            },
                            "resources": {"limits": {"memory": "512Mi"}},
                        }
                    ],
                },
            },
        },
    }  # fmt: skip
    (folder / "deploy.yaml").write_text(yaml.safe_dump_all([account, deployment]))
    return folder


def profile(path: Path, manifests: Path) -> Path:
    doc = {
        "apiVersion": "mkdc/v1alpha1",
        "kind": "DispatcherProfile",
        "metadata": {"name": "kubelet-tenant"},
        "spec": {
            "dispatcherName": "mkdc.example/tenant",
            "nominationWrites": "admission-policy",
            "run": {"manifests": str(manifests), "readyTimeout": "60s"},
            "claims": {
                "stepSize": 1,
                "roundTimeout": "10s",
                "ordering": "config",
                "features": ["HighAvailability"],
            },
        },
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.e2e
def test_replicas_keep_a_kubelets_promises_in_two_environments(selected_versions, tmp_path) -> None:
    report_dir = tmp_path / "report"
    manifests = deploy_folder(tmp_path / "deploy")
    checks = "CORE-04,EXT-12"  # leader failover runs alone: on a second environment
    proc = mkdc_run(
        profile(tmp_path / "tenant.yaml", manifests), report_dir,
        "--checks", checks, "--workers", "3", "--environments", "2",
    )  # fmt: skip
    assert_conforms(proc, report_dir, checks)
    assert "collision" not in proc.stderr
    # the start waited for every replica's probe, which passes once it wrote /tmp/ready
    ready = re.findall(
        r"dispatcher ready in ([0-9.]+)s: every replica's readiness probe passed "
        r"\(exec cat /tmp/ready\)",
        proc.stderr,
    )
    assert len(ready) == 2 and all(float(s) >= kubelet_tenant.READY_AFTER for s in ready)
    # the last replica of each environment exits 20 s after its start and is started again
    assert proc.stderr.count("exiting 20 s after its start, on purpose") >= 1
    assert "restartPolicy Always: started again at once" in proc.stderr
    report = report_of(report_dir)
    replicas = report["environment"]["replicas"]
    assert {r["identity"] for r in replicas} >= {
        "system:serviceaccount:kueue-system:tenant-0",
        "system:serviceaccount:kueue-system:tenant-1",
    }
    assert sorted((r["environment"], r["process"]) for r in replicas) == [
        (e, f"dispatcher-{i}") for e in (1, 2) for i in (0, 1)
    ]  # two replicas in each of two environments, none colliding in /tmp
    assert {r["user"] for r in replicas} == {65534 if os.geteuid() == 0 else None}
    assert any(r["restarts"] >= 1 for r in replicas if r["process"] == "dispatcher-1")
    assert all(r["peakMemoryBytes"] > 0 and not r["overMemoryLimit"] for r in replicas)
    exits = report["dispatcherExits"]
    assert exits and exits[0]["restartedAfterSeconds"] == 0
    assert not Path("/tmp/mkdc-tenant.claim").exists() and not Path("/tmp/ready").exists()
