"""What mkdc says on the console as it works: one line on stderr, after `mkdc: `."""

from __future__ import annotations

import sys


def log(msg: str) -> None:
    print(f"mkdc: {msg}", file=sys.stderr, flush=True)
