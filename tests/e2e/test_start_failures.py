"""Dispatchers that fail at start, each in a way vendors' do, and ones that start once
they are given what they lacked. One plan on one environment: each failure ends only its
own run.

- A Go dispatcher that panics: the one line on the console quotes the log line that says
  why, not the last frame of a stack trace.
- Two replicas on the host's network with fixed ports: the port taken comes with its fix.
- A dispatcher that needs a Pod and more than the baseline role, judged unmodified: it has
  no kubeconfig flag (in-cluster config only), finds its namespace in the Pod's
  service-account files, reads Secrets at start, and is started by its virtualenv's
  `bin/python` (a symlink to an interpreter that lacks its packages). Without `run.rbac` it
  exits at start: the run is an error whose report keeps its log; with it, it is judged
  like any other.
- A dispatcher that needs objects before it starts, run from a profile alone: a ConfigMap
  of prices made by `spec.run.objects`, and worker Secrets named by its own rule through a
  `workerKubeconfigSecret` template. Without the objects it exits at start, and the
  console says why; with them it is judged.

Every run takes the last one's environment shape (its vendor's cluster name and Secret
rule), so that the six share one bring-up.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.report import verify_report
from harness.suite import catalogue
from tests.e2e.mkdc_cli import (
    PROFILES,
    mkdc,
    profile_variant,
    report_of,
    results_of,
    run_dirs,
)

PANICS = Path(__file__).parent / "vendor_like" / "panics"
VENV_PYTHON = str(Path(sys.prefix) / "bin" / "python")
READ_SECRETS = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}
READ_PRICES = {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get"]}
SECRET_RULE = "{cluster|trimSuffix:-cluster}-kc"
VENDOR_ENVIRONMENT = {
    "clusters": ["east-cluster"],
    "clusterScope": "shared",
    "workerKubeconfigSecret": SECRET_RULE,
}
PRICES = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: prices
data:
  prices.json: '{"east-cluster": 1.5}'
"""

Change = Callable[[dict[str, Any]], None]


def variant(path: Path, change: Change, base: str = "reference") -> Path:
    """`base` after `change`, on the vendor's environment shape."""

    def on_the_vendors_environment(doc: dict[str, Any]) -> None:
        change(doc)
        doc["spec"]["environment"] = dict(VENDOR_ENVIRONMENT)

    return profile_variant(path, on_the_vendors_environment, base=base)


def panicking_go(tmp_path: Path) -> Path:
    def panics(doc: dict) -> None:
        doc["metadata"]["name"] = "panics"
        doc["spec"]["run"].update(goBuild=str(PANICS), command=["{binary}"], env={})

    return variant(tmp_path / "panics.yaml", panics, base="example-go")


def fixed_ports_on_the_host(tmp_path: Path) -> Path:
    """The Go example with controller-runtime's default ports, two replicas, and the host's
    network (as a Pod with hostNetwork): the second replica finds the ports taken."""
    settings = yaml.safe_load((PROFILES.parent / "example-go" / "settings.yaml").read_text())
    settings.update(metricsBindAddress=":8080", healthProbeBindAddress=":8081")
    (tmp_path / "settings.yaml").write_text(yaml.safe_dump(settings))

    def on_the_host(doc: dict) -> None:
        doc["metadata"]["name"] = "host-network"
        doc["spec"]["run"].update(replicas=2, hostNetwork=True)
        doc["spec"]["run"]["env"]["DISPATCHER_CONFIG"] = str(tmp_path / "settings.yaml")

    return variant(tmp_path / "host-network.yaml", on_the_host, base="example-go")


def in_cluster_only(doc: dict, module: str) -> None:
    """The reference's command, run as `module` by the virtualenv's interpreter, by path (a
    symlink whose target lacks the packages)."""
    command = doc["spec"]["run"]["command"]
    assert "--kubeconfig" not in command  # in-cluster config only
    doc["spec"]["run"]["command"] = [VENV_PYTHON, "-m", module, *command[3:]]


def secret_reader(tmp_path: Path, rbac: dict | None) -> Path:
    def reads_secrets(doc: dict) -> None:
        doc["metadata"]["name"] = "secret-reader"
        in_cluster_only(doc, "tests.e2e.vendor_like.secret_reader")
        if rbac is not None:
            doc["spec"]["run"]["rbac"] = rbac

    return variant(tmp_path / "secret-reader.yaml", reads_secrets)


