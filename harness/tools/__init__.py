"""Tools beside the library: benchmarks and the process sampler they share."""

from __future__ import annotations

import sys
from collections.abc import Callable

from harness.errors import UserError, one_line


def entry(prog: str, main: Callable[[], int | None]) -> int:
    """A tool's exit status, as for `mkdc`: bad input (a profile that does not load, a
    dispatcher that exits at start) is one line on stderr and 2, never a traceback."""
    try:
        return main() or 0
    except UserError as exc:
        print(f"{prog}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
