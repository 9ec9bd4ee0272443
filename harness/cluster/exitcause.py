"""Why a process exited, read from its log: the line a person would quote.

The last lines of a log that ends in a crash are usually a stack trace (a Go goroutine
dump, a Python traceback's frames), which name where it died, not why. The cause is the
last line that says so: a Go `panic:`, a Python exception, a logged error or fatal line
(zap, logr, klog, logging, JSON logs) or a shell's complaint.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

MAX_LENGTH = 300

_PANIC = re.compile(r"^(panic|fatal error): ")
_PYTHON_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b(: |$)")
_KLOG_ERROR = re.compile(r"^[EF]\d{4} \d\d:\d\d:\d\d")
_SAYS_ERROR = re.compile(
    r"\b(error|fatal|panic|exception|forbidden|denied|refused|no such file|not found"
    r"|cannot|can't|unable|failed|address already in use)\b",
    re.IGNORECASE,
)
# Go stack frames and Python traceback frames: where it happened, never why
_FRAME = re.compile(r'^(\s|goroutine \d+ |File "|Traceback \(most recent call last\))')

PORT_IN_USE = "address already in use"


def cause(text: str) -> str:
    """The line that explains an exit; the last non-empty line when none does."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "no output"
    chosen = _last(lines, lambda line: bool(_PANIC.match(line)))
    chosen = chosen or _last(lines, lambda line: bool(_PYTHON_EXCEPTION.match(line)))
    chosen = chosen or _last(
        lines,
        lambda line: (
            not _FRAME.match(line) and bool(_KLOG_ERROR.match(line) or _SAYS_ERROR.search(line))
        ),
    )
    found = (chosen or lines[-1]).strip()
    return found if len(found) <= MAX_LENGTH else found[: MAX_LENGTH - 3] + "..."


def cause_in(log: Path) -> str:
    """`cause` of a log file ("no output" when it is missing or empty)."""
    try:
        return cause(log.read_text(errors="replace"))
    except OSError:
        return "no output"


def _last(lines: list[str], wanted: Callable[[str], bool]) -> str | None:
    for line in reversed(lines):
        if wanted(line):
            return line
    return None
