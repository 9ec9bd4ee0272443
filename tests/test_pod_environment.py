"""An external dispatcher run as in a Pod: service-account files where client libraries look
for them, the service variables, no kubeconfig; and when it counts as started."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
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


def test_mounts_below_a_path_are_found_but_not_the_path_itself(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    line = "36 25 0:32 / {} rw,relatime shared:1 - tmpfs tmpfs rw\n"
    info.write_text(line.format("/") + line.format("/run") + line.format("/run/docker/netns/x"))
    assert mountns.mounts_below("/run", str(info))
    assert not mountns.mounts_below("/run/docker/netns/x", str(info))
    assert not mountns.mounts_below("/etc", str(info))


def test_rootless_a_shadow_gives_a_private_top_and_keeps_the_hosts_entries(
    request: pytest.FixtureRequest,
) -> None:
    """For real, as a non-root user would (a hosted runner's): a user namespace may not
    lay an overlay over a folder with mounts below it, so /run is shadowed instead; the
    process makes its service-account folder there and still sees /run's entries, and
    the host's /run is left as it was."""
    # where nobody can reach it (pytest's tmp_path is private to its user)
    scratch = Path(tempfile.mkdtemp(prefix="mkdc-shadow-"))
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    script = mountns.shadow("/run", scratch / "shadowed")
    script += " && mkdir -p /run/mkdc-probe/sa && echo t0ken > /run/mkdc-probe/sa/token"
    script += " && cat /var/run/mkdc-probe/sa/token && ls /run"
    argv = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]
    argv += ["sh", "-c", script]
    if os.geteuid() == 0:  # as nobody, the way a non-root user runs it
        for path in (scratch, scratch / "shadowed"):
            os.chown(path, 65534, 65534)
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if out.returncode != 0 and "Operation not permitted" in out.stderr:
        pytest.skip(f"this kernel allows no user namespace here: {out.stderr.strip()}")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert lines[0] == "t0ken"
    assert set(os.listdir("/run")) <= set(lines[1:]) | {"mkdc-probe"}
    assert not os.path.exists("/run/mkdc-probe")


def test_rootless_the_overlay_of_a_folder_with_mounts_below_is_a_shadow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mountns.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(mountns, "mounts_below", lambda target: target == "/run")
    assert "mount -t tmpfs" in mountns.overlay("/run", tmp_path / "u", tmp_path / "w")
    assert mountns.overlay("/etc", tmp_path / "u", tmp_path / "w").startswith("mount -t overlay")
