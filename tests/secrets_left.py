"""Key and certificate files left in the shared temp directory.

A kubernetes client copies the key, certificate and CA of its kubeconfig into temp files
and removes them at its exit; a process killed outright leaves them behind. Every run
keeps its secrets in its private run directory, so a whole test session must end with
no new such file in the temp directory.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

PEM = b"-----BEGIN "
SETTLE_SECONDS = 15.0  # parallel workers exit (and clean up) just before the session ends


def pem_files(root: Path | None = None) -> set[Path]:
    """The temp files (tempfile's `tmp*` names) directly in `root` that hold PEM blocks."""
    found = set()
    for path in (root or Path(tempfile.gettempdir())).glob("tmp*"):
        try:
            with path.open("rb") as f:
                if f.read(len(PEM)) == PEM:
                    found.add(path)
        except OSError:  # a directory, gone meanwhile, not ours to read
            continue
    return found


def left_since(
    before: set[Path], root: Path | None = None, settle: float = SETTLE_SECONDS
) -> list[Path]:
    """New PEM temp files still there once exiting processes had `settle` s to remove them."""
    deadline = time.monotonic() + settle
    while True:
        left = sorted(pem_files(root) - before)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)
