"""mkdc as a user installs it: the project's wheel, built from this checkout, installed into
a fresh virtualenv outside it, and run from an empty directory, so that nothing it needs
may come from the checkout (profiles, the suite, kind configurations, the Go example).

The wheel and its dependencies are installed offline from uv's cache (what the project's
own venv was installed from): a fresh environment, no package index needed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.e2e import mkdc_cli

ROOT = Path(__file__).resolve().parents[2]


def _uv() -> str:
    found = Path(sys.executable).parent / "uv"
    return str(found) if found.is_file() else (shutil.which("uv") or "uv")


def _run(argv: list[str], tmp: Path, cwd: Path | None = None) -> None:
    """`argv`, its temporary files (uv's build locks) in `tmp`, not the machine's."""
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(argv[:4])} failed: {proc.stderr[-2000:]}")


def build_wheel(wheels: Path) -> Path:
    """mkdc's wheel in `wheels`, built from a copy of the checkout's tracked files
    (setuptools writes its scratch folders beside the sources, where a parallel test would
    read them half written)."""
    source = wheels.parent / "source"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    _run(
        [_uv(), "build", "--wheel", "--offline", "--quiet", "--out-dir", str(wheels)],
        wheels.parent,
        source,
    )
    shutil.rmtree(source)
    [wheel] = wheels.glob("mkdc-*.whl")
    return wheel


def install(where: Path) -> Path:
    """The wheel installed into a fresh virtualenv in `where`; the path of its `mkdc`."""
    wheel = build_wheel(where / "dist")
    venv = where / "venv"
    _run([_uv(), "venv", "--offline", "--quiet", "--python", sys.executable, str(venv)], where)
    python = venv / "bin" / "python"
    _run(
        [_uv(), "pip", "install", "--offline", "--quiet", "--python", str(python), str(wheel)],
        where,
    )
    return venv / "bin" / "mkdc"


def environ(venv_mkdc: Path) -> dict[str, str]:
    """A user's environment for the installed command: its venv first on PATH, nothing of
    this checkout on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv_mkdc.parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def mkdc(
    venv_mkdc: Path,
    args: list[str],
    cwd: Path,
    timeout: float = 900,
    tmpdir: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """The installed `mkdc ARGS...` from `cwd`, never raising on its exit code; `tmpdir`
    its TMPDIR (where its run directory goes)."""
    env = environ(venv_mkdc)
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return mkdc_cli.mkdc(args, timeout, command=[str(venv_mkdc)], cwd=cwd, env=env)
