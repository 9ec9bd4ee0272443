"""Dispatchers that fail at start, each in a way vendors' do, and one that starts once it
is given what it lacked. One plan on one environment: each failure ends only its own run.

- A Go dispatcher that panics: the one line on the console quotes the log line that says
  why, not the last frame of a stack trace.
- Two replicas on the host's network with fixed ports: the port taken comes with its fix.
- A dispatcher that needs a Pod and more than the baseline role, judged unmodified: it has
  no kubeconfig flag (in-cluster config only), finds its namespace in the Pod's
  service-account files, reads Secrets at start, and is started by its virtualenv's
  `bin/python` (a symlink to an interpreter that lacks its packages). Without `run.rbac` it
  exits at start: the run is an error whose report keeps its log; with it, it is judged
  like any other.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from harness.report import verify_report
from harness.suite import catalogue
from tests.e2e.mkdc_cli import PROFILES, mkdc, profile_variant, report_of, results_of

PANICS = Path(__file__).parent / "vendor_like" / "panics"
VENV_PYTHON = str(Path(sys.prefix) / "bin" / "python")
READ_SECRETS = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}


def panicking_go(tmp_path: Path) -> Path:
    def panics(doc: dict) -> None:
        doc["metadata"]["name"] = "panics"
        doc["spec"]["run"].update(goBuild=str(PANICS), command=["{binary}"], env={})

    return profile_variant(tmp_path / "panics.yaml", panics, base="example-go")


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

    return profile_variant(tmp_path / "host-network.yaml", on_the_host, base="example-go")


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
def test_each_start_failure_says_its_cause_and_the_privilege_it_lacked_lets_it_run(
    selected_versions, tmp_path: Path
) -> None:
    without, with_it = tmp_path / "without", tmp_path / "with"
    without.mkdir()
    with_it.mkdir()
    plan = [
        {"profile": str(panicking_go(tmp_path)), "reportDir": str(tmp_path / "panics")},
        {"profile": str(fixed_ports_on_the_host(tmp_path)), "reportDir": str(tmp_path / "host")},
        {"profile": str(secret_reader_profile(without, None)), "reportDir": str(without / "r")},
        {
            "profile": str(secret_reader_profile(with_it, {"namespaceRules": [READ_SECRETS]})),
            "reportDir": str(with_it / "r"),
        },
    ]
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan))
    # CORE-08's scenario runs on one worker: the test is about the dispatchers' start
    proc = mkdc(["run", "--plan", str(plan_file), "--checks", "CORE-08", "--workers", "1"])
    assert proc.returncode == 2, proc.stderr[-3000:]  # the worst of the runs
    assert proc.stderr.count("environment ready in") == 1
    errors = [line for line in proc.stderr.splitlines() if "mkdc: error:" in line]
    assert len(errors) == 3, proc.stderr[-3000:]
    panicked, port_taken, no_secrets = errors

    assert "at start: panic: prices ConfigMap not configured" in panicked, panicked
    assert "goroutine" not in panicked and "main.go" not in panicked, panicked
    assert "address already in use" in port_taken, port_taken
    assert "perhaps by another replica" in port_taken and "one replica" in port_taken

    # without the privilege: an error naming the dispatcher's log, kept in its report
    log = without / "r" / "artifacts" / "logs" / "dispatcher-0.log"
    assert "exited with code 3 at start: cannot list Secrets in kueue-system: 403" in no_secrets
    assert str(log) in no_secrets, no_secrets
    assert "cannot list Secrets in kueue-system: 403" in log.read_text()
    report = report_of(without / "r")
    assert report["summary"]["result"] == "error" and "exited with code 3" in report["error"]
    assert verify_report(without / "r" / "report.yaml", catalogue()) == []

    # with it: judged like any other, on the same environment
    report = report_of(with_it / "r")
    assert results_of(report)["CORE-08"] == "passed"
    assert report["privileges"] == ["get, list, watch secrets in kueue-system"]
    assert report["environment"]["dispatcherRun"] == "pod environment"
    assert verify_report(with_it / "r" / "report.yaml", catalogue()) == []
    assert not run_dir(proc.stderr).exists()  # nothing left behind (keys, kubeconfigs)
