"""Private run directories (`/tmp/mkdc-run-*`): made with their owner recorded, and
removed once that owner is gone.

A run directory holds a run's CA key, kubeconfigs and tokens. The run removes it at its
end; a run killed outright (SIGKILL, the OOM killer) cannot, and while its processes die
with it (parent-death signals), the directory stays. The owner record (pid and start
time, so a reused pid is not taken for the owner) lets the next `mkdc run`, `mkdc up` or
`mkdc down` tell a left-over directory from the directory of a run still going, such as
a second `mkdc run` on the same machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

OWNER_FILE = "owner.json"
PREFIXES = ("mkdc-run-", "mkdc-existing-", "mkdc-kind-")
# Directories made before owners were recorded: only the local provider's, whose servers
# name the directory in their flags while the run lives, and only once older than this
# (a run of that version writes its certificates before its first server starts).
LEGACY_PREFIX = "mkdc-run-"
LEGACY_MIN_AGE = 120.0


def create(prefix: str, *, detached: bool = False) -> Path:
    """A new private (0700) run directory owned by this process. `detached`: its
    processes outlive this one (`mkdc up`), so it lives while any of them uses it."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    me = psutil.Process()
    record = {"pid": me.pid, "started": me.create_time(), "detached": detached}
    ticks = start_ticks(me.pid)
    if ticks is not None:
        record["startTicks"] = ticks
    (path / OWNER_FILE).write_text(json.dumps(record))
    return path


TEMP_DIR = "tmp"


def temp_dir(path: Path) -> Path:
    """The run's own temp directory (0700, made on first use): TMPDIR of every process it
    starts, and where its kubernetes clients copy their kubeconfigs' keys. A process
    killed outright cannot remove its temp files; here they go with the run directory."""
    tmp = path / TEMP_DIR
    tmp.mkdir(mode=0o700, exist_ok=True)
    return tmp


def containing(path: Path | str) -> Path | None:
    """The run directory `path` lies in (a kubeconfig the harness wrote), if any."""
    root = Path(tempfile.gettempdir()).resolve()
    try:
        first = Path(path).resolve().relative_to(root).parts[0]
    except (ValueError, IndexError):
        return None
    run = root / first
    return run if first.startswith(PREFIXES) and run.is_dir() else None


CLEANUP_FILE = "cleanup.json"


def add_cleanup(path: Path, argv: list[str]) -> None:
    """A command that undoes something this run made outside its directory (a kind
    cluster, say); a sweep that finds the directory left over runs it first."""
    commands = _cleanups(path)
    if argv not in commands:
        (path / CLEANUP_FILE).write_text(json.dumps([*commands, argv]))


def drop_cleanup(path: Path, argv: list[str]) -> None:
    """The run undid it itself."""
    commands = [c for c in _cleanups(path) if c != argv]
    with contextlib.suppress(OSError):
        (path / CLEANUP_FILE).write_text(json.dumps(commands))


def _cleanups(path: Path) -> list[list[str]]:
    try:
        commands = json.loads((path / CLEANUP_FILE).read_text())
    except (OSError, ValueError):
        return []
    return [list(map(str, c)) for c in commands if isinstance(c, list)]


@dataclass(frozen=True)
class Removed:
    """A left-over run directory that was removed, and why it counted as left over."""

    path: Path
    why: str
    killed: int = 0  # processes still using it, stopped first
    undone: int = 0  # cleanup commands run (kind clusters deleted, say)

    def describe(self) -> str:
        killed = f"; stopped {self.killed} process(es) still using it" if self.killed else ""
        undone = f"; ran {self.undone} cleanup command(s) it left" if self.undone else ""
        return f"removed left-over run directory {self.path} ({self.why}{killed}{undone})"


def sweep(root: Path | None = None) -> list[Removed]:
    """Remove every run directory under `root` (the temp dir) whose owner is gone."""
    root = root or Path(tempfile.gettempdir())
    removed = []
    for path in sorted(root.iterdir()):
        if path.name.startswith(PREFIXES) and _ours(path):
            with contextlib.suppress(OSError):  # another sweep got there first
                gone = remove_if_left_over(path)
                if gone is not None:
                    removed.append(gone)
    return removed


def remove_if_left_over(path: Path) -> Removed | None:
    """Remove `path` when no live run owns it; None when it is (or may be) in use.

    - Owner recorded and alive: in use.
    - Owner gone, not detached: left over, even if processes still use it (they are that
      run's, orphaned); they are killed first.
    - Owner gone, detached (`mkdc up`): in use while any process uses it.
    - No owner recorded (an older mkdc): only a local-provider directory old enough and
      used by no process is left over.
    """
    owner = _owner(path)
    users = using(path)
    if owner is None:
        age = time.time() - path.stat().st_mtime
        if users or not path.name.startswith(LEGACY_PREFIX) or age < LEGACY_MIN_AGE:
            return None
        why = "no owner recorded and no process uses it"
    elif _alive(owner):
        return None
    elif owner.get("detached"):
        if users:
            return None
        why = f"its environment's processes are gone (started by pid {owner['pid']})"
    else:
        why = f"its run, pid {owner['pid']}, is gone"
    killed = 0
    for proc in users:
        with contextlib.suppress(psutil.Error):
            proc.kill()
            killed += 1
    psutil.wait_procs(users, timeout=5)
    undone = 0
    for argv in _cleanups(path):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run(argv, capture_output=True, timeout=120, check=False)
            undone += done.returncode == 0
    remove(path)
    return Removed(path, why, killed, undone)


def remove(path: Path) -> None:
    """Delete a run directory and all in it. A rootless run's overlay mounts (a user
    namespace's) leave their work folders mode 000, which the owner may change but not
    list: each folder is made the owner's again on the way down."""
    for folder, dirs, _files in os.walk(path):
        for name in dirs:
            child = os.path.join(folder, name)
            if not os.path.islink(child):
                with contextlib.suppress(OSError):
                    os.chmod(child, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)


def using(path: Path) -> list[psutil.Process]:
    """Processes other than this one whose command line or environment names `path`."""
    named = re.compile(re.escape(str(path)) + r"(?![\w.-])")
    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            text = "\0".join([*proc.cmdline(), *proc.environ().values()])
        except psutil.Error:  # gone, a zombie, or not ours to read
            continue
        if named.search(text):
            found.append(proc)
    return found


def _ours(path: Path) -> bool:
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def _owner(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads((path / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None


def _alive(owner: dict[str, Any]) -> bool:
    """The recorded owner runs: its pid exists and started when recorded. Its start is
    compared in clock ticks since boot where recorded: a start time in wall-clock seconds
    moves with the clock (psutil adds the boot time, which a stepped clock shifts: after a
    virtual machine was restored from a snapshot, every live run looked gone and a sweep
    killed them)."""
    try:
        pid = int(owner["pid"])
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        if "startTicks" in owner:
            return start_ticks(pid) == int(owner["startTicks"])
        return abs(proc.create_time() - float(owner["started"])) < 1.0
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


def start_ticks(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (`starttime` of /proc/PID/stat: no
    wall clock in it); None where it cannot be read."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
        # the fields after the command name, which may hold spaces and parentheses
        return int(stat_line[stat_line.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None
