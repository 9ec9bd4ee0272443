"""A dispatcher that needs a Pod and more than the baseline role, judged unmodified.

It has no kubeconfig flag (in-cluster config only), finds its namespace in the Pod's
service-account files, reads Secrets at start, and is started by its virtualenv's
`bin/python` (a symlink to an interpreter that lacks its packages). Without `run.rbac` it
exits at start: the run is an error whose report keeps its log; with it, it is judged
like any other.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.report import verify_report
from tests.e2e.mkdc_cli import PROFILES, mkdc_run, report_of, results_of

VENV_PYTHON = str(Path(sys.prefix) / "bin" / "python")
READ_SECRETS = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}


def secret_reader_profile(tmp_path: Path, rbac: dict | None) -> Path:
    doc = yaml.safe_load((PROFILES / "reference.yaml").read_text())
    doc["metadata"]["name"] = "secret-reader"
    command = doc["spec"]["run"]["command"]
    assert "--kubeconfig" not in command  # in-cluster config only
    # its own virtualenv's interpreter, by path: a symlink whose target lacks the packages
    doc["spec"]["run"]["command"] = [VENV_PYTHON, "-m", "tests.e2e.vendor_like.secret_reader"]
    doc["spec"]["run"]["command"] += command[3:]
    if rbac is not None:
        doc["spec"]["run"]["rbac"] = rbac
    path = tmp_path / "secret-reader.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run_core_01(profile: Path, report_dir: Path) -> subprocess.CompletedProcess[str]:
    return mkdc_run(profile, report_dir, "--checks", "CORE-01", "--workers", "3")


def run_dir(stderr: str) -> Path:
    """The run directory `mkdc run` announced ("environment ready in ...: DIR")."""
    [line] = [line for line in stderr.splitlines() if "environment ready in" in line]
    return Path(line.rsplit(": ", 1)[1])


@pytest.mark.e2e
def test_without_the_privilege_it_needs_it_cannot_start_and_the_report_says_why(
    selected_versions, tmp_path: Path
) -> None:
    report_dir = tmp_path / "report"
    proc = run_core_01(secret_reader_profile(tmp_path, None), report_dir)
    assert proc.returncode == 2, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    log = report_dir / "artifacts" / "logs" / "dispatcher-0.log"
    assert "exited with code 3 at start" in last and str(log) in last, last
    assert "cannot list Secrets in kueue-system: 403" in log.read_text()
    report = report_of(report_dir)
    assert report["summary"]["result"] == "error" and "exited with code 3" in report["error"]
    assert verify_report(report_dir / "report.yaml") == []
    assert not run_dir(proc.stderr).exists()  # nothing left behind (keys, kubeconfigs)


@pytest.mark.e2e
def test_with_declared_privileges_it_runs_as_in_a_pod_and_is_judged(
    selected_versions, tmp_path: Path
) -> None:
    report_dir = tmp_path / "report"
    profile = secret_reader_profile(tmp_path, {"namespaceRules": [READ_SECRETS]})
    proc = run_core_01(profile, report_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = report_of(report_dir)
    assert results_of(report)["CORE-01"] == "passed"
    assert report["privileges"] == ["get, list, watch secrets in kueue-system"]
    assert report["environment"]["dispatcherRun"] == "pod environment"
    assert verify_report(report_dir / "report.yaml") == []
