"""`mkdc run` as a user runs it, for the project's own e2e tests: a subprocess, its
output kept, and the report it wrote read back."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from harness.report import verify_report
from harness.suite import catalogue

PROFILES = Path(__file__).resolve().parents[2] / "dispatchers" / "profiles"


def mkdc(
    args: list[str],
    timeout: float = 900,
    *,
    command: list[str] | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`mkdc ARGS...` (this checkout's, or `command`), never raising on its exit code."""
    argv = [*(command or [sys.executable, "-m", "harness.cli"]), *args]
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def mkdc_run(
    profile: str | Path, report_dir: Path, *args: str, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """`mkdc run --profile PROFILE --report-dir DIR ARGS...`, never raising on its exit code."""
    return mkdc(["run", "--profile", str(profile), "--report-dir", str(report_dir), *args], timeout)


def mkdc_start(
    profile: str | Path,
    report_dir: Path,
    *args: str,
    output: Path,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """`mkdc run` started and not waited for (to be signalled); its stdout and stderr go
    to the file `output`."""
    argv = [sys.executable, "-m", "harness.cli", "run", "--profile", str(profile)]
    argv += ["--report-dir", str(report_dir), *args]
    with output.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)


def profile_variant(
    path: Path, change: Callable[[dict[str, Any]], None], base: str = "reference"
) -> Path:
    """The built-in profile `base` after `change` (which edits the document in place),
    written to `path`: a dispatcher as a test needs it, the rest as shipped. Paths the
    profile gives relative to itself (spec.run.goBuild, {profile_dir}) are made absolute."""
    text = (PROFILES / f"{base}.yaml").read_text().replace("{profile_dir}", str(PROFILES))
    doc = yaml.safe_load(text)
    run = doc["spec"].get("run") or {}
    if "goBuild" in run:
        run["goBuild"] = str((PROFILES / run["goBuild"]).resolve())
    change(doc)
    path.write_text(yaml.safe_dump(doc))
    return path


def run_dirs(output: str) -> list[Path]:
    """The run directories `mkdc run` announced in its output ("environment ready in ...: DIR"),
    the second environment's among them."""
    lines = [line for line in output.splitlines() if "environment ready in" in line]
    return [Path(line.rsplit(": ", 1)[1]) for line in lines]


def report_of(report_dir: Path) -> dict[str, Any]:
    return yaml.safe_load((report_dir / "report.yaml").read_text())


def results_of(report: dict[str, Any]) -> dict[str, str]:
    """Check ID -> result."""
    return {c["id"]: c["result"] for c in report["checks"]}


def assert_conforms(
    proc: subprocess.CompletedProcess[str], report_dir: Path, checks: str
) -> dict[str, Any]:
    """The run passed, each of `checks` (comma-separated) passed, and the report verifies."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = report_of(report_dir)
    results = results_of(report)
    assert {results[c] for c in checks.split(",")} == {"passed"}, results
    assert verify_report(report_dir / "report.yaml", catalogue()) == []
    return report
