"""A dispatcher that needs a Pod and more than the baseline role, judged unmodified.

It has no kubeconfig flag (in-cluster config only), finds its namespace in the Pod's
service-account files, reads Secrets at start, and is started by its virtualenv's
`bin/python` (a symlink to an interpreter that lacks its packages). Without `run.rbac` it
exits at start: the run is an error whose report keeps its log; with it, it is judged
like any other. Both runs are one plan on one environment: the first one's error ends
only that run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from harness.report import verify_report
from harness.suite import catalogue
from tests.e2e.mkdc_cli import mkdc, profile_variant, report_of, results_of

VENV_PYTHON = str(Path(sys.prefix) / "bin" / "python")
READ_SECRETS = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}


def secret_reader_profile(tmp_path: Path, rbac: dict | None) -> Path:
    def secret_reader(doc: dict) -> None:
        doc["metadata"]["name"] = "secret-reader"
        command = doc["spec"]["run"]["command"]
        assert "--kubeconfig" not in command  # in-cluster config only
        # its own virtualenv's interpreter, by path: a symlink whose target lacks the packages
        doc["spec"]["run"]["command"] = [VENV_PYTHON, "-m", "tests.e2e.vendor_like.secret_reader"]
        doc["spec"]["run"]["command"] += command[3:]
        if rbac is not None:
            doc["spec"]["run"]["rbac"] = rbac

    return profile_variant(tmp_path / "secret-reader.yaml", secret_reader)


def run_dir(stderr: str) -> Path:
    """The run directory `mkdc run` announced ("environment ready in ...: DIR")."""
    [line] = [line for line in stderr.splitlines() if "environment ready in" in line]
    return Path(line.rsplit(": ", 1)[1])


@pytest.mark.e2e
def test_without_the_privilege_it_cannot_start_and_with_it_it_runs_as_in_a_pod(
    selected_versions, tmp_path: Path
) -> None:
    without, with_it = tmp_path / "without", tmp_path / "with"
    without.mkdir()
    with_it.mkdir()
    plan = [
        {"profile": str(secret_reader_profile(without, None)), "reportDir": str(without / "r")},
        {
            "profile": str(secret_reader_profile(with_it, {"namespaceRules": [READ_SECRETS]})),
            "reportDir": str(with_it / "r"),
        },
    ]
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan))
    # CORE-08's scenario runs on one worker: the test is about the dispatcher's start
    proc = mkdc(["run", "--plan", str(plan_file), "--checks", "CORE-08", "--workers", "1"])
    assert proc.returncode == 2, proc.stderr[-3000:]  # the worse of the two runs

    # without: an error naming the dispatcher's log, kept in its report
    [error] = [line for line in proc.stderr.splitlines() if "mkdc: error:" in line]
    log = without / "r" / "artifacts" / "logs" / "dispatcher-0.log"
    assert "exited with code 3 at start: cannot list Secrets in kueue-system: 403" in error
    assert str(log) in error, error
    assert "cannot list Secrets in kueue-system: 403" in log.read_text()
    report = report_of(without / "r")
    assert report["summary"]["result"] == "error" and "exited with code 3" in report["error"]
    assert verify_report(without / "r" / "report.yaml", catalogue()) == []

    # with: judged like any other, on the same environment
    assert proc.stderr.count("environment ready in") == 1
    report = report_of(with_it / "r")
    assert results_of(report)["CORE-08"] == "passed"
    assert report["privileges"] == ["get, list, watch secrets in kueue-system"]
    assert report["environment"]["dispatcherRun"] == "pod environment"
    assert verify_report(with_it / "r" / "report.yaml", catalogue()) == []
    assert not run_dir(proc.stderr).exists()  # nothing left behind (keys, kubeconfigs)
