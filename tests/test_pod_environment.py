"""An external dispatcher run as in a Pod: service-account files where client libraries look
for them, the service variables, no kubeconfig; and when it counts as started."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.cluster import mountns
from harness.cluster.identity import Credentials
from harness.orchestrate.dispatcher import SERVICEACCOUNT_DIR, _reads_since, pod_variables


def credentials(tmp_path: Path, server: str = "https://127.0.0.1:16443") -> Credentials:
    sa = tmp_path / "sa"
    sa.mkdir(parents=True)
    for name, text in {"token": "t0ken", "namespace": "kueue-system", "ca.crt": "PEM"}.items():
        (sa / name).write_text(text)
    return Credentials(tmp_path / "kc", sa, server)


def test_pod_variables_point_at_the_manager(tmp_path: Path) -> None:
    variables = pod_variables(credentials(tmp_path), "dispatcher-0")
    assert variables["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert variables["KUBERNETES_SERVICE_PORT"] == "16443"
    assert variables["POD_NAME"] == "dispatcher-0"
    assert variables["POD_NAMESPACE"] == "kueue-system"
    assert (
        pod_variables(credentials(tmp_path / "x", "https://m.example"), "p")[
            "KUBERNETES_SERVICE_PORT"
        ]
        == "443"
    )


def test_a_missing_path_gets_an_overlay_on_its_nearest_existing_ancestor(tmp_path: Path) -> None:
    existing = tmp_path / "run"
    existing.mkdir()
    target = existing / "secrets" / "kubernetes.io" / "serviceaccount"
    setup = mountns.provide_directory(tmp_path / "sa", str(target), tmp_path / "scratch")
    assert setup[0].startswith("mount -t overlay") and f" {existing}" in setup[0]
    assert setup[1] == f"mkdir -p {target}"
    assert setup[2] == f"mount --bind {tmp_path / 'sa'} {target}"
    target.mkdir(parents=True)
    assert mountns.provide_directory(tmp_path / "sa", str(target), tmp_path / "s") == [
        f"mount --bind {tmp_path / 'sa'} {target}"
    ]


def test_the_process_reads_its_identity_where_a_pod_would(tmp_path: Path) -> None:
    """For real: a private mount namespace, the host's /var/run left as it was."""
    creds = credentials(tmp_path)
    setup = mountns.provide_directory(creds.serviceaccount_dir, SERVICEACCOUNT_DIR, tmp_path / "m")
    argv = ["sh", "-c", f"cat {SERVICEACCOUNT_DIR}/namespace {SERVICEACCOUNT_DIR}/token"]
    out = subprocess.run(
        mountns.private_command(setup, argv, "probe"),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if out.returncode != 0 and "Operation not permitted" in out.stderr:
        pytest.skip(f"this kernel allows no private mount namespace here: {out.stderr.strip()}")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "kueue-systemt0ken"
    assert not os.path.exists(f"{SERVICEACCOUNT_DIR}/token") or (
        Path(f"{SERVICEACCOUNT_DIR}/token").read_text() != "t0ken"
    )


def audit(user: str, verb: str = "list", resource: str = "workloads") -> str:
    stage = "ResponseStarted" if verb == "watch" else "ResponseComplete"
    entry = {
        "stage": stage,
        "verb": verb,
        "user": {"username": user},
        "objectRef": {"resource": resource, "apiGroup": "kueue.x-k8s.io"},
    }
    return json.dumps(entry) + "\n"


def test_ready_when_one_of_its_users_reads_workloads(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    users = {"system:serviceaccount:kueue-system:mkdc-dispatcher-0"}
    assert _reads_since(log, 0, users) == (0, False)  # no log yet
    log.write_text(audit("system:kueue") + audit(next(iter(users)), resource="leases"))
    position, ready = _reads_since(log, 0, users)
    assert not ready and position == log.stat().st_size
    with log.open("a") as f:
        f.write(audit(next(iter(users)), verb="watch") + '{"partial": ')
    position, ready = _reads_since(log, position, users)
    assert ready
    assert position == log.stat().st_size - len('{"partial": ')
