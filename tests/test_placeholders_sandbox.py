"""Every placeholder of `spec.run.command` and `spec.run.env` names something the replica
can use where it runs: a real replica started by the dispatcher runner (as in a Pod, in
its sandbox, and as a plain process) reads its own kubeconfig, its settings next to the
profile and its built binary, and (in the sandbox) reads nothing of the harness's: not
the admin key, not another replica's kubeconfig. As root the replica runs as nobody; run
by a non-root user, this is the rootless sandbox."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cluster import pki, rundir
from harness.cluster.identity import Credentials
from harness.cluster.procs import Supervisor
from harness.orchestrate.dispatcher import DispatcherRunner
from harness.profile import load_profile

# {binary}: a "built" program that reports what it could read, one line each
PROBE = r"""#!/bin/sh
kc_flag=$2 kc_eq=${3#--kubeconfig=} settings=$4 namespace=$5 name=$6
readable() { if head -c1 "$2" >/dev/null 2>&1; then echo "$1 read"; else echo "$1 unreadable"; fi; }
readable "--kubeconfig" "$kc_flag"
readable "--kubeconfig=" "$kc_eq"
readable "KUBECONFIG_FILE" "$KUBECONFIG_FILE"
readable "{profile_dir}" "$settings"
readable "SETTINGS" "$SETTINGS"
readable "other replica's kubeconfig" "${kc_flag%/*}/dispatcher-1.kubeconfig"
readable "admin.key" "${kc_flag%/*}/admin.key"
echo "namespace $namespace name $name"
"""

PROFILE: dict[str, Any] = {
    "apiVersion": "mkdc/v1alpha1",
    "kind": "DispatcherProfile",
    "metadata": {"name": "placeholders"},
    "spec": {
        "dispatcherName": "example.com/placeholders",
        "nominationWrites": "admission-policy",
        "run": {
            "goBuild": "module",
            "command": [
                "{binary}",
                "--kubeconfig",
                "{kubeconfig}",
                "--kubeconfig={kubeconfig}",
                "{profile_dir}/settings.yaml",
                "{namespace}",
                "{dispatcher_name}",
            ],
            "env": {
                "KUBECONFIG_FILE": "{kubeconfig}",
                "SETTINGS": "{profile_dir}/settings.yaml",
            },
        },
        "claims": {
            "stepSize": 1,
            "roundTimeout": "10s",
            "maxConcurrentProvisioning": None,
            "ordering": "config",
            "features": [],
        },
    },
}


@pytest.fixture
def run_dir() -> Iterator[Path]:
    """A private run directory where mkdc makes one (the temp folder), with an admin key
    and two replicas' kubeconfigs in it, as a run has."""
    path = Path(tempfile.mkdtemp(prefix="mkdc-run-"))
    try:
        pki.write_private(path / "admin.key", b"cluster-admin")
        yield path
    finally:
        rundir.remove(path)  # a rootless replica's overlay leaves folders of mode 000


def credentials(run_dir: Path, replica: int) -> Credentials:
    kubeconfig = pki.write_private(run_dir / f"dispatcher-{replica}.kubeconfig", b"token: t")
    sa = run_dir / f"dispatcher-{replica}-serviceaccount"
    sa.mkdir(mode=0o700)
    for name in ("token", "namespace", "ca.crt"):
        pki.write_private(sa / name, b"x")
    return Credentials(kubeconfig, sa, "https://127.0.0.1:16443")


def started(tmp_path: Path, run_dir: Path, pod_environment: bool) -> list[str]:
    """The probe's lines, run as replica 0 of a profile in `tmp_path`."""
    (tmp_path / "module").mkdir()
    (tmp_path / "module" / "go.mod").write_text("module example.com/placeholders\n")
    (tmp_path / "settings.yaml").write_text("a: 1\n")
    document = yaml.safe_load(yaml.safe_dump(PROFILE))
    document["spec"]["run"]["podEnvironment"] = pod_environment
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document))
    binary = tmp_path / "cache" / "bin" / "placeholders"
    binary.parent.mkdir(parents=True)
    binary.write_text(PROBE)
    binary.chmod(0o755)
    profile = load_profile(tmp_path / "p.yaml")
    assert profile.run is not None
    profile = replace(profile, run=replace(profile.run, built=binary))
    supervisor = Supervisor(run_dir)
    runner = DispatcherRunner(profile, supervisor, [credentials(run_dir, r) for r in (0, 1)])
    try:
        runner.start(0)
        proc = supervisor.procs["dispatcher-0"]
        deadline = time.monotonic() + 30
        while proc.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not proc.alive(), "the probe did not end"
    finally:
        supervisor.stop_all(grace=1)
    log = supervisor.log_path("dispatcher-0").read_text()
    if "Operation not permitted" in log and "unshare" in log:
        pytest.skip(f"this kernel allows no user namespace here: {log.strip()}")
    return log.splitlines()


def test_in_the_sandbox_every_placeholder_is_the_replicas_and_nothing_else_is(
    tmp_path: Path, run_dir: Path
) -> None:
    assert started(tmp_path, run_dir, pod_environment=True) == [
        "--kubeconfig read",
        "--kubeconfig= read",
        "KUBECONFIG_FILE read",
        "{profile_dir} read",
        "SETTINGS read",
        "other replica's kubeconfig unreadable",
        "admin.key unreadable",
        "namespace kueue-system name example.com/placeholders",
    ]


def test_as_a_plain_process_every_placeholder_works_too(tmp_path: Path, run_dir: Path) -> None:
    """podEnvironment: false runs the harness's own user, with the host's view."""
    lines = started(tmp_path, run_dir, pod_environment=False)
    assert lines[:5] == [
        "--kubeconfig read",
        "--kubeconfig= read",
        "KUBECONFIG_FILE read",
        "{profile_dir} read",
        "SETTINGS read",
    ]
    assert lines[-1] == "namespace kueue-system name example.com/placeholders"
