"""Each dispatcher replica on a network of its own, as a Pod: for real, with pasta and
network namespaces. Two replicas listen on the same fixed port at once, and each reaches
the host's loopback only on the ports it is given (the apiservers')."""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from harness.cluster import mountns
from harness.orchestrate.dispatcher import exit_cause

# Listens on the controller-runtime defaults, then says whether it reached each host port.
REPLICA = """
import socket, sys, time, urllib.request
held = []
for port in (8080, 8081):
    s = socket.socket(); s.bind(("0.0.0.0", port)); s.listen(); held.append(s)
print("listening on 8080 and 8081", flush=True)
for port in sys.argv[1:]:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=3)
        print(f"reached {port}", flush=True)
    except OSError as exc:
        print(f"not reached {port}", flush=True)
time.sleep(2)
"""


@pytest.fixture
def host_servers() -> Iterator[tuple[int, int]]:
    """Two HTTP servers on the host's 127.0.0.1: one forwarded, one not."""
    servers = [
        http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
        for _ in range(2)
    ]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield servers[0].server_address[1], servers[1].server_address[1]
    for server in servers:
        server.shutdown()
        server.server_close()


def test_two_replicas_listen_on_the_same_ports_and_reach_only_the_given_ones(
    host_servers: tuple[int, int],
) -> None:
    if os.geteuid() != 0:
        pytest.skip("a network of its own needs root (rootless runs keep the host's network)")
    assert mountns.network_isolation() is None, "scripts/setup installs pasta (Debian's passt)"
    forwarded, other = host_servers
    replicas = [
        subprocess.Popen(
            mountns.private_command(
                [],
                [sys.executable, "-c", REPLICA, str(forwarded), str(other)],
                f"r{i}",
                [forwarded],
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        for i in range(2)
    ]
    try:  # pasta dies with its replica, so the output ends with the replica
        outputs = [proc.communicate(timeout=60)[0] for proc in replicas]
    finally:
        for proc in replicas:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    for proc, out in zip(replicas, outputs, strict=True):
        assert proc.returncode == 0, out
        assert "listening on 8080 and 8081" in out
        assert f"reached {forwarded}" in out and f"not reached {other}" in out
    time.sleep(0.5)
    assert not [_group(proc.pid) for proc in replicas if _group(proc.pid)]  # pasta died too


def test_a_port_in_use_on_a_shared_network_is_said_with_its_fix(tmp_path: Path) -> None:
    log = tmp_path / "dispatcher-1.log"
    log.write_text(
        '2026-12-05T12:00:00Z\tERROR\tsetup\tproblem running manager\t{"error": "listen tcp'
        ' :8081: bind: address already in use"}\nmain.main\n\t/src/main.go:90\n'
    )
    said = exit_cause(log, shared_network=True)
    assert said.startswith("2026-12-05T12:00:00Z\tERROR")
    assert "taken on the host, perhaps by another replica" in said
    assert "one replica" in said
    assert "perhaps by another replica" not in exit_cause(log, shared_network=False)


def _group(pgid: int) -> list[str]:
    """What still runs in a process group (a zombie has ended)."""
    return [
        " ".join(p.info["cmdline"] or [p.info["name"]])
        for p in psutil.process_iter(["cmdline", "name", "status"])
        if p.info["status"] != psutil.STATUS_ZOMBIE and _pgid(p.pid) == pgid
    ]


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def test_pasta_missing_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mountns.shutil, "which", lambda name: None)
    assert "pasta is missing" in (mountns.network_isolation() or "")


def test_a_port_argument_is_required() -> None:
    with pytest.raises(ValueError):
        mountns.own_network([])
