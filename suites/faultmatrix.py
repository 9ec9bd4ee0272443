"""Fault matrix: each environment fault injected into a run of each dispatcher, to show that
no fault of the environment is ever blamed on the dispatcher.

``python -m suites.faultmatrix [--faults all|F,...] [--profiles P,...] [--checks ID,...]
[--every 20s] [--downtime 5s] [--jobs N]``

One ``mkdc run --inject FAULT`` per (profile, fault), on a quick set of checks whose
scenarios a fault every ``--every`` seconds is sure to hit. A cell counts the checks that
passed (the dispatcher rode the fault out), that were left undecided because the fault
disturbed their scenario, and that failed; the verdict is ``ok`` when nothing failed
(a check on the dispatcher's own writes that failed would be the dispatcher's, and the
cell says which). Written to ``reports/faults/fault-matrix.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.cluster import faults
from harness.results import Result
from suites.checks import CATALOGUE
from suites.selftest import BASELINES, Expectation, Outcome, run_one

REPORT_ROOT = Path("reports/faults")
MATRIX_FILE = "fault-matrix.md"
# quick scenarios that place, evict, change the config and escalate
CHECKS = ("CORE-01", "CORE-03", "CORE-04", "CORE-06", "CORE-07", "EXT-05")


def summarize(outcome: Outcome) -> str:
    """A cell: passed / undecided / failed counts, and the failed checks by name."""
    results = [r for r, _ in outcome.results.values()]
    if outcome.error:
        return f"error: {outcome.error}"
    counts = {r: results.count(r) for r in (Result.PASSED, Result.UNDECIDED, Result.FAILED)}
    text = f"{counts[Result.PASSED]} / {counts[Result.UNDECIDED]} / {counts[Result.FAILED]}"
    failed = [c for c, (r, _) in outcome.results.items() if r == Result.FAILED]
    return text + (f" (**failed: {', '.join(failed)}**)" if failed else "")


def excused_by_environment(outcome: Outcome) -> int:
    return sum(1 for r, m in outcome.results.values() if m.startswith("environment: "))


def render(
    cells: dict[tuple[str, str], Outcome],
    profiles: Sequence[str],
    kinds: Sequence[str],
    checks: Sequence[str] = CHECKS,
) -> str:
    head = ["dispatcher", *kinds]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in profiles:
        lines.append("| " + " | ".join([p, *(summarize(cells[p, k]) for k in kinds)]) + " |")
    failed = [
        o
        for o in cells.values()
        if o.error or any(r == Result.FAILED for r, _ in o.results.values())
    ]
    excused = sum(excused_by_environment(o) for o in cells.values())
    return (
        "\n".join(lines)
        + "\n\nEach cell: checks passed / undecided (the fault disturbed their scenario) / "
        f"failed, of {', '.join(checks)}.\n"
        f"{excused} results excused by an environment fault; "
        f"{len(failed)} runs with a failure or an error.\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m suites.faultmatrix", description=__doc__)
    p.add_argument("--faults", default="all", help=f"comma separated, of {', '.join(faults.KINDS)}")
    p.add_argument("--profiles", default=",".join(BASELINES))
    p.add_argument("--checks", default=",".join(CHECKS))
    p.add_argument("--every", default="20s")
    p.add_argument("--downtime", default="5s")
    p.add_argument("--jobs", type=int, default=1, help="runs at once (about 2.5 GiB each)")
    p.add_argument("--report-root", type=Path, default=REPORT_ROOT)
    args = p.parse_args(argv)
    kinds = faults.parse(args.faults)
    profiles = [x.strip() for x in args.profiles.split(",") if x.strip()]
    checks = tuple(c.strip() for c in args.checks.split(",") if c.strip())
    names = {cid: c.name for cid, c in CATALOGUE.items()}

    def one(cell: tuple[str, str]) -> Outcome:
        profile, kind = cell
        exp = Expectation("", (), checks, profile=profile)
        extra = ["--inject", kind, "--inject-every", args.every, "--inject-downtime", args.downtime]
        return run_one(exp, args.report_root / kind, names, extra)

    todo = [(pr, k) for pr in profiles for k in kinds]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        cells = dict(zip(todo, pool.map(one, todo), strict=True))
    text = render(cells, profiles, kinds, checks)
    args.report_root.mkdir(parents=True, exist_ok=True)
    (args.report_root / MATRIX_FILE).write_text(text)
    print(text)
    broken = any(o.error or o.problems for o in cells.values())
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
