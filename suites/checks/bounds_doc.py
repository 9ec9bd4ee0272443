"""docs/checks.md's table of whose each bound is, written from the catalogue.

Each check declares its bounds once (`@check(..., bounds=...)`); the table between the
markers in docs/checks.md is this module's output (`python -m suites.checks.bounds_doc`
writes it), and tests/test_catalogue.py fails when the two differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.check_terms import OWNERS
from harness.generated_docs import GeneratedSection
from suites.checks.catalogue import CATALOGUE

DOC = Path(__file__).resolve().parents[2] / "docs" / "checks.md"
BEGIN = "<!-- whose bound: generated from the catalogue's declarations -->"
END = "<!-- end of the generated bounds -->"


def table() -> str:
    """One row per bound: the check, whose, what, why; then the gates checks need."""
    owners = "".join(f"- **{owner}**: {meaning}.\n" for owner, meaning in OWNERS.items())
    rows = ["| check | whose | bound | why |", "|---|---|---|---|"]
    for check in CATALOGUE.values():
        for bound in check.bounds:
            rows.append(f"| {check.id} {check.name} | {bound.owner} | {bound.what} | {bound.why} |")
    gates = [
        f"- {check.id} needs Kueue's `{g.gate}` {'on' if g.state else 'off'}: {g.why}.\n"
        for check in CATALOGUE.values()
        for g in check.gates
    ]
    return owners + "\n" + "\n".join(rows) + "\n\n" + "".join(gates)


SECTION = GeneratedSection(DOC, BEGIN, END, table, "the bounds table")
rewritten = SECTION.rewritten  # docs/checks.md's text with the table made anew

if __name__ == "__main__":
    sys.exit(SECTION.write())
