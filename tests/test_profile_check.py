"""`mkdc profile check`: a profile validated and its run's plan said, with no cluster;
`mkdc run` says the same plan when it starts judging a profile."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from harness.orchestrate import explain
from harness.orchestrate import run as run_module
from harness.profile import load_profile
from tests.bad_input import run_cli
from tests.test_bad_profiles import FULL


def check(*argv: str) -> list[str]:
    code, out, err = run_cli(["profile", "check", *argv])
    assert (code, err) == (0, ""), err
    return out.splitlines()


def row(lines: list[str], what: str) -> list[str]:
    """The values of the plan's rows called `what` (and their continuation lines)."""
    found, inside = [], False
    for line in lines[1:]:
        name, value = line[:17].strip(), line[17:]
        inside = name == what or (inside and not name)
        if inside:
            found.append(value)
    return found


def test_the_reference_plan() -> None:
    lines = check("reference")
    assert lines[0].startswith("profile ")
    assert lines[0].endswith("reference.yaml: valid; a run would follow this plan")
    assert row(lines, "dispatcher") == ["mkdc.example/reference"]
    assert row(lines, "starts")[0].startswith("as in a Pod: python -m dispatchers.reference")
    assert row(lines, "executable") == [sys.executable]
    assert row(lines, "replicas")[0].startswith("1, network: one of its own per replica")
    assert row(lines, "workers") == [
        "4 (by default; --workers N for more): worker1, worker2, worker3, worker4"
    ]
    assert "CORE-01, CORE-02" in row(lines, "judged on")[0]
    assert row(lines, "not supported") == ["EXT-12: HighAvailability is not claimed"]
    assert row(lines, "before start") == ["nothing"]


def test_a_deploy_folder_says_what_it_makes_grants_and_leaves_out() -> None:
    lines = check("example-go-deploy-ha")
    assert row(lines, "starts")[0].startswith("Deployment example-dispatcher, container manager:")
    assert row(lines, "replicas")[0].startswith("2, ")
    privileges = row(lines, "privileges")
    assert privileges[0].startswith("the baseline role")
    assert any(
        p.startswith("+ get, list, watch, create, update, patch, delete leases") for p in privileges
    )
    assert row(lines, "before start") == [
        "ConfigMap kueue-system/example-dispatcher-settings on manager"
    ]
    assert row(lines, "not applied") == ["nothing: every field is applied"]
    assert "EXT-12" in row(lines, "judged on")[0]


def test_an_image_says_how_it_is_made() -> None:
    lines = check("example-go-image")
    assert row(lines, "starts") == [
        "container image mkdc.local/example-go:dev (built from goBuild, the binary at /dispatcher)"
    ]
    assert row(lines, "executable") == []


def test_templates_are_rendered_for_each_named_cluster(tmp_path: Path) -> None:
    doc: dict[str, Any] = {**FULL, "spec": {**FULL["spec"]}}
    doc["spec"]["environment"] = {
        "clusters": ["east-cluster", "west-cluster"],
        "workerKubeconfigSecret": "{cluster|trimSuffix:-cluster}-kc",
    }
    token = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "{cluster|trimSuffix:-cluster}-token"},
    }
    doc["spec"]["run"] = {**doc["spec"]["run"], "objects": {"manager": [token]}}
    path = tmp_path / "vendor.yaml"
    path.write_text(yaml.safe_dump(doc))
    lines = check(str(path))
    assert row(lines, "workers") == ["2 (named by the profile): east-cluster, west-cluster"]
    assert row(lines, "Secrets") == ["{cluster|trimSuffix:-cluster}-kc: east-kc, west-kc"]
    assert row(lines, "before start") == [
        "Secret east-token on manager",
        "Secret west-token on manager",
    ]
    assert row(lines, "identity")[0].startswith("a ServiceAccount of its own per replica")


def test_a_broken_profile_is_one_line_and_exit_2(tmp_path: Path) -> None:
    doc = {**FULL, "spec": {**FULL["spec"], "claims": {"features": ["Fast"]}}}
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(doc))
    code, out, err = run_cli(["profile", "check", str(path)])
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f'mkdc: error: profile {path}: spec.claims.features[0]: unknown feature "Fast"'
        " (known: BoundedFanOut, Escalation, Ordering, PerClusterTimeout,"
        " ProvisioningFailover, InactiveAware, RestartSafe, HighAvailability)"
    ]


def test_workers_against_the_named_clusters_is_one_line() -> None:
    code, out, err = run_cli(["profile", "check", "example-go-shared", "--workers", "2"])
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert "--workers 2 but profile spec.environment.clusters names 4" in err


class Said(Exception):
    """Ends judge() once it has said the plan."""


def test_mkdc_run_says_the_plan_when_it_starts_judging(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []

    def stop(*_args: Any) -> Any:
        raise Said

    monkeypatch.setattr(run_module, "log", said.append)
    monkeypatch.setattr(run_module, "_fresh_report_dir", stop)
    profile = load_profile("reference")
    env = SimpleNamespace(
        provider="local", workers=[SimpleNamespace(name="w1"), SimpleNamespace(name="w2")]
    )
    p = SimpleNamespace(profile=profile, opts=None, report_dir=Path("out"))
    with pytest.raises(Said):
        run_module.judge(p, None, env, 0.0)  # type: ignore[arg-type]
    expected: list[str] = []
    explain.announce(profile, ["w1", "w2"], expected.append)
    assert said == expected and len(said) > 5
