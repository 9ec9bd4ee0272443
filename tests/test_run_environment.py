"""`mkdc run`'s environment decisions that follow from the profile's declared shape."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from harness import kube, run
from harness.errors import UserError
from harness.profile import load_profile

PROFILES = Path(__file__).resolve().parent.parent / "dispatchers" / "profiles"


def shaped(tmp_path: Path, environment: dict) -> object:
    doc = yaml.safe_load((PROFILES / "reference.yaml").read_text())
    doc["spec"]["environment"] = environment
    path = tmp_path / "shaped.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_profile(str(path))


def test_fake_nodes_offer_the_declared_extended_resource(tmp_path: Path) -> None:
    gpu = shaped(tmp_path, {"resource": "nvidia.com/gpu"})
    assert run._node_capacity(gpu)["nvidia.com/gpu"] == "64"
    assert run._node_capacity(shaped(tmp_path, {"resource": "cpu"})) is None


def test_an_api_version_the_manager_does_not_serve_is_a_user_error(monkeypatch) -> None:
    monkeypatch.setattr(kube, "served_versions", lambda dyn, group: ["v1beta2", "v1beta1"])
    env = SimpleNamespace(manager=SimpleNamespace(dyn=None), kueue_version="v0.19.2")
    run._require_api_version(env, "v1beta1")
    run._require_api_version(env, None)
    with pytest.raises(UserError, match="v1alpha1 is not served by Kueue v0.19.2 .*v1beta2"):
        run._require_api_version(env, "v1alpha1")


def test_extended_resources_get_limits_equal_to_requests() -> None:
    from harness.workloads import job

    gpu = job("j", "ns", "q", requests={"nvidia.com/gpu": "1", "memory": "1Gi"})
    resources = gpu["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {
        "requests": {"nvidia.com/gpu": "1", "memory": "1Gi"},
        "limits": {"nvidia.com/gpu": "1"},
    }
    plain = job("j", "ns", "q")["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert "limits" not in plain
