"""The shipped GitHub Actions workflows (ci/github/), mkdc's own action (action.yml) and
its release workflow, by their properties: every `uses:` has a local equivalent in the
emulated runner (or is mkdc's own action), action majors are current, permissions are
read-only, a concurrency group is set, the report is kept and summarized even when the
run failed, and every mkdc command the action runs is one mkdc accepts for the inputs each
workflow gives it (bash runs each step with `mkdc` recording its arguments), so a renamed
option fails here, not in a vendor's CI. Their real runs, as a non-root user:
tests/e2e/test_workflows_run.py (`make workflows`)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import build_parser
from tests import workflow_runner

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / "ci" / "github").glob("*.yml"))
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
RELEASE = workflow_runner.read(ROOT / ".github" / "workflows" / "release.yml")
LOCAL = {"actions/checkout", "actions/setup-go", "actions/setup-python", "actions/cache"}
LOCAL |= {"actions/cache/restore", "actions/cache/save", "actions/upload-artifact"}
# the oldest major of each action that runs on Node 24
CURRENT = {
    "actions/checkout": 5,
    "actions/setup-go": 6,
    "actions/setup-python": 6,
    "actions/cache": 5,
    "actions/upload-artifact": 6,
    "actions/download-artifact": 7,
}


def _steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for job in doc["jobs"].values() for s in job["steps"]]


def _uses(steps: list[dict[str, Any]]) -> list[str]:
    return [s["uses"] for s in steps if "uses" in s]


def test_the_two_workflows_are_shipped() -> None:
    names = [w.name for w in WORKFLOWS]
    assert names == ["dispatcher-conformance.yml", "kueue-dispatcher-gate.yml"]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: w.stem)
def test_every_step_has_a_local_equivalent_and_the_judging_is_the_action(workflow: Path) -> None:
    doc = workflow_runner.read(workflow)
    steps = _steps(doc)
    uses = _uses(steps) + _uses(ACTION["runs"]["steps"])
    own = [u for u in uses if workflow_runner.OWN_ACTION.match(u)]
    assert len(own) == 1  # the workflow's one mkdc step
    assert {u.split("@")[0] for u in uses if u not in own} <= LOCAL
    assert all("run" in s or "uses" in s for s in steps)
    assert not any("mkdc" in s.get("run", "") for s in steps)  # the action does it all


@pytest.mark.parametrize("workflow", [*WORKFLOWS, ROOT / ".github/workflows/release.yml"])
def test_hygiene_current_actions_read_only_token(workflow: Path) -> None:
    doc = workflow_runner.read(workflow)
    assert doc["permissions"] == {"contents": "read"}
    for uses in _uses(_steps(doc)) + _uses(ACTION["runs"]["steps"]):
        name, _, ref = uses.partition("@")
        if name in CURRENT:
            assert int(ref.removeprefix("v").split(".")[0]) >= CURRENT[name], uses
    if workflow.parent.name == "github":
        assert "${{ github.ref }}" in doc["concurrency"]["group"]
        assert doc["on"]["push"]["branches"] == ["main"]  # main saves the cache


def test_the_action_keeps_and_summarizes_the_report_whatever_the_verdict() -> None:
    steps = ACTION["runs"]["steps"]
    upload = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    assert [s.get("if") for s in upload] == ["always()"]
    assert "steps.names.outputs.artifact" in upload[0]["with"]["name"]  # one per entry
    summary = next(s for s in steps if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    verify = next(s for s in steps if "report verify" in s.get("run", ""))
    assert summary.get("if") == verify.get("if") == "always()"
    assert steps[-1]["run"].strip().endswith('exit "$CODE"')  # fails on the verdict
    assert 'pip" install --quiet "$GITHUB_ACTION_PATH"' in steps[0]["run"]  # no index name
    key = next(s for s in steps if s.get("id") == "restore")["with"]["key"]
    assert "runner.arch" in key and "steps.names.outputs.go" in key


def _recorded_calls(inputs: dict[str, str]) -> list[list[str]]:
    """The argument lists of every mkdc command the action's steps run with `inputs`."""
    declared = ACTION["inputs"]
    scope = workflow_runner.Scope(
        inputs={k: inputs.get(k, str(v.get("default", ""))) for k, v in declared.items()},
        steps={"names": {"artifact": "mkdc-report-x", "go": "go1.26.0", "mkdc": "0.1.0"}},
    )
    runner = workflow_runner.Runner("nobody", Path("/nonexistent"), Path("/nonexistent"), print)
    runner.job_id = "conformance"
    calls: list[list[str]] = []
    for step in ACTION["runs"]["steps"]:
        script = step.get("run", "")
        if not re.search(r"^\s*mkdc |[;&|(]\s*mkdc | mkdc ", script, re.M) or "pip" in script:
            continue
        env = {k: runner.expand(str(v), scope) for k, v in (step.get("env") or {}).items()}
        recorder = 'mkdc() { printf "MKDC %s\\n" "$(printf "%q " "$@")"; }\n'
        out = subprocess.run(
            ["bash", "-e", "-c", recorder + runner.expand(script, scope)],
            env={"PATH": "/usr/bin:/bin", "GITHUB_OUTPUT": "/dev/null", **env},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        calls += [shlex.split(line[5:]) for line in out.splitlines() if line.startswith("MKDC ")]
    return calls


@pytest.mark.parametrize("checks", ["", "CORE-01,EXT-03"])
@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: w.stem)
def test_every_mkdc_command_of_the_action_parses(workflow: Path, checks: str) -> None:
    [step] = [
        s for s in _steps(workflow_runner.read(workflow)) if "with" in s and "profile" in s["with"]
    ]
    runner = workflow_runner.Runner("nobody", Path("/nonexistent"), Path("/nonexistent"), print)
    runner.job_id = "x"
    inputs = {k: runner.expand(str(v)) for k, v in step["with"].items()} | {"checks": checks}
    calls = _recorded_calls(inputs)
    assert [c[0] for c in calls] == ["prepare", "bins", "run"]  # verify and summary: no report
    for argv in calls:
        build_parser().parse_args(argv)  # exits 2 on an unknown option
    run = calls[-1]
    assert ("--checks" in run) == bool(checks)
    assert "--report-dir" in run
    assert run.count("--profile") == len(inputs["profile"].split())


def test_a_nightly_gate_judges_everything() -> None:
    gate = workflow_runner.read(ROOT / "ci/github/kueue-dispatcher-gate.yml")
    assert gate["on"]["schedule"]
    runner = workflow_runner.Runner("nobody", Path("/nonexistent"), Path("/nonexistent"), print)
    runner.job_id = "x"
    calls = _recorded_calls({"profile": "incremental", "kueue-source": ".", "full": "true"})
    assert "--full" in calls[-1] and calls[-1][calls[-1].index("--kueue-source") + 1] == "."


def test_the_release_publishes_a_checked_build_by_trusted_publishing() -> None:
    assert RELEASE["on"] == {"push": {"tags": ["v*"]}}
    publish = RELEASE["jobs"]["publish"]
    assert publish["needs"] == "build" and publish["permissions"] == {"id-token": "write"}
    assert _uses(publish["steps"])[-1].startswith("pypa/gh-action-pypi-publish@")
    built = " ".join(s.get("run", "") for s in RELEASE["jobs"]["build"]["steps"])
    assert "python -m build" in built and "twine check --strict" in built
