"""The shipped workflows run as a hosted runner runs them (`make workflows`; minutes to a
quarter of an hour each, so not in `make test`): each job's steps in order, as a non-root
user with passwordless sudo, from a workspace that holds what the workflow is written
for. Only the steps that need the internet get a local equivalent
(`tests.workflow_runner` says which); mkdc is installed by the workflow's own
`pip install mkdc==VERSION`, the version found in a folder of wheels built from this
checkout (PIP_FIND_LINKS), its dependencies from the package index.

- the vendor's workflow, in a repository that is the Go example: its Go module at the
  root and its profile at mkdc/profile.yaml;
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
from tests.e2e import installed
from tests.e2e.kueue_tree import released_source

ROOT = Path(__file__).resolve().parents[2]
USER = "mkdc-runner"


@pytest.fixture
def runner_user() -> Iterator[str]:
    """The non-root user with passwordless sudo a hosted runner has, with a fresh home as
    on a new runner; removed afterwards with its home (where the restored caches went)."""
    if os.geteuid() != 0:
        pytest.fail("making the runner's user needs root: run as root", pytrace=False)
    if shutil.which("sudo") is None:  # a hosted runner has it; a slim machine may not
        subprocess.run(["apt-get", "install", "-y", "-qq", "sudo"], check=True)
    with contextlib.suppress(KeyError):
        pwd.getpwnam(USER)
        subprocess.run(["userdel", "--remove", USER], check=False, capture_output=True)
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", USER], check=True)
    sudoers = Path(f"/etc/sudoers.d/{USER}")
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


def wheels(where: Path) -> Path:
    """A folder holding mkdc's wheel, built from this checkout."""
    folder = where / "wheels"
    installed.build_wheel(folder)
    for path in (folder, *folder.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


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
    name: str, checkout: Callable[[Path], None], user: str, where: Path
) -> workflow_runner.JobRecord:
    overrides = {"PIP_FIND_LINKS": str(wheels(where))}
    if os.environ.get("MKDC_WORKFLOW_CHECKS"):
        overrides["CHECKS"] = os.environ["MKDC_WORKFLOW_CHECKS"]
    runner = workflow_runner.Runner(user, where / "job", store(), checkout, overrides)
    record = runner.run(ROOT / "ci" / "github" / name)
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
    record = run_workflow("dispatcher-conformance.yml", vendor_repository, runner_user, job_dir)
    assert record.ok, _says(record)
    assert (job_dir / "job/artifacts/mkdc-report/mkdc-report/report.yaml").is_file()


@pytest.mark.e2e
@pytest.mark.slow
def test_the_kueue_gate_workflow_runs_green_as_a_non_root_user(runner_user, job_dir) -> None:
    record = run_workflow("kueue-dispatcher-gate.yml", kueue_repository, runner_user, job_dir)
    assert record.ok, _says(record)