def cost_aware(tmp_path: Path, with_objects: bool) -> Path:
    (tmp_path / "deploy").mkdir(parents=True, exist_ok=True)
    (tmp_path / "deploy" / "prices.yaml").write_text(PRICES)

    def vendor(doc: dict) -> None:
        doc["metadata"]["name"] = "cost-aware"
        in_cluster_only(doc, "tests.e2e.vendor_like.cost_aware")
        doc["spec"]["run"]["rbac"] = {"namespaceRules": [READ_PRICES]}
        if with_objects:
            doc["spec"]["run"]["objects"] = {"manager": [str(tmp_path / "deploy")]}

    return variant(tmp_path / "cost-aware.yaml", vendor)


@pytest.mark.e2e
def test_each_start_failure_says_its_cause_and_what_it_lacked_lets_it_run(
    selected_versions, tmp_path: Path
) -> None:
    dirs = {name: tmp_path / name for name in ("secrets", "with-secrets", "prices", "with-prices")}
    for d in dirs.values():
        d.mkdir()
    profiles = [
        panicking_go(tmp_path),
        fixed_ports_on_the_host(tmp_path),
        secret_reader(dirs["secrets"], None),
        secret_reader(dirs["with-secrets"], {"namespaceRules": [READ_SECRETS]}),
        cost_aware(dirs["prices"], False),
        cost_aware(dirs["with-prices"], True),
    ]
    plan = [{"profile": str(p), "reportDir": str(p.parent / f"r-{p.stem}")} for p in profiles]
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan))
    # CORE-08's scenario runs on one worker: the test is about the dispatchers' start
    proc = mkdc(["run", "--plan", str(plan_file), "--checks", "CORE-08"])
    assert proc.returncode == 2, proc.stderr[-3000:]  # the worst of the runs
    assert proc.stderr.count("environment ready in") == 1
    errors = [line for line in proc.stderr.splitlines() if "mkdc: error:" in line]
    assert len(errors) == 4, proc.stderr[-3000:]
    panicked, port_taken, no_secrets, no_prices = errors
    assert "at start: panic: prices ConfigMap not configured" in panicked, panicked
    assert "goroutine" not in panicked and "main.go" not in panicked, panicked
    assert "address already in use" in port_taken, port_taken
    assert "perhaps by another replica" in port_taken and "one replica" in port_taken
    # without the privilege: an error naming the dispatcher's log, kept in its report
    without = dirs["secrets"] / "r-secret-reader"
    log = without / "artifacts" / "logs" / "dispatcher-0.log"
    assert "exited with code 3 at start: cannot list Secrets in kueue-system: 403" in no_secrets
    assert str(log) in no_secrets, no_secrets
    assert "cannot list Secrets in kueue-system: 403" in log.read_text()
    report = report_of(without)
    assert report["summary"]["result"] == "error" and "exited with code 3" in report["error"]
    assert verify_report(without / "report.yaml", catalogue()) == []
    # with it: judged like any other, on the same environment
    with_it = dirs["with-secrets"] / "r-secret-reader"
    report = report_of(with_it)
    assert results_of(report)["CORE-08"] == "passed", proc.stderr[-3000:]
    assert report["privileges"] == ["get, list, watch secrets in kueue-system"]
    assert report["environment"]["dispatcherRun"] == "pod environment"
    assert verify_report(with_it / "report.yaml", catalogue()) == []
    # without the objects: the console says which one it could not read; with them, judged
    assert "at start: error: cannot read ConfigMap kueue-system/prices: 404" in no_prices
    made = "made before the dispatcher starts: ConfigMap kueue-system/prices on manager"
    assert made in proc.stderr
    report = report_of(dirs["with-prices"] / "r-cost-aware")
    assert results_of(report)["CORE-08"] == "passed", proc.stderr[-3000:]
    assert report["environment"]["shape"]["workerKubeconfigSecret"] == SECRET_RULE
    [run_dir] = run_dirs(proc.stderr)
    assert not run_dir.exists()  # nothing left behind (keys, kubeconfigs)
