"""A section of a doc page written by code: the text between two markers is what a
function makes, so the page and its source of truth cannot drift (a unit test compares)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GeneratedSection:
    """The text between `begin` and `end` in `doc` is `make()`'s, named `what`."""

    doc: Path
    begin: str
    end: str
    make: Callable[[], str]
    what: str

    def rewritten(self, text: str) -> str:
        """`text` (the page) with the section between the markers made anew."""
        head, rest = text.split(self.begin, 1)
        _old, tail = rest.split(self.end, 1)
        return f"{head}{self.begin}\n{self.make()}{self.end}{tail}"

    def write(self) -> int:
        """Rewrite the page in place (a module's `python -m` entry)."""
        self.doc.write_text(self.rewritten(self.doc.read_text()))
        print(f"wrote {self.what} in {self.doc}", file=sys.stderr)
        return 0
