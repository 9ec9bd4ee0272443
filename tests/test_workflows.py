"""The shipped GitHub Actions workflows (ci/github/): every step has a local equivalent
or is a `run:` step, and every mkdc command they run is one mkdc accepts (each step that
calls mkdc is run by bash with `mkdc` recording its arguments, the workflow's env set),
so a renamed option fails here, not in a vendor's CI. Their real runs, as a non-root
user: tests/e2e/test_workflows_run.py (`make workflows`)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from harness.cli import build_parser
from tests import workflow_runner

WORKFLOWS = sorted((Path(__file__).resolve().parent.parent / "ci" / "github").glob("*.yml"))
LOCAL = {"actions/checkout", "actions/setup-go", "actions/setup-python", "actions/cache"}
LOCAL |= {"actions/upload-artifact"}


def test_the_two_workflows_are_shipped() -> None:
    names = [w.name for w in WORKFLOWS]
    assert names == ["dispatcher-conformance.yml", "kueue-dispatcher-gate.yml"]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: w.stem)
def test_every_step_runs_here_or_has_a_local_equivalent(workflow: Path) -> None:
    job = workflow_runner.the_job(workflow_runner.read(workflow))
    uses = {s["uses"].split("@")[0] for s in job["steps"] if "uses" in s}
    assert uses <= LOCAL, f"steps with no local equivalent: {uses - LOCAL}"
    assert all("run" in s or "uses" in s for s in job["steps"])
    upload = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload")]
    assert [s.get("if") for s in upload] == ["always()"]  # the report is kept on failure


def mkdc_calls(workflow: Path, env: dict[str, str]) -> list[list[str]]:
    """The argument lists of every mkdc command the workflow's steps run."""
    doc = workflow_runner.read(workflow)
    calls: list[list[str]] = []
    for step in workflow_runner.the_job(doc)["steps"]:
        script = step.get("run", "")
        if "mkdc " not in script or "pip" in script:
            continue
        recorder = 'mkdc() { printf "%s\\n" "$(printf "%q " "$@")"; }\n'
        vars_ = {**{str(k): str(v) for k, v in doc["env"].items()}, **env}
        out = subprocess.run(
            ["bash", "-e", "-c", recorder + script],
            env={"PATH": "/usr/bin:/bin", **vars_},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        calls += [shlex.split(line) for line in out.splitlines()]
    return calls


@pytest.mark.parametrize("checks", ["", "CORE-01,EXT-03"])
@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: w.stem)
def test_every_mkdc_command_of_a_workflow_parses(workflow: Path, checks: str) -> None:
    calls = mkdc_calls(workflow, {"CHECKS": checks})
    assert [c[0] for c in calls] == ["bins", "run"]
    for argv in calls:
        build_parser().parse_args(argv)  # exits 2 on an unknown option
    run = calls[-1]
    assert ("--checks" in run) == bool(checks)
    assert "--report-dir" in run
