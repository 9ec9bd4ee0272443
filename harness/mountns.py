"""Commands run in a private mount namespace, so files a process expects at fixed host paths
(Kueue's metrics certs in /etc, a Pod's service-account files) can be given to it without
touching the host."""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

from harness.errors import UserError


def private_command(setup: list[str], argv: list[str], name: str) -> list[str]:
    """argv run after the shell commands `setup`, in a private mount namespace.

    The shell execs argv, so the process keeps the pid (and process group) it was started
    with: signals from the supervisor reach it directly.
    """
    unshare = shutil.which("unshare")
    if not unshare:
        raise UserError("the unshare command (util-linux) is missing: apt-get install util-linux")
    userns = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    script = " && ".join([*setup, 'exec "$@"'])
    return [
        unshare,
        *userns,
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        name,
        *argv,
    ]


def overlay(target: str | Path, upper: Path, work: Path) -> str:
    """A shell command that lays a writable private layer over `target` (host unchanged)."""
    upper.mkdir(mode=0o700, parents=True, exist_ok=True)
    work.mkdir(mode=0o700, parents=True, exist_ok=True)
    options = f"lowerdir={target},upperdir={upper},workdir={work}"
    return f"mount -t overlay overlay -o {shlex.quote(options)} {shlex.quote(str(target))}"


def provide_directory(source: Path, target: str, scratch: Path) -> list[str]:
    """Shell commands that make `source` appear at the absolute path `target`.

    Symlinks on the way are followed (/var/run is usually /run); where the path does not
    exist, its nearest existing ancestor gets a private overlay so the missing directories
    can be made in it.
    """
    real = Path(os.path.realpath(target))
    existing = real
    while not existing.exists():
        existing = existing.parent
    setup = []
    if existing != real:
        setup.append(overlay(existing, scratch / "upper", scratch / "work"))
        setup.append(f"mkdir -p {shlex.quote(str(real))}")
    setup.append(f"mount --bind {shlex.quote(str(source))} {shlex.quote(str(real))}")
    return setup
