"""Run directories left by killed runs are removed; a live run's never is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness.cluster import rundir

GONE = {"pid": 999_999_999, "started": 0.0}  # no such process


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def made(root: Path, name: str, owner: dict[str, Any] | None, age: float = 0.0) -> Path:
    path = root / name
    path.mkdir(mode=0o700)
    if owner is not None:
        (path / rundir.OWNER_FILE).write_text(json.dumps(owner))
    if age:
        then = time.time() - age
        os.utime(path, (then, then))
    return path


def user_of(path: Path) -> subprocess.Popen:
    """A process that names `path` in its environment, as a test process of that run does."""
    env = {**os.environ, "MKDC_SESSION": str(path / "session.json")}
    return subprocess.Popen(["/bin/sleep", "60"], env=env)


def test_a_live_runs_directory_stays(private_tmp: Path) -> None:
    mine = rundir.create("mkdc-run-")
    assert mine.parent == private_tmp and oct(mine.stat().st_mode & 0o777) == "0o700"
    assert rundir.sweep(private_tmp) == [] and mine.exists()


def test_a_directory_whose_run_is_gone_is_removed(private_tmp: Path) -> None:
    left = made(private_tmp, "mkdc-run-left", {**GONE, "detached": False})
    [removed] = rundir.sweep(private_tmp)
    assert removed.path == left and not left.exists()
    assert "its run, pid 999999999, is gone" in removed.describe()


def test_a_reused_pid_is_not_the_owner(private_tmp: Path) -> None:
    reused = made(private_tmp, "mkdc-existing-x", {"pid": os.getpid(), "started": 1.0})
    assert [r.path for r in rundir.sweep(private_tmp)] == [reused]


def test_processes_still_using_a_dead_runs_directory_are_stopped(private_tmp: Path) -> None:
    left = made(private_tmp, "mkdc-run-orphans", {**GONE, "detached": False})
    orphan = user_of(left)
    try:
        time.sleep(0.2)
        [removed] = rundir.sweep(private_tmp)
        assert removed.killed == 1 and not left.exists()
        assert not psutil.pid_exists(orphan.pid)  # killed and reaped
    finally:
        orphan.kill()


def test_an_environment_left_running_by_mkdc_up_stays_while_used(private_tmp: Path) -> None:
    up = made(private_tmp, "mkdc-run-up", {**GONE, "detached": True})
    server = user_of(up)
    try:
        time.sleep(0.2)
        assert rundir.sweep(private_tmp) == [] and up.exists()
    finally:
        server.kill()
        server.wait()
    [removed] = rundir.sweep(private_tmp)
    assert removed.path == up and "environment's processes are gone" in removed.why


def test_directories_of_older_versions_go_only_when_old_and_unused(private_tmp: Path) -> None:
    young = made(private_tmp, "mkdc-run-young", None)
    used = made(private_tmp, "mkdc-run-used", None, age=600)
    other = made(private_tmp, "mkdc-existing-old", None, age=600)  # nothing names it in use
    old = made(private_tmp, "mkdc-run-old", None, age=600)
    made(private_tmp, "not-mkdc", {**GONE, "detached": False})
    user = user_of(used)
    try:
        time.sleep(0.2)
        assert [r.path for r in rundir.sweep(private_tmp)] == [old]
    finally:
        user.kill()
        user.wait()
    assert young.exists() and used.exists() and other.exists()


def test_a_longer_name_is_not_a_use_of_its_prefix(private_tmp: Path) -> None:
    short = made(private_tmp, "mkdc-run-ab", None)
    longer = made(private_tmp, "mkdc-run-abc", None)
    user = user_of(longer)
    try:
        time.sleep(0.2)
        users = rundir.using(short)
        assert [p.pid for p in rundir.using(longer)] == [user.pid]
        assert user.pid not in [p.pid for p in users]
    finally:
        user.kill()
        user.wait()


def test_the_owner_record_names_this_process(private_tmp: Path) -> None:
    record = json.loads((rundir.create("mkdc-run-", detached=True) / rundir.OWNER_FILE).read_text())
    me = psutil.Process()
    ticks = rundir.start_ticks(me.pid)
    assert ticks is not None and ticks > 0
    assert record == {
        "pid": me.pid,
        "started": me.create_time(),
        "detached": True,
        "startTicks": ticks,
    }


def test_a_live_owner_stays_one_when_the_clock_is_stepped(private_tmp: Path) -> None:
    """Its start in wall-clock seconds moved (a restored virtual machine, a clock set);
    its start in ticks since boot did not."""
    me = os.getpid()
    ticks = rundir.start_ticks(me)
    stepped = {"pid": me, "started": 1.0, "startTicks": ticks, "detached": False}
    made(private_tmp, "mkdc-run-stepped", stepped)
    assert rundir.sweep(private_tmp) == []


def test_a_reused_pid_is_not_the_owner_by_its_ticks_either(private_tmp: Path) -> None:
    me = psutil.Process()
    reused = {"pid": me.pid, "started": me.create_time(), "startTicks": 1, "detached": False}
    path = made(private_tmp, "mkdc-run-reused", reused)
    assert [r.path for r in rundir.sweep(private_tmp)] == [path]


def test_a_dead_runs_cleanup_commands_run_before_its_directory_goes(private_tmp: Path) -> None:
    left = made(private_tmp, "mkdc-kind-left", {**GONE, "detached": False})
    marker = private_tmp / "cluster-deleted"
    rundir.add_cleanup(left, ["/bin/sh", "-c", f"touch {marker}"])
    rundir.add_cleanup(left, ["/bin/sh", "-c", f"touch {marker}"])  # recorded once
    rundir.add_cleanup(left, ["/bin/false"])  # a failing one does not stop the sweep
    [removed] = rundir.sweep(private_tmp)
    assert marker.exists() and not left.exists()
    assert removed.undone == 1 and "ran 1 cleanup command(s)" in removed.describe()


def test_cleanup_the_run_did_itself_is_not_repeated(private_tmp: Path) -> None:
    left = made(private_tmp, "mkdc-kind-done", {**GONE, "detached": False})
    marker = private_tmp / "twice"
    rundir.add_cleanup(left, ["/bin/sh", "-c", f"touch {marker}"])
    rundir.drop_cleanup(left, ["/bin/sh", "-c", f"touch {marker}"])
    rundir.sweep(private_tmp)
    assert not marker.exists() and not left.exists()


def test_a_client_for_a_runs_kubeconfig_keeps_its_key_files_in_the_run(private_tmp: Path) -> None:
    """The client copies the kubeconfig's CA, certificate and key to files, and a process
    killed outright leaves them: for a run's kubeconfig, inside the run directory."""
    from harness.cluster import kube, pki

    ca = pki.CertificateAuthority()
    document = pki.kubeconfig(
        "manager",
        "https://127.0.0.1:1",
        ca.cert_pem,
        ca.issue("mkdc-admin", client=True),
        "mkdc-admin",
    )
    run = rundir.create("mkdc-run-")
    path = pki.write_kubeconfig(run / "admin.kubeconfig", document)
    elsewhere = pki.write_kubeconfig(private_tmp / "user.kubeconfig", document)
    cfg = kube.api_client(path).configuration
    files = {Path(cfg.ssl_ca_cert), Path(cfg.cert_file), Path(cfg.key_file)}
    assert {f.parent for f in files} == {rundir.temp_dir(run)}
    assert rundir.temp_dir(run).stat().st_mode & 0o777 == 0o700
    assert rundir.containing(path) == run and rundir.containing(elsewhere) is None
    assert rundir.containing("/etc/kubernetes/admin.conf") is None


def test_a_rootless_runs_overlay_work_folders_are_removed_too(tmp_path: Path) -> None:
    """Overlay mounts in a user namespace leave their work folder mode 000: the owner may
    not list it, so a plain rmtree left the run directory behind after a non-root run.
    Run without the capabilities that let root ignore modes (as a non-root user is)."""
    run_dir = tmp_path / "mkdc-run-x"
    (run_dir / "manager" / "etc-work" / "work").mkdir(parents=True)
    (run_dir / "manager" / "etc-work" / "work").chmod(0)
    (run_dir / "manager" / "file").write_text("x")
    script = "import sys; from pathlib import Path; from harness.cluster import rundir;"
    script += " rundir.remove(Path(sys.argv[1]))"
    argv = [sys.executable, "-c", script, str(run_dir)]
    if os.geteuid() == 0:
        argv = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", *argv]
    subprocess.run(argv, cwd=Path(__file__).resolve().parent.parent, check=True)
    assert not run_dir.exists()
