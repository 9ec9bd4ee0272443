"""A vendor's deploy folder on kind, as written: the Go example's folder with an init
container that copies an auth plugin from a registry out of reach. Without the profile's
opt-out the run stops before any cluster starts, in one line naming the container; with
`spec.run.withoutContainers` it runs as real Pods of the vendor's Deployment, two
replicas under the vendor's own ServiceAccount, told apart in the manager's audit log,
and leaves nothing behind."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.mkdc_cli import assert_conforms, mkdc_run, profile_variant

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "dispatchers" / "example-go" / "deploy"
INIT = "gcp-auth-plugin-init"
PLUGIN = "us-docker.pkg.dev/vendor-unreachable/auth/gcp-auth-plugin:1.4"
ACCOUNT = "system:serviceaccount:kueue-system:example-dispatcher"
CHECKS = "CORE-08,EXT-12"


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=False)


def _kind_containers() -> list[str]:
    out = _docker("ps", "-a", "--filter", "label=io.x-k8s.kind.cluster", "--format", "{{.Names}}")
    return [name for name in out.stdout.split() if name.startswith("mkdc-")]


def vendor_profile(tmp_path: Path, base: str = "example-go-deploy-ha", **run: Any) -> Path:
    """`base` (example-go-deploy-ha) on a copy of the example's folder whose Deployment has an init
    container from a registry nobody here reaches."""
    folder = tmp_path / "deploy"
    shutil.copytree(EXAMPLE, folder)
    doc = yaml.safe_load((folder / "deployment.yaml").read_text())
    pod = doc["spec"]["template"]["spec"]
    pod["initContainers"] = [
        {
            "name": INIT,
            "image": PLUGIN,
            "command": ["cp", "/gcp-auth-plugin", "/plugins/"],
            "volumeMounts": [{"name": "plugins", "mountPath": "/plugins"}],
        }
    ]
    pod["volumes"].append({"name": "plugins", "emptyDir": {}})
    (folder / "deployment.yaml").write_text(yaml.safe_dump(doc))
    return profile_variant(
        tmp_path / "vendor.yaml",
        lambda d: d["spec"]["run"].update(manifests=str(folder), **run),
        base=base,
    )


@pytest.mark.e2e
def test_an_init_container_from_a_registry_out_of_reach_is_named_in_one_line(
    tmp_path: Path,
) -> None:
    """Before any cluster starts: exit 2, one line naming the container and the opt-out."""
    assert _docker("image", "inspect", PLUGIN).returncode != 0
    before = _kind_containers()
    proc = mkdc_run(vendor_profile(tmp_path), tmp_path / "r", "--provider", "kind", timeout=120)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert f"init container {INIT}" in lines[0] and PLUGIN in lines[0], lines[0]
    assert f"spec.run.withoutContainers: [{INIT}]" in lines[0], lines[0]
    assert _kind_containers() == before
    assert not (tmp_path / "r").exists()


@pytest.mark.e2e
@pytest.mark.slow
def test_with_the_opt_out_the_folder_runs_as_pods_on_kind(tmp_path: Path) -> None:
    """Two Pods of the vendor's Deployment, the leader killed and the other taking over
    (EXT-12), each Pod's requests in the audit log under the vendor's ServiceAccount."""
    if _docker("info", "--format", "{{.ServerVersion}}").returncode != 0:
        pytest.fail("no Docker engine answers: run `sudo scripts/docker-engine`", pytrace=False)
    assert _kind_containers() == [], "kind clusters of an earlier run are still there"
    dirs_before = set(Path(tempfile.gettempdir()).glob("mkdc-kind-*"))
    report_dir = tmp_path / "report"
    profile = vendor_profile(tmp_path, withoutContainers=[INIT])
    proc = mkdc_run(
        profile, report_dir, "--provider", "kind", "--workers", "3", "--checks", CHECKS,
        timeout=1500,
    )  # fmt: skip
    report = assert_conforms(proc, report_dir, CHECKS)
    assert "starting the dispatcher as Deployment example-dispatcher" in proc.stderr
    assert "ServiceAccount example-dispatcher" in proc.stderr
    not_applied = report["environment"]["notApplied"]
    assert [n for n in not_applied if n.startswith(f"init container {INIT}: left out")], not_applied
    # every Pod's log kept, each replica's; the writers named by their Pods
    logs = report_dir / "artifacts" / "logs"
    for replica in (0, 1):
        assert "--- pod example-dispatcher-" in (logs / f"dispatcher-{replica}.log").read_text()
    results = [json.loads(p.read_text()) for p in (report_dir / "results").glob("*.json")]
    users = {u for r in results for u in r.get("dispatcherUsers", [])}
    assert ACCOUNT in users and any(u.startswith(f"{ACCOUNT} (pod ") for u in users), users
    assert _kind_containers() == []
    assert set(Path(tempfile.gettempdir()).glob("mkdc-kind-*")) == dirs_before


@pytest.mark.e2e
@pytest.mark.slow
def test_the_folder_on_kind_clusters_passed_as_existing(selected_versions, tmp_path: Path) -> None:
    """The same folder on clusters mkdc did not start for this run: the manager is found
    to be a kind cluster (its node's container), so the images are loaded into it; the
    run deletes what it applied, and nothing else."""
    from harness.cluster import inventory
    from harness.providers.kind import KindProvider
    from harness.providers.kind_config import EXTERNAL
    from harness.providers.local import running

    if _docker("info", "--format", "{{.ServerVersion}}").returncode != 0:
        pytest.fail("no Docker engine answers: run `sudo scripts/docker-engine`", pytrace=False)
    provider = KindProvider(
        selected_versions,
        workers=2,
        dispatcher_name="mkdc.example/example-go",
        write_mode="admission-policy",
        images="built",
    )
    with running(provider) as env:  # type: ignore[arg-type]
        before = inventory.snapshot(env)
        rbac = ("clusterroles", "clusterrolebindings", "serviceaccounts", "configmaps")
        kubectl = ["kubectl", "--kubeconfig", str(env.manager.kubeconfig), "--context", EXTERNAL]
        listed = [*kubectl, "get", *[",".join(rbac)], "-A", "-o", "name"]
        objects_before = subprocess.run(listed, capture_output=True, text=True, check=True).stdout
        clusters = [f"--cluster={w.name}={w.kubeconfig}:{EXTERNAL}" for w in env.workers]
        args = ["--provider", "existing", "--checks", "CORE-04,CORE-08"]
        args += ["--cluster", f"manager={env.manager.kubeconfig}:{EXTERNAL}", *clusters]
        report_dir = tmp_path / "r"
        profile = vendor_profile(tmp_path, "example-go-deploy", withoutContainers=[INIT])
        proc = mkdc_run(profile, report_dir, *args, timeout=1200)
        report = assert_conforms(proc, report_dir, "CORE-04,CORE-08")
        assert report["environment"]["provider"] == "existing"
        assert "starting the dispatcher as Deployment example-dispatcher" in proc.stderr
        assert inventory.added(before, inventory.snapshot(env)) == {}
        objects_after = subprocess.run(listed, capture_output=True, text=True, check=True).stdout
        assert objects_after == objects_before
