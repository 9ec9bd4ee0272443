"""The venv's real `mkdc` command on a few bad inputs: what the in-process cases show
(one line, exit 2) also holds for the process, its stderr (warnings and log lines
included), its temporary files and any process it might start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.bad_input import TRIED

MKDC = Path(sys.executable).parent / "mkdc"
KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "127.0.0.1:1"}}],  # no scheme
    "users": [{"name": "u", "user": {"exec": {"command": "no-such-plugin"}}}],
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "x",
}
CASES: dict[str, list[str | bytes]] = {
    "no arguments": [],
    "unknown flag": ["run", "--profile", "reference", "--frobnicate"],
    "bad --workers": ["up", "--workers", "0"],
    "non-UTF-8 profile": ["run", "--profile", "{in}/binary.yaml"],
    "deep profile": ["run", "--profile", "{in}/deep.yaml"],
    "bad date in profile": ["run", "--profile", "{in}/date.yaml"],
    "kubeconfig with warnings and logs": [
        "run",
        "--profile",
        "all-at-once",
        "--provider",
        "existing",
        "--cluster",
        "manager={in}/kubeconfig",
        "--cluster",
        "w1={in}/kubeconfig",
    ],
    "non-UTF-8 argument": ["run", "--profile", b"/nonexistent/\xff\xfe.yaml"],
    "missing binaries": ["run", "--profile", "reference"],
    "report that is not there": ["report", "verify", "{in}/missing.yaml"],
}


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    (d / "binary.yaml").write_bytes(b"apiVersion: mkdc/v1alpha1\n\xff\xfe\n")
    (d / "deep.yaml").write_text("spec: " + "[" * 5000 + "]" * 5000 + "\n")
    (d / "date.yaml").write_text("apiVersion: mkdc/v1alpha1\nmetadata: 2020-13-45\n")
    (d / "kubeconfig").write_text(yaml.safe_dump(KUBECONFIG))
    return d


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_command_says_one_line_and_exits_2(tmp_path: Path, inputs: Path, case: str) -> None:
    cwd, tmp, cache, empty_bin = (tmp_path / n for n in ("cwd", "tmp", "cache", "bin"))
    for d in (cwd, tmp, cache, empty_bin):
        d.mkdir()
    argv = [
        a.replace("{in}", str(inputs)).encode() if isinstance(a, str) else a for a in CASES[case]
    ]
    env = {"PATH": str(empty_bin), "TMPDIR": str(tmp), "MKDC_CACHE_DIR": str(cache)}
    started = time.monotonic()
    proc = subprocess.Popen(
        [os.fsencode(MKDC), *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # so anything it leaves running is in its session
    )
    out, err = proc.communicate(timeout=60)
    lines = err.decode("utf-8", "replace").splitlines()
    assert proc.returncode == 2 and len(lines) == 1, (proc.returncode, err)
    assert lines[0].startswith("mkdc: error: ") and "Traceback" not in lines[0], lines
    assert out == b""
    assert time.monotonic() - started < 30
    assert not [p for d in (cwd, tmp, cache) for p in d.iterdir()], "left behind"
    assert not [p for p in psutil.process_iter(["pid"]) if _session(p.pid) == proc.pid]
    TRIED["command: real process"] += 1


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None
