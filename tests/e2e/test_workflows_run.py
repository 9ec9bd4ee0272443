"""The shipped workflows run as a hosted runner runs them (`make workflows`; minutes to a
quarter of an hour each, so not in `make test`): each job's steps in order, as a non-root
user with passwordless sudo, from a workspace that holds what the workflow is written
for. Only the steps that need the internet get a local equivalent
(`tests.workflow_runner` says which); mkdc's action (`uses: OWNER/mkdc@...`) runs from a
copy of this checkout, as GitHub runs it from the pinned ref, and installs mkdc from it
(its dependencies from the package index).

- the vendor's workflow, in a repository that is the Go example: its Go module at the
  root and its profile at mkdc/profile.yaml; on a runner that refuses user namespaces
  (tests/refusing_runner: a limit of 0, which the action lifts with sudo; without sudo,
  each form of refusal stops the job in one line within seconds, before any build);
- Kueue's gate, in a copy of the released Kueue's source.

The cache store (the local `actions/cache`) is kept in mkdc's cache directory, so the
first run on a machine is cold and the next warm: MKDC_WORKFLOW_STORE names another
(an empty one for a cold run). MKDC_WORKFLOW_CHECKS narrows the checks judged."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from harness.cluster import toolchain, versions
from tests import workflow_runner
from tests.e2e.kueue_tree import released_source
from tests.refusing_runner import FORMS, refusing

ROOT = Path(__file__).resolve().parents[2]
USER = "mkdc-runner"


@pytest.fixture
def runner_user() -> Iterator[str]:
    """The non-root user with passwordless sudo a hosted runner has."""
    with made_user(sudo=True) as user:
        yield user


@contextlib.contextmanager
def made_user(sudo: bool) -> Iterator[str]:
    """A non-root user (with passwordless sudo, as a hosted runner's, when `sudo`), with a
    fresh home as on a new runner; removed afterwards with its home (where the restored
    caches went)."""
    if os.geteuid() != 0:
        pytest.fail("making the runner's user needs root: run as root", pytrace=False)
    if shutil.which("sudo") is None:  # a hosted runner has it; a slim machine may not
        subprocess.run(["apt-get", "install", "-y", "-qq", "sudo"], check=True)
    with contextlib.suppress(KeyError):
        pwd.getpwnam(USER)
        subprocess.run(["userdel", "--remove", USER], check=False, capture_output=True)
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", USER], check=True)
    sudoers = Path(f"/etc/sudoers.d/{USER}")
    if sudo:
        sudoers.write_text(f"{USER} ALL=(ALL) NOPASSWD:ALL\n")
        sudoers.chmod(0o440)
    try:
        yield USER
        left = subprocess.run(["pgrep", "-u", USER], capture_output=True, text=True).stdout
        assert left.split() == [], f"processes of {USER} left behind: {left.split()}"
    finally:
        subprocess.run(["pkill", "-KILL", "-u", USER], check=False)
        subprocess.run(["userdel", "--remove", USER], check=False, capture_output=True)
        sudoers.unlink(missing_ok=True)


@pytest.fixture
def job_dir() -> Iterator[Path]:
    """The job's folders, where the runner's user can reach them (pytest's tmp_path is
    private to root)."""
    where = Path(tempfile.mkdtemp(prefix="mkdc-workflow-"))
    where.chmod(0o755)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def store() -> Path:
    return Path(os.environ.get("MKDC_WORKFLOW_STORE") or toolchain.cache_dir() / "workflow-store")


def vendor_repository(workspace: Path) -> None:
    """The Go example as a vendor's repository: the module at the root, its profile in mkdc/."""
    example = ROOT / "dispatchers" / "example-go"
    shutil.copytree(example, workspace, dirs_exist_ok=True)
    doc = yaml.safe_load((ROOT / "dispatchers/profiles/example-go.yaml").read_text())
    doc["spec"]["run"]["goBuild"] = ".."
    doc["spec"]["run"]["env"]["DISPATCHER_CONFIG"] = "{profile_dir}/../settings.yaml"
    (workspace / "mkdc").mkdir()
    (workspace / "mkdc" / "profile.yaml").write_text(yaml.safe_dump(doc))


def kueue_repository(workspace: Path) -> None:
    """A copy of the released Kueue's source, as a pull request's checkout would be."""
    released_source(versions.select(), workspace)


def run_workflow(
    name: str,
    checkout: Callable[[Path], None],
    user: str,
    where: Path,
    wrap: Callable[[list[str]], list[str]] | None = None,
) -> workflow_runner.JobRecord:
    workflow = ROOT / "ci" / "github" / name
    checks = os.environ.get("MKDC_WORKFLOW_CHECKS")
    if checks:  # the workflow as shipped, its mkdc step given fewer checks
        doc = yaml.safe_load(workflow.read_text())
        for step in (s for job in doc["jobs"].values() for s in job["steps"]):
            if "profile" in step.get("with", {}):
                step["with"]["checks"] = checks
        workflow = where / name
        workflow.write_text(yaml.safe_dump(doc))
    runner = workflow_runner.Runner(user, where / "job", store(), checkout, action=ROOT, wrap=wrap)
    record = runner.run(workflow)
    for step in record.steps:
        print(f"{step.seconds:7.1f}s  rc={step.returncode}  {step.name}  [{step.how}]")
        for line in step.output.strip().splitlines()[-4:]:  # a run's verdict, a build's end
            print(f"{'':9}| {line}")
    print(f"{record.seconds():7.1f}s  in all")
    return record


def _says(record: workflow_runner.JobRecord) -> str:
    return "\n".join(f"{s.name}: {s.output[-3000:]}" for s in record.failed())


@pytest.mark.e2e
@pytest.mark.slow
def test_the_vendor_workflow_runs_green_as_a_non_root_user(runner_user, job_dir) -> None:
    """On a runner whose user-namespace limit is 0: the action lifts it with sudo."""
    with refusing("limit") as refused:
        record = run_workflow(
            "dispatcher-conformance.yml",
            vendor_repository,
            runner_user,
            job_dir,
            refused.wrap,
        )
    assert record.ok, _says(record)
    prepared = next(s for s in record.steps if "user namespaces" in s.name)
    assert "allowed after `sudo sysctl -w user.max_user_namespaces=" in prepared.output
    [report] = (job_dir / "job/artifacts").glob("mkdc-report-conformance-*/mkdc-report/report.yaml")
    summary = (job_dir / "job/temp/step_summary.md").read_text()
    assert "| check | verdict |" in summary and report.parent.parent.name in summary
    print(summary)


@pytest.mark.e2e
@pytest.mark.parametrize("form", FORMS)
def test_without_sudo_a_runner_that_refuses_user_namespaces_stops_in_one_line(
    form: str, job_dir: Path
) -> None:
    with made_user(sudo=False) as user:
        with refusing(form) as refused:
            record = run_workflow(
                "dispatcher-conformance.yml",
                vendor_repository,
                user,
                job_dir,
                refused.wrap,
            )
            built = (Path(os.path.expanduser(f"~{user}")) / ".cache/mkdc/bin").exists()
    [failed] = record.failed()
    assert failed.name.endswith("Let this runner's user have user namespaces"), _says(record)
    assert failed.returncode == 2 and failed.seconds < 10
    [line] = failed.output.strip().splitlines()
    print(f"{form}: exit 2 in {failed.seconds:.1f}s: {line}")
    assert "refuses unprivileged user namespaces" in line
    assert ("sudo sysctl -w user.max_user_namespaces=" in line) == (form == "limit")
    ran = [s.name for s in record.steps]
    assert not any("Build" in name or "Judge" in name for name in ran) and not built


@pytest.mark.e2e
@pytest.mark.slow
def test_the_kueue_gate_workflow_runs_green_as_a_non_root_user(runner_user, job_dir) -> None:
    record = run_workflow("kueue-dispatcher-gate.yml", kueue_repository, runner_user, job_dir)
    assert record.ok, _says(record)
