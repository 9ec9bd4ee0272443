"""A container probe run as the kubelet runs it, from inside the replica's network.

A replica on a network of its own listens on its own loopback, which the host cannot
reach; a probe therefore joins that network namespace (one short-lived thread, so the
harness's other threads stay where they are) before it connects. An exec probe runs its
command in the replica's mount and network namespaces, as the replica's user.
"""

from __future__ import annotations

import ctypes
import http.client
import os
import shutil
import socket
import ssl
import subprocess
import threading
from dataclasses import dataclass

_CLONE_NEWNET = 0x40000000


@dataclass(frozen=True)
class Probe:
    """A container probe as the kubelet runs it: one handler and its timings (seconds)."""

    kind: str  # httpGet, tcpSocket or exec
    port: int | None = None
    path: str = "/"
    scheme: str = "HTTP"
    host: str | None = None
    command: tuple[str, ...] = ()
    initial_delay: float = 0
    period: float = 10
    timeout: float = 1
    success_threshold: int = 1
    failure_threshold: int = 3

    def describe(self) -> str:
        if self.kind == "exec":
            return f"exec {' '.join(self.command)}"
        if self.kind == "tcpSocket":
            return f"tcpSocket :{self.port}"
        return f"httpGet {self.scheme.lower()}://:{self.port}{self.path}"


@dataclass(frozen=True)
class Target:
    """Where a probe goes: the replica's first process (whose mount namespace an exec
    probe joins; None: a plain process), whether it has a network of its own (joined
    too), and the user an exec probe runs as."""

    pid: int | None
    network: bool = False
    user: tuple[int, int] | None = None


def run(probe: Probe, target: Target) -> str | None:
    """None when the probe succeeds, else why it failed, in the kubelet's words."""
    if probe.kind == "exec":
        return _exec(probe, target)
    found: list[str | None] = ["probe did not finish"]

    def attempt() -> None:
        try:
            if target.pid is not None and target.network:
                _join_network(target.pid)
            found[0] = _http(probe) if probe.kind == "httpGet" else _tcp(probe)
        except OSError as exc:
            found[0] = f"{probe.describe()}: {exc.strerror or exc}"

    thread = threading.Thread(target=attempt, name="mkdc-probe", daemon=True)
    thread.start()
    thread.join(probe.timeout + 1)
    return found[0]


def _join_network(pid: int) -> None:
    """This thread into process `pid`'s network namespace (needs root)."""
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"cannot join the replica's network: {os.strerror(err)}")
    finally:
        os.close(fd)


def _http(probe: Probe) -> str | None:
    host = probe.host or "127.0.0.1"
    assert probe.port is not None
    if probe.scheme == "HTTPS":  # the kubelet does not verify a probe's certificate
        context = ssl._create_unverified_context()
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, probe.port, timeout=probe.timeout, context=context
        )
    else:
        conn = http.client.HTTPConnection(host, probe.port, timeout=probe.timeout)
    try:
        conn.request("GET", probe.path, headers={"User-Agent": "kube-probe/mkdc"})
        status = conn.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        return f"{probe.describe()}: {exc}"
    finally:
        conn.close()
    return None if 200 <= status < 400 else f"{probe.describe()}: HTTP status {status}"


def _tcp(probe: Probe) -> str | None:
    assert probe.port is not None
    try:
        socket.create_connection((probe.host or "127.0.0.1", probe.port), probe.timeout).close()
    except OSError as exc:
        return f"{probe.describe()}: {exc.strerror or exc}"
    return None


def _exec(probe: Probe, target: Target) -> str | None:
    argv = list(probe.command)
    if target.pid is not None:
        nsenter = shutil.which("nsenter") or "nsenter"
        user = []
        if target.user is not None:
            user = [f"--setuid={target.user[0]}", f"--setgid={target.user[1]}"]
        net = ["--net"] if target.network else []
        argv = [nsenter, f"--target={target.pid}", "--mount", *net, *user, "--", *argv]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=probe.timeout, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return f"{probe.describe()}: timed out after {probe.timeout:.0f}s"
    except OSError as exc:
        return f"{probe.describe()}: {exc.strerror or exc}"
    if done.returncode == 0:
        return None
    said = (done.stdout + done.stderr).decode(errors="replace").strip().splitlines()
    return f"{probe.describe()}: exit code {done.returncode}" + (f": {said[-1]}" if said else "")
