"""`mkdc run`'s environment decisions that follow from the profile's declared shape."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
import yaml

from harness.cluster import kube
from harness.cluster.environment import Environment
from harness.errors import UserError
from harness.orchestrate import plan, stage, verdict
from harness.orchestrate.options import Options
from harness.orchestrate.outcome import Dispatched, Outcome
from harness.profile import Profile, load_profile

PROFILES = Path(__file__).resolve().parent.parent / "dispatchers" / "profiles"


def shaped(tmp_path: Path, environment: dict) -> Profile:
    doc = yaml.safe_load((PROFILES / "reference.yaml").read_text())
    doc["spec"]["environment"] = environment
    path = tmp_path / "shaped.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_profile(str(path))


def test_fake_nodes_offer_the_declared_extended_resource(tmp_path: Path) -> None:
    gpu = shaped(tmp_path, {"resource": "nvidia.com/gpu"})
    capacity = plan.node_capacity(gpu)
    assert capacity is not None and capacity["nvidia.com/gpu"] == "64"
    assert plan.node_capacity(shaped(tmp_path, {"resource": "cpu"})) is None


def test_an_api_version_the_manager_does_not_serve_is_a_user_error(monkeypatch) -> None:
    monkeypatch.setattr(kube, "served_versions", lambda dyn, group: ["v1beta2", "v1beta1"])
    fields = SimpleNamespace(manager=SimpleNamespace(dyn=None), kueue_version="v0.19.2")
    env = cast(Environment, fields)  # all _require_api_version reads
    stage.require_api_version(env, "v1beta1")
    stage.require_api_version(env, None)
    with pytest.raises(UserError, match="v1alpha1 is not served by Kueue v0.19.2 .*v1beta2"):
        stage.require_api_version(env, "v1alpha1")


def test_extended_resources_get_limits_equal_to_requests() -> None:
    from harness.cluster.workloads import job

    gpu = job("j", "ns", "q", requests={"nvidia.com/gpu": "1", "memory": "1Gi"})
    resources = gpu["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {
        "requests": {"nvidia.com/gpu": "1", "memory": "1Gi"},
        "limits": {"nvidia.com/gpu": "1"},
    }
    plain = job("j", "ns", "q")["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert "limits" not in plain


def test_workers_are_named_as_the_profile_names_them(tmp_path: Path) -> None:
    plain = shaped(tmp_path, {})
    assert plan.worker_names(Options(profile="p"), plain) == [f"worker{i}" for i in (1, 2, 3, 4)]
    assert plan.worker_names(Options(profile="p", workers=2), plain) == ["worker1", "worker2"]
    named = shaped(tmp_path, {"clusters": ["east-cluster", "west-cluster"]})
    assert plan.worker_names(Options(profile="p"), named) == ["east-cluster", "west-cluster"]
    with pytest.raises(UserError, match="--workers 3 but profile .* names 2"):
        plan.worker_names(Options(profile="p", workers=3), named)


def test_a_dispatcher_dead_at_start_leaves_its_log_and_a_report(tmp_path: Path) -> None:
    from harness.cluster.environment import Cluster
    from harness.orchestrate.dispatcher import StartFailure

    run_dir = tmp_path / "run"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "logs" / "dispatcher-0.log").write_text("forbidden: cannot list secrets\n")
    (run_dir / "logs" / "manager-kueue.log").write_text("kueue started\n")
    (run_dir / "logs" / "manager-etcd.log").write_text("not evidence\n")
    env = Environment(
        "local",
        run_dir,
        Cluster("manager", run_dir / "kc", "manager"),
        [Cluster("east", run_dir / "kc", "worker")],
        "v1.36.3",
        "v0.19.2",
        "mkdc.example/reference",
    )
    report_dir = tmp_path / "report"
    profile = shaped(tmp_path, {})
    failure = StartFailure(
        "the dispatcher (dispatcher-0) exited with code 3 at start", "dispatcher-0"
    )
    failed = Dispatched(replica_network="the host's (spec.run.hostNetwork)")
    outcome = Outcome(0.0, 2.0, (failed,), error=str(failure))
    error = verdict.start_failure_report(failure, profile, env, report_dir, outcome)
    copied = report_dir / "artifacts" / "logs" / "dispatcher-0.log"
    assert str(copied) in str(error) and "exited with code 3" in str(error)
    assert copied.read_text() == "forbidden: cannot list secrets\n"
    assert (report_dir / "artifacts" / "logs" / "manager-kueue.log").exists()
    assert not (report_dir / "artifacts" / "logs" / "manager-etcd.log").exists()
    doc = yaml.safe_load((report_dir / "report.yaml").read_text())
    assert doc["summary"]["result"] == "error"
    assert "exited with code 3" in doc["error"]
    assert doc["environment"]["workerNames"] == ["east"]
    assert doc["environment"]["replicaNetwork"] == "the host's (spec.run.hostNetwork)"
