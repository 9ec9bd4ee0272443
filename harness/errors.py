"""Errors the user can fix; the CLI turns them into one line on stderr and exit 2."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

SHOWN_CHARS = 80  # of a value quoted in a message: enough to recognise it


class UserError(Exception):
    """Bad input (profile, kubeconfig, missing binary, port in use), not a harness bug.

    The message must be one line that says what is wrong and where, so the CLI can
    print it as is (no traceback) and exit with status 2.
    """


class EnvironmentLimit(Exception):
    """The environment cannot set up what a scenario needs (e.g. this Kueue version does
    not keep a cluster inactive): its checks are reported skipped with this reason, never
    passed or failed."""


# JSON Schema's types as a message says them (the profile's and the report's schemas)
TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def shown(value: Any) -> str:
    """A value the user wrote, quoted for a message: repr (so a newline stays on the line),
    cut short when long (a 1 MB string would drown the message)."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def one_line(text: str) -> str:
    """`text` as one printable line: line breaks and control characters written as escapes,
    so a message quoting raw input (a file name, an argument) still fits the rule."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def shown_path(path: object) -> str:
    """A path for a message: as written (no quotes), on one line, cut when absurdly long."""
    text = one_line(str(path))
    return text if len(text) <= 4 * SHOWN_CHARS else text[: 4 * SHOWN_CHARS - 3] + "..."


def command_exit(prog: str, main: Callable[[], int | None]) -> int:
    """A command's exit status (``mkdc`` and the benchmark tools): bad input (a broken
    profile, a dispatcher that exits at start) is one line on stderr and 2, never a
    traceback; an interrupt is one line and 130."""
    try:
        return main() or 0
    except UserError as exc:
        print(f"{prog}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
