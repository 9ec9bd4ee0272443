"""scripts/setup on a machine that lacks what `make test` needs, run by a user who cannot
install it: one message naming every missing piece and the command that installs them,
exit 2, before anything is built."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

SETUP = Path(__file__).resolve().parents[1] / "scripts" / "setup"
# what the script itself runs; everything else (docker, debootstrap, chromium, pasta, sudo)
# is absent from the PATH it is given
TOOLS = ("bash", "env", "id", "dirname", "sed", "sort", "head", "python3", "make", "unshare", "go")


def machine_without_them(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    tmp_path.chmod(0o755)
    return {"PATH": str(bin_dir), "HOME": str(tmp_path)}


def as_a_user(argv: list[str]) -> list[str]:
    """argv as nobody when the tests run as root (root would install instead)."""
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder another user can read (pytest's tmp_path is its owner's only)."""
    with tempfile.TemporaryDirectory(prefix="mkdc-setup-") as folder:
        os.chmod(folder, 0o755)
        yield Path(folder)


def test_one_message_names_everything_missing(shared_dir: Path) -> None:
    tmp_path = shared_dir
    script = tmp_path / "setup"
    shutil.copy(SETUP, script)
    script.chmod(0o755)
    env = machine_without_them(tmp_path)
    setpriv = shutil.which("setpriv") or "setpriv"
    argv = as_a_user([str(script), "--for", "test"])
    argv[0] = setpriv if argv[0] == "setpriv" else argv[0]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 2, out
    assert out.stdout == ""
    [line] = out.stderr.splitlines()
    assert line.startswith("setup: missing ")
    for piece in ("pasta", "debootstrap", "chromium", "a running Docker engine"):
        assert piece in line, line
    assert line.endswith("install them all with: sudo scripts/setup --for test")


def test_check_mode_lists_each_requirement(tmp_path: Path) -> None:
    env = machine_without_them(tmp_path)
    out = subprocess.run(
        ["bash", str(SETUP), "--for", "e2e", "--check"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 1
    assert "setup:    MISSING  pasta (for a network of its own for each dispatcher replica)" in (
        out.stdout
    )
    assert "chromium" not in out.stdout  # e2e does not need it
    assert out.stdout.rstrip().endswith("fix: sudo scripts/setup --for e2e")


@pytest.mark.parametrize("argv", [["--for", "all"], ["--bogus"]])
def test_bad_arguments_are_one_line(argv: list[str]) -> None:
    out = subprocess.run(["bash", str(SETUP), *argv], capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1
