"""Several runs for one `mkdc run`: from repeated --profile, or a plan file.

A plan file is a YAML list, one mapping per run::

    - profile: faulty-outside-config        # a built-in profile name or a path
      checks: [CORE-01, CORE-02]            # optional, else --checks
      skipChecks: [CORE-09]                 # optional, else --skip-checks
      reportDir: reports/outside-config     # optional, else <--report-dir or reports>/<name>
      workers: 3                            # optional, else --workers

Every other setting (provider, versions, slacks, ...) comes from the command line and is
the same for every run. Runs that can share an environment do
(`harness.orchestrate.run.run_all`), in the order given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from harness.errors import UserError, one_line, shown_path
from harness.orchestrate.options import Options
from harness.profile import schema
from harness.userfiles import read_text

MAX_PLAN_BYTES = 1 << 20


def for_profiles(profiles: Sequence[str], base: Options, report_dir: str | None) -> list[Options]:
    """One run per --profile: with one, --report-dir is its folder (default
    reports/<name>); with several, each writes <--report-dir or reports>/<name>."""
    if len(profiles) == 1 and report_dir:
        return [dataclasses.replace(base, profile=profiles[0], report_dir=Path(report_dir))]
    root = Path(report_dir or "reports")
    return [dataclasses.replace(base, profile=p, report_dir=_folder(root, p)) for p in profiles]


def _folder(root: Path, profile: str) -> Path:
    """A run's report folder when none is given: ``root/<profile name>``."""
    return root / Path(profile).stem


def read(path: Path, base: Options, report_dir: str | None) -> list[Options]:
    """The runs a plan file lists; UserError naming the file and the entry when wrong
    (the contract is harness/profile/plan.schema.json)."""
    label = f"--plan {shown_path(path)}"
    try:
        doc = yaml.safe_load(read_text(path, label, MAX_PLAN_BYTES))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise UserError(f"{label}: not YAML{where}: write a list of runs") from None
    problem = schema.problem(doc, "plan")
    if problem:
        raise UserError(one_line(f"{label}: {problem}"))
    root = Path(report_dir or "reports")
    return [_entry(item, base, root) for item in doc]


def _entry(item: dict[str, Any], base: Options, root: Path) -> Options:
    profile = item["profile"]
    return dataclasses.replace(
        base,
        profile=profile,
        report_dir=Path(item.get("reportDir", _folder(root, profile))),
        checks=_ids(item, "checks", base.checks),
        skip_checks=_ids(item, "skipChecks", base.skip_checks),
        workers=item.get("workers", base.workers),
    )


def _ids(item: dict[str, Any], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """A list of check IDs, or one comma-separated string of them."""
    if key not in item:
        return default
    value = item[key]
    values = value.split(",") if isinstance(value, str) else value
    return tuple(v.strip() for v in values if v.strip())
