"""A replica is confined as a kubelet confines a container: the commands, and (as root)
a real process in them that tries what a Pod's process cannot do."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from harness.cluster import mountns, sandbox


def test_hidden_are_the_outermost_of_tmp_the_temp_folder_and_the_run_directorys_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox.tempfile, "gettempdir", lambda: "/tmp/inner")
    assert sandbox.hidden_roots(Path("/tmp/inner/mkdc-run-1")) == (Path("/tmp"),)
    monkeypatch.setattr(sandbox.tempfile, "gettempdir", lambda: str(tmp_path))
    assert Path("/tmp") in sandbox.hidden_roots(tmp_path / "mkdc-run-1")


def test_the_user_is_the_security_contexts_and_never_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    assert sandbox.user_for(None, None) == sandbox.NOBODY
    assert sandbox.user_for(1000, None) == (1000, 1000)
    assert sandbox.user_for(1000, 2000) == (1000, 2000)
    assert sandbox.user_for(0, None) == sandbox.NOBODY  # asked for root: nobody
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    assert sandbox.user_for(1000, None) is None  # rootless: the harness's own user


def test_what_the_program_reads_is_needed(tmp_path: Path) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text("a: 1\n")
    needed = sandbox.needed_paths(
        [sys.executable, "-m", "dispatchers.reference"], {"CONFIG": str(settings), "X": "/nope"}
    )
    assert settings in needed and Path("/nope") not in needed
    assert Path(sys.prefix) in needed and Path(__file__).resolve().parents[1] in needed


def test_of_a_run_directory_only_the_replicas_own_files_are_needed(tmp_path: Path) -> None:
    run_dir = tmp_path / "mkdc-run-x"
    run_dir.mkdir()
    own, key, settings = run_dir / "dispatcher-0.kubeconfig", run_dir / "admin.key", tmp_path / "s"
    for path in (own, key, settings):
        path.write_text("x")
    argv = ["/bin/sh", f"--kubeconfig={own}", f"--key={key}", f"--settings={settings}"]
    needed = sandbox.needed_paths(argv, {"KEY": str(key)}, (run_dir,), (own,))
    assert own in needed and settings in needed and key not in needed


def test_hidden_folders_are_filled_where_made_then_moved_over(tmp_path: Path) -> None:
    box = sandbox.Sandbox(
        user=None, hidden=(tmp_path / "tmp",), needed=(tmp_path / "tmp" / "venv",)
    )
    (tmp_path / "tmp" / "venv").mkdir(parents=True)
    commands = sandbox.setup(box, tmp_path / "scratch")
    stage = tmp_path / "scratch" / "hidden-0"
    assert commands == [
        f"mount -t tmpfs -o mode=1777 tmpfs {stage}",
        f"mkdir -p {stage / 'venv'}",
        f"mount --rbind -o ro {tmp_path / 'tmp' / 'venv'} {stage / 'venv'}",
        f"mount -n --move {stage} {tmp_path / 'tmp'}",
        "cd /tmp",
    ]


def test_privileges_are_dropped_to_the_replicas_user() -> None:
    box = sandbox.Sandbox(user=(1000, 2000), hidden=(), needed=())
    prefix = sandbox.drop_privileges(box)
    assert "--reuid=1000" in prefix and "--regid=2000" in prefix
    assert "--bounding-set=-all" in prefix and prefix[-1] == "--"
    assert "--reuid=1000" not in sandbox.drop_privileges(
        sandbox.Sandbox(user=None, hidden=(), needed=())
    )


def confined(run_dir: Path, argv: list[str], name: str) -> tuple[sandbox.Sandbox, list[str]]:
    """argv confined as a replica of a run whose directory is `run_dir`."""
    box = sandbox.Sandbox(
        user=sandbox.user_for(None, None),
        hidden=sandbox.hidden_roots(run_dir),
        needed=sandbox.needed_paths(argv, {}, (run_dir,)),
    )
    command = mountns.private_command(
        sandbox.setup(box, run_dir / "scratch"),
        [*sandbox.drop_privileges(box), *argv],
        "replica",
        own_pids=True,
        hostname=name,
    )
    return box, command


def ways_in_tmp(box: sandbox.Sandbox) -> list[str]:
    """What a replica's private /tmp lists: the first folder on the way to each path it
    needs that lies under /tmp (an interpreter in a checkout there), nothing else."""
    tmp = Path("/tmp")
    return sorted({p.relative_to(tmp).parts[0] for p in box.needed if tmp in p.parents})


PROBE = r"""
import os, sys
print("uid", os.getuid())
print("tmp", os.listdir("/tmp"))
open("/tmp/fixed.kubeconfig", "w").write("mine")
try:
    open(sys.argv[1].removeprefix("key=")).read()
    print("key read")
