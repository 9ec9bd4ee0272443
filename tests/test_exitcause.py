# ruff: noqa: E501  (real log lines, kept whole)
"""The line quoted when a dispatcher exits at start: the cause, not the last stack frame."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cluster import exitcause

GO_PANIC = """\
I1205 12:00:00.000000       1 main.go:40] starting
panic: prices ConfigMap kueue-system/prices not found

goroutine 1 [running]:
main.loadPrices(...)
	/src/dispatcher/main.go:57 +0x1a5
main.main()
	/src/dispatcher/main.go:21 +0x25
"""

GO_ZAP_PORT_IN_USE = """\
2026-12-05T12:00:00Z	INFO	setup	starting manager
2026-12-05T12:00:00Z	ERROR	setup	problem running manager	{"error": "listen tcp :8081: bind: address already in use"}
main.main
	/src/cmd/main.go:90
runtime.main
	/usr/local/go/src/runtime/proc.go:290
"""

KLOG_FATAL = """\
I1205 12:00:00.000000       1 leaderelection.go:250] attempting to acquire leader lease
E1205 12:00:01.000000       1 main.go:70] "unable to list Workloads" err="workloads.kueue.x-k8s.io is forbidden"
goroutine 1 [running]:
k8s.io/klog/v2.(*loggingT).output(...)
"""

JSON_LOG = """\
{"level":"info","msg":"starting"}
{"level":"error","msg":"cannot read settings","error":"open /etc/dispatcher/settings.yaml: no such file or directory"}
"""


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        (GO_PANIC, "panic: prices ConfigMap kueue-system/prices not found"),
        (GO_ZAP_PORT_IN_USE, "address already in use"),
        (KLOG_FATAL, "is forbidden"),
        (JSON_LOG, "no such file or directory"),
        ("starting\nready\nstopped by a signal\n", "stopped by a signal"),
        ("", "no output"),
    ],
)
def test_the_cause_is_the_line_that_says_why(log: str, expected: str) -> None:
    assert expected in exitcause.cause(log)


def test_a_go_panic_is_quoted_not_its_last_frame() -> None:
    assert exitcause.cause(GO_PANIC) == "panic: prices ConfigMap kueue-system/prices not found"
    assert "proc.go" not in exitcause.cause(GO_ZAP_PORT_IN_USE)


def python_dies(tmp_path: Path, body: str) -> str:
    script = tmp_path / "dispatcher.py"
    script.write_text(body)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert proc.returncode != 0
    return proc.stdout + proc.stderr


def test_a_python_traceback_gives_its_exception(tmp_path: Path) -> None:
    out = python_dies(
        tmp_path,
        "import logging\nlogging.basicConfig()\nlogging.info('starting')\n"
        "def load():\n    open('/nonexistent/settings.yaml')\nload()\n",
    )
    assert exitcause.cause(out) == (
        "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/settings.yaml'"
    )


def test_a_python_port_in_use(tmp_path: Path) -> None:
    out = python_dies(
        tmp_path,
        "import socket\na = socket.socket(); a.bind(('127.0.0.1', 0)); a.listen()\n"
        "b = socket.socket(); b.bind(a.getsockname())\n",
    )
    assert exitcause.cause(out).startswith("OSError: [Errno 98] Address already in use")


def test_a_shell_dispatcher_missing_a_file() -> None:
    proc = subprocess.run(
        ["sh", "-c", "echo starting; . /nonexistent/dispatcher.env; echo never"],
        capture_output=True,
        text=True,
    )
    why = exitcause.cause(proc.stdout + proc.stderr)
    assert "/nonexistent/dispatcher.env" in why and "starting" not in why


def test_a_long_line_is_cut() -> None:
    why = exitcause.cause("error: " + "x" * 1000)
    assert len(why) == exitcause.MAX_LENGTH and why.endswith("...")
