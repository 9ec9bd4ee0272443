"""Processes the harness starts: each in its own process group, tracked and stopped.

Every child gets its own session (so a signal to the group reaches anything it
forks), its output in a log file of the run directory, and, unless the
environment must outlive this Python process (`mkdc up`), a parent-death
signal so that even a crashed harness leaves nothing running. The list of
groups is also written to the run directory, so `mkdc down` from another
process can stop what `mkdc up` started.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.cluster import rundir
from harness.errors import UserError

PR_SET_PDEATHSIG = 1
STATE_FILE = "processes.json"
# The parent-death signal fires when the *thread* that forked the child exits, so
# every child is forked by this one long-lived thread, never by a short-lived worker.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mkdc-spawner")


def die_with_parent(parent: int | None = None) -> None:
    """SIGKILL this process when its parent (the thread that forked it) ends.

    Runs in a child between fork and exec, or first thing in a process that another one
    started without it (an xdist worker). Given the `parent` pid it expects, a process
    whose parent died before this call (it is then another process's child) dies now."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


_HANDED_OUT: set[int] = set()
# machine-wide claims on handed-out ports: port -> (abstract socket, when claimed)
_CLAIMS: dict[int, tuple[socket.socket, float]] = {}
CLAIM_SECONDS = 300.0  # longer than any server of an environment takes to bind its port


def free_port() -> int:
    """A port on 127.0.0.1 that is free now, below the kernel's ephemeral range.

    Why not port 0: the OS then picks from the ephemeral range, which every outgoing
    connection of every process also draws from, so between this call and the server's
    bind a client socket can take the port ("address already in use" at start). Ports
    handed out by this process are never handed out again, and a port another process
    of this project handed out in the last minutes is not handed out here (two runs, or
    parallel tests, on one machine: a server binds its port only seconds after the pick).
    """
    low = _ephemeral_low()
    _release_old_claims()
    for _ in range(1000):
        port = random.randrange(10000, low)
        if port not in _HANDED_OUT and not port_in_use(port) and _claim(port):
            _HANDED_OUT.add(port)
            return port
    raise OSError(f"no free port on 127.0.0.1 between 10000 and {low}")


def _claim(port: int) -> bool:
    """Bind the abstract Unix socket named after the port: exclusive machine-wide (per
    network namespace), and gone with this process, so a crash leaves no claim behind."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(f"\0mkdc-port-{port}")
    except OSError:
        sock.close()
        return False
    _CLAIMS[port] = (sock, time.monotonic())
    return True


def _release_old_claims() -> None:
    """Claims are held only while a server may still be on its way to its port."""
    now = time.monotonic()
    for port, (sock, since) in list(_CLAIMS.items()):
        if now - since > CLAIM_SECONDS:
            sock.close()
            del _CLAIMS[port]


def _ephemeral_low() -> int:
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return max(low, 10001)


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


@dataclass
class Managed:
    name: str
    popen: subprocess.Popen
    log: Path
    layer: int = 0  # stopped after every process of a higher layer (servers last)

    @property
    def pgid(self) -> int:
        return self.popen.pid  # leader of its own session

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(text[-lines:])


class Supervisor:
    """Starts, watches and stops the processes of one environment."""

    def __init__(self, run_dir: Path, *, outlive_parent: bool = False) -> None:
        self.run_dir = run_dir
        self.log_dir = run_dir / "logs"
        self.log_dir.mkdir(mode=0o700, exist_ok=True)
        self.temp_dir = rundir.temp_dir(run_dir)
        self.outlive_parent = outlive_parent
        self.procs: dict[str, Managed] = {}
        # clusters start their processes from parallel threads: one writer of procs at a time
        self._lock = threading.Lock()

    def start(
        self,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        unset: tuple[str, ...] = (),
        cwd: Path | None = None,
        layer: int = 0,
    ) -> Managed:
        """Start argv with the harness's environment plus `env`, less the names in `unset`;
        TMPDIR is the run directory's unless `env` names one."""
        if name in self.procs and self.procs[name].alive():
            raise RuntimeError(f"process {name} is already running")
        log = self.log_path(name)
        if not Path(argv[0]).exists():
            raise UserError(f"{name}: binary {argv[0]} not found: run `mkdc bins`")
        with open(log, "ab") as out:  # the child keeps its own descriptor
            popen = spawn(
                argv,
                out,
                env={
                    k: v
                    for k, v in {**os.environ, "TMPDIR": str(self.temp_dir), **(env or {})}.items()
                    if k not in unset
                },
                cwd=cwd,
                outlive_parent=self.outlive_parent,
            )
        managed = Managed(name, popen, log, layer)
        with self._lock:
            self.procs[name] = managed
            self._save()
        return managed

    def log_path(self, name: str) -> Path:
        """Where process `name`'s output goes; each start of it appends."""
        return self.log_dir / f"{name}.log"

    def check_alive(self, name: str) -> None:
        """UserError naming the process and its log when it has died."""
        proc = self.procs[name]
        if not proc.alive():
            raise UserError(
                f"{name} exited with code {proc.popen.returncode} at start: "
                f"read {proc.log} ({proc.log_tail(2)})"
            )

    def stop(self, name: str, *, sig: int = signal.SIGTERM, grace: float = 10.0) -> None:
        with self._lock:
            proc = self.procs.pop(name, None)
        if proc is None:
            return
        stop_group(proc.pgid, sig=sig, grace=grace)
        with contextlib.suppress(Exception):
            proc.popen.wait(timeout=1)
        with self._lock:
            self._save()

    def running(self, name: str) -> bool:
        """Started and not stopped (a frozen process is running)."""
        with self._lock:
            proc = self.procs.get(name)
        return proc is not None and proc.alive()

    def send_signal(self, name: str, sig: int) -> None:
        """Send `sig` to the process's group (SIGSTOP/SIGCONT freeze and thaw it whole)."""
        with self._lock:
            proc = self.procs[name]
        os.killpg(proc.pgid, sig)

    def kill(self, name: str) -> None:
        """SIGKILL at once: used by checks that simulate a crash."""
        self.stop(name, sig=signal.SIGKILL, grace=0)

    def stop_all(self, grace: float = 10.0) -> None:
        """Stop clients before the servers they talk to; each layer's groups at once."""
        with self._lock:
            procs = list(self.procs.values())
        stop_layers({p.pgid: p.layer for p in procs}, grace=grace)
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.popen.wait(timeout=1)
        with self._lock:
            self.procs.clear()
            self._save()

    def _save(self) -> None:
        """Under the lock: the groups, for `mkdc down` from another process (nothing once
        the run directory is removed: an environment stopped twice)."""
        if not self.run_dir.exists():
            return
        state = {name: [p.pgid, p.layer] for name, p in self.procs.items()}
        (self.run_dir / STATE_FILE).write_text(json.dumps(state))


def spawn(
    argv: list[str],
    out: IO[bytes],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    outlive_parent: bool = False,
) -> subprocess.Popen:
    """Start argv as the leader of its own session (a signal to its group reaches what it
    forks), output to `out`, killed when this process dies unless `outlive_parent`."""
    return _SPAWNER.submit(
        subprocess.Popen,
        argv,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=_in_child if outlive_parent else _in_child_dying_with_parent,
    ).result()


def _in_child() -> None:
    """SIGINT as the default action, even when this process was started with it ignored
    (a background job of a non-interactive shell, `nohup`): the harness stops what it
    started with SIGINT (pytest ends its scenarios on it), and an ignored-at-start signal
    can be neither trapped nor handled there."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _in_child_dying_with_parent() -> None:
    _in_child()
    die_with_parent()


LANE_POLL = 0.1  # seconds between looks at the lanes' running steps


@dataclass(frozen=True)
class Step:
    """One command of a `run_lanes` lane."""

    argv: list[str]
    env: dict[str, str] | None = None
    when: Callable[[], bool] | None = None  # asked once the step is due; False skips it


def run_lanes(lanes: Sequence[Sequence[Step]], out: IO[bytes], *, grace: float = 20.0) -> list[int]:
    """Lanes at once, each lane's steps one after the other, every step to its end in a
    process group of its own that dies with this process, all output to `out`; the exit
    codes of the steps that ran, lane by lane. A step's `when` is asked once the step
    before it has ended, so it can decide on what that one did.

    Interrupted here (Ctrl-C, or SIGTERM turned into KeyboardInterrupt), each running
    group gets SIGINT, so pytest ends its scenarios and says so, then SIGKILL after
    `grace` seconds or at a second interrupt; no further step starts, and the interrupt
    is raised again."""
    waiting = [list(lane) for lane in lanes]
    running: list[subprocess.Popen | None] = [None] * len(lanes)
    codes: list[list[int]] = [[] for _ in lanes]
    try:
        while True:
            for i, steps in enumerate(waiting):
                popen = running[i]
                if popen is not None:
                    if popen.poll() is None:
                        continue
                    codes[i].append(popen.returncode)
                    running[i] = None
                while steps and running[i] is None:
                    step = steps.pop(0)
                    if step.when is None or step.when():
                        running[i] = spawn(step.argv, out, env=step.env)
            if not any(running):
                return [code for lane in codes for code in lane]
            time.sleep(LANE_POLL)
    except KeyboardInterrupt:
        popens = [popen for popen in running if popen is not None]
        for popen in popens:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGINT)
        deadline = time.monotonic() + grace
        try:
            for popen in popens:
                popen.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            pass
        stop_groups([popen.pid for popen in popens], sig=signal.SIGKILL, grace=0)
        for popen in popens:
            popen.wait()
        raise


def stop_group(pgid: int, *, sig: int = signal.SIGTERM, grace: float = 10.0) -> None:
    stop_groups([pgid], sig=sig, grace=grace)


def stop_groups(pgids: list[int], *, sig: int = signal.SIGTERM, grace: float = 10.0) -> None:
    """Signal process groups, then SIGKILL whatever is left after `grace` seconds."""
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(group_alive(p) for p in pgids):
        time.sleep(0.05)
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    while any(group_alive(p) for p in pgids):
        time.sleep(0.02)


def stop_layers(layers: dict[int, int], *, grace: float = 10.0) -> None:
    """Stop groups layer by layer, highest first (pgid -> layer)."""
    for layer in sorted(set(layers.values()), reverse=True):
        stop_groups([pgid for pgid, lay in layers.items() if lay == layer], grace=grace)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _group_has_live_members(pgid)


def _group_has_live_members(pgid: int) -> bool:
    """True when a non-zombie process of the group exists (zombies count as gone)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def stop_recorded(run_dir: Path) -> int:
    """Stop the groups a Supervisor recorded in run_dir (used by `mkdc down`)."""
    path = run_dir / STATE_FILE
    if not path.exists():
        return 0
    groups = json.loads(path.read_text())
    stop_layers({int(pgid): int(layer) for pgid, layer in groups.values()})
    path.write_text("{}")
    return len(groups)