except OSError as exc:
    print("key", type(exc).__name__)
try:
    os.kill(int(sys.argv[2]), 0)
    print("harness signalled")
except OSError as exc:
    print("signal", type(exc).__name__)
import dispatchers.reference  # its own program still imports
import socket
print("cwd", os.getcwd(), "host", socket.gethostname())
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
def test_a_replica_can_neither_read_the_keys_nor_signal_the_harness(tmp_path: Path) -> None:
    run_dir = tmp_path / "mkdc-run-x"
    run_dir.mkdir(mode=0o700)
    key = run_dir / "admin.key"
    key.write_text("cluster-admin")
    key.chmod(0o600)
    argv = [sys.executable, "-c", PROBE, f"key={key}", str(os.getpid())]
    said = []
    for _ in range(2):  # two replicas writing one fixed path
        box, command = confined(run_dir, argv, "dispatcher-0")
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        said.append(done.stdout.splitlines())
    assert (
        said[0]
        == said[1]
        == [
            "uid 65534",
            # private: the other's file is not there; only the way to what the program runs
            # from (a checkout or virtualenv under /tmp) is bound back
            f"tmp {ways_in_tmp(box)}",
            "key FileNotFoundError",  # the run directory is not in its view at all
            "signal ProcessLookupError",  # the harness is not in its PID namespace
            "cwd /tmp host dispatcher-0",  # its own host name, as a Pod has
        ]
    )
    assert not Path("/tmp/fixed.kubeconfig").exists()


SHELL_PROBE = (
    'echo "tmp $(ls -A /tmp | tr "\\n" " ")"; echo claimed > /tmp/fixed; '
    '[ -e "${1#dir=}" ] && echo "run directory seen" || echo "run directory hidden"; '
    'kill -0 "$2" 2>/dev/null && echo "harness signalled" || echo "harness out of reach"; '
    "grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status && echo no capabilities; "
    "cat /proc/sys/kernel/hostname"
)


def test_rootless_the_replica_is_confined_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For real, as a non-root user runs it (a hosted runner's): no other user to switch
    to, but the same private /tmp, hidden run directories, own PID namespace, and no
    capabilities left in its user namespace to undo the mounts."""
    run_dir = Path(tempfile.mkdtemp(prefix="mkdc-run-"))
    try:
        monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
        monkeypatch.setattr(mountns.os, "geteuid", lambda: 1000)
        argv = ["/bin/sh", "-c", SHELL_PROBE, "probe", f"dir={run_dir}", str(os.getpid())]
        box, command = confined(run_dir, argv, "dispatcher-1")
        assert box.user is None
        if os.geteuid() == 0:  # as nobody, the way a non-root user runs it
            for folder, _, _ in os.walk(run_dir):
                os.chown(folder, 65534, 65534)
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if done.returncode != 0 and "Operation not permitted" in done.stderr:
            pytest.skip(f"this kernel allows no user namespace here: {done.stderr.strip()}")
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [
            "tmp ",
            "run directory hidden",
            "harness out of reach",
            "no capabilities",
            "dispatcher-1",
        ]
        assert not Path("/tmp/fixed").exists()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


GRACEFUL = """
import signal, sys, time
def stop(*_):
    print("stopped gracefully", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("up", flush=True)
time.sleep(60)
"""


def _confined(tmp_path: Path, token: str) -> subprocess.Popen[str]:
    """A replica confined in its namespaces, in a session of its own as the supervisor
    starts one; `token` marks its processes."""
    argv = [sys.executable, "-c", GRACEFUL, token]
    box = sandbox.Sandbox(user=None, hidden=(), needed=())
    command = mountns.private_command(
        sandbox.setup(box, tmp_path), argv, "replica", own_pids=True, hostname="replica"
    )
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    return proc


def _left(token: str) -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or [])]


@pytest.mark.skipif(os.geteuid() != 0, reason="a PID namespace without a user one needs root")
def test_a_group_sigterm_stops_the_replica_as_it_likes_and_its_namespace_ends(
    tmp_path: Path,
) -> None:
    token = f"mkdc-graceful-{os.getpid()}"
    proc = _confined(tmp_path, token)
    os.killpg(proc.pid, signal.SIGTERM)  # as the supervisor stops a group
    out, _ = proc.communicate(timeout=30)
    assert (out, proc.returncode) == ("stopped gracefully\n", 0)
    assert _left(token) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="a PID namespace without a user one needs root")
def test_when_the_harness_dies_the_whole_namespace_goes(tmp_path: Path) -> None:
    token = f"mkdc-orphan-{os.getpid()}"
    proc = _confined(tmp_path, token)
    os.kill(proc.pid, signal.SIGKILL)  # unshare alone, as its parent-death signal would
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _left(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _left(token) == []
