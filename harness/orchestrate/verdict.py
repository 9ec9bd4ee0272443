"""The end of a run: the evidence a reader needs kept in the report directory before the
run directory goes, the report written, and the verdict said with its exit status."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.cluster.environment import Environment
from harness.console import log
from harness.errors import UserError
from harness.orchestrate.dispatcher import DispatcherRunner, StartFailure
from harness.orchestrate.environments import SECOND_ENVIRONMENT
from harness.orchestrate.outcome import Outcome
from harness.orchestrate.report_builder import error_report
from harness.profile import Profile
from harness.providers import KeepsLogs, Provider
from harness.report import Report, write_all
from harness.report.model import not_decided
from harness.scenarios import progress

INTERRUPTED_EXIT = 130


def keep_evidence(
    provider: Provider,
    env: Environment,
    report_dir: Path,
    runners: Sequence[DispatcherRunner | None],
    second: Environment | None,
) -> None:
    """The logs a reader needs when a check failed or stayed undecided, kept in the report
    before the run directory goes."""
    for each in filter(None, runners):
        each.save_logs()
    provider_logs(provider)
    collect_logs(env, report_dir)
    if second is not None:
        collect_logs(second, report_dir, f"logs/{SECOND_ENVIRONMENT}")


def provider_logs(provider: Provider) -> None:
    """Logs a provider keeps outside the run directory (kind: Kueue in its pods) put there."""
    if isinstance(provider, KeepsLogs):
        try:
            provider.save_logs()
        except (OSError, UserError) as exc:  # evidence is best effort: the verdict stands
            log(f"could not save the provider's logs: {exc}")


def collect_logs(env: Environment, report_dir: Path, folder: str = "logs") -> Path:
    """Kueue's and the dispatcher's logs, copied before the environment goes away."""
    target = report_dir / "artifacts" / folder
    target.mkdir(parents=True, exist_ok=True)
    for log_file in (env.run_dir / "logs").glob("*.log"):
        if "kueue" in log_file.name or "dispatcher" in log_file.name:
            shutil.copy(log_file, target / log_file.name)
    return target


def start_failure_report(
    exc: StartFailure, profile: Profile, env: Environment, report_dir: Path, outcome: Outcome
) -> UserError:
    """Keep the evidence before the run directory goes: the logs, and a report saying
    why nothing was judged. Returns the one-line error for the exit-2 path."""
    logs = collect_logs(env, report_dir)
    write_all(error_report(profile, env, outcome), report_dir)
    log_file = logs / f"{exc.process}.log"
    return UserError(f"{exc}: read {log_file} (report: {report_dir / 'report.yaml'})")


def say_verdict(
    report: Report,
    summary: dict[str, Any],
    report_dir: Path,
    interrupted: str,
    named: Sequence[str] = (),
) -> int:
    """The verdict on the console, and the exit status it means."""
    log(
        f"{summary['result']}: {summary['passed']} passed, {summary['failed']} failed, "
        f"{summary['undecided']} undecided, {summary['skipped']} skipped, "
        f"{summary['notSupported']} not supported"
    )
    for finding in report.findings:
        log(f"finding: {finding.title}")
    log(f"report: {report_dir}/report.html")
    broken = summary["failed"] or summary["undecided"]
    log(f"{'tracebacks' if broken else 'pytest output'}: {report_dir / progress.LOG_FILE}")
    if interrupted:
        log(f"interrupted ({interrupted}): the report is partial")
        return INTERRUPTED_EXIT
    missed = not_decided(report.results(), named)
    if missed:
        log(
            "not decided, though named with --checks (exit 1): "
            + "; ".join(f"{c.id} {c.result}: {c.message}" for c in missed)
        )
    return 1 if broken or missed else 0
