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

from harness.counts import MAX_COUNT, valid_count
from harness.errors import UserError, shown, shown_path
from harness.orchestrate.options import Options
from harness.userfiles import read_text

MAX_PLAN_BYTES = 1 << 20
KEYS = ("profile", "checks", "skipChecks", "reportDir", "workers")


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
    """The runs a plan file lists; UserError naming the file and the entry when wrong."""
    label = f"--plan {shown_path(path)}"
    try:
        doc = yaml.safe_load(read_text(path, label, MAX_PLAN_BYTES))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise UserError(f"{label}: not YAML{where}: write a list of runs") from None
    if not isinstance(doc, list) or not doc:
        raise UserError(f"{label}: must be a non-empty list of runs (- profile: NAME)")
    root = Path(report_dir or "reports")
    return [_entry(f"{label} entry {i}", item, base, root) for i, item in enumerate(doc, 1)]


def _entry(label: str, item: Any, base: Options, root: Path) -> Options:
    if not isinstance(item, dict):
        raise UserError(f"{label}: must be a mapping with a profile")
    unknown = [k for k in item if k not in KEYS]
    if unknown:
        raise UserError(f"{label}: unknown key {shown(str(unknown[0]))} (known: {', '.join(KEYS)})")
    profile = item.get("profile")
    if not isinstance(profile, str) or not profile:
        raise UserError(f"{label}: profile must name a profile")
    folder = item.get("reportDir", _folder(root, profile))
    if not isinstance(folder, str | Path) or not str(folder):
        raise UserError(f"{label}: reportDir must be a folder path")
    return dataclasses.replace(
        base,
        profile=profile,
        report_dir=Path(folder),
        checks=_ids(label, item, "checks", base.checks),
        skip_checks=_ids(label, item, "skipChecks", base.skip_checks),
        workers=_workers(label, item, base.workers),
    )


def _workers(label: str, item: dict[str, Any], default: int | None) -> int | None:
    """A run's own worker count: a whole number in 1..MAX_COUNT."""
    if "workers" not in item:
        return default
    value = item["workers"]
    if not valid_count(value):
        raise UserError(f"{label}: workers must be a whole number from 1 to {MAX_COUNT}")
    return value


def _ids(label: str, item: dict[str, Any], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """A list of check IDs, or one comma-separated string of them."""
    if key not in item:
        return default
    value = item[key]
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{label}: {key} must be a list of check IDs")
    return tuple(v.strip() for v in value if v.strip())
