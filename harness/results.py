"""One check's result in one scenario: the record a test process writes for the report.

A record leaves pytest as a JSON file in the report's `results/` folder and comes back
when the run folds them into one result per check (harness.orchestrate.report_builder),
and when the suite explains them across scenarios (its findings). Both ends use this one
type; a file that does not fit it is refused by name, never half read.
"""

from __future__ import annotations

import enum
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from harness.errors import UserError


class Result(enum.StrEnum):
    """A check's result; the worst over its scenarios is its result in the report."""

    FAILED = "failed"
    UNDECIDED = "undecided"  # its scenario broke before the check's decision point
    PASSED = "passed"
    SKIPPED = "skipped"  # filtered out, or the environment lacks something
    NOT_SUPPORTED = "not-supported"  # the profile does not claim the check's feature

    @property
    def rank(self) -> int:
        """Worst first: failed < undecided < passed < skipped < not-supported."""
        return list(Result).index(self)


# field name -> JSON key, for the fields whose spelling differs
_KEYS = {
    "duration_seconds": "durationSeconds",
    "observed_until": "observedUntil",
    "shared_clusters": "sharedClusters",
    "dispatcher_users": "dispatcherUsers",
    "dispatcher_actions": "dispatcherActions",
}


@dataclass(frozen=True)
class DispatcherActions:
    """What the dispatcher itself did in the scenario that decided a check, from the
    manager's audit log (the suite words it; report.yaml's `dispatcherActions`): a few
    sentences, the most telling first, the line the console shows (`summary`), and the
    figures behind them. Times are the scenario's, as in the check's message."""

    lines: tuple[str, ...]
    summary: str = ""
    writes: int = 0  # its writes to Workloads in the window, refused ones too
    nomination_writes: int = 0  # of .status.nominatedClusterNames
    refused: int = 0
    workloads: tuple[str, ...] = ()  # the workloads it wrote
    last_write: float | None = None  # when its last write came (None: it wrote nothing)
    until: float = 0.0  # the window's end: where observation stopped
    audited: bool = True  # False: no audit log, its nominations as seen stand for writes

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "lines": list(self.lines),
            "writes": self.writes,
            "nominationWrites": self.nomination_writes,
            "refused": self.refused,
            "workloadsWritten": list(self.workloads),
            "lastWriteSeconds": self.last_write,
            "untilSeconds": self.until,
            "auditLog": self.audited,
        }

    @classmethod
    def from_json(cls, data: Any) -> DispatcherActions:
        """The account `data` holds; ValueError saying what does not fit."""
        if not isinstance(data, Mapping):
            raise ValueError("dispatcherActions must be an object")
        lines, workloads = data.get("lines"), data.get("workloadsWritten", [])
        summary = data.get("summary", "")
        if not isinstance(summary, str):
            raise ValueError("dispatcherActions.summary must be a string")
        for key, value in (("lines", lines), ("workloadsWritten", workloads)):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"dispatcherActions.{key} must be a list of strings")
        counts = {k: data.get(k, 0) for k in ("writes", "nominationWrites", "refused")}
        for key, value in counts.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"dispatcherActions.{key} must be an integer")
        last, until = data.get("lastWriteSeconds"), data.get("untilSeconds", 0.0)
        for key, value in (("lastWriteSeconds", last), ("untilSeconds", until)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise ValueError(f"dispatcherActions.{key} must be a number")
        return cls(
            lines=tuple(lines),  # type: ignore[arg-type]
            summary=summary,
            writes=counts["writes"],
            nomination_writes=counts["nominationWrites"],
            refused=counts["refused"],
            workloads=tuple(workloads),
            last_write=None if last is None else float(last),
            until=float(until),
            audited=bool(data.get("auditLog", True)),
        )


@dataclass(frozen=True)
class ScenarioResult:
    """`check`'s `result` in `scenario` ("collection" for one decided before any ran).

    A scenario that ran also carries what findings across scenarios need: its timeline
    (Timeline.to_list()), when it starts (`origin`, monotonic seconds, one clock for every
    test process) and until when it was observed, its config, whether it used the
    environment's shared clusters, its foreign workloads and whose writes are the
    dispatcher's."""

    check: str
    scenario: str
    result: Result
    message: str = ""
    duration_seconds: float = 0.0
    measured: dict[str, Any] = field(default_factory=dict)
    timeline: list[dict[str, Any]] | None = None
    origin: float = 0.0
    observed_until: float | None = None
    config: tuple[str, ...] = ()
    shared_clusters: bool = False
    foreign: tuple[str, ...] = ()
    dispatcher_users: tuple[str, ...] = ()
    scorecard: dict[str, Any] | None = None
    timeouts: dict[str, Any] | None = None
    shape: dict[str, Any] | None = None
    dispatcher_actions: DispatcherActions | None = None  # for a failed check

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, DispatcherActions):
                value = value.to_json()
            out[_KEYS.get(f.name, f.name)] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: Any) -> ScenarioResult:
        """The record `data` holds; ValueError saying what does not fit."""
        if not isinstance(data, Mapping):
            raise ValueError("not a JSON object")
        by_key = {_KEYS.get(f.name, f.name): f for f in fields(cls)}
        unknown = sorted(set(data) - set(by_key))
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for key, f in by_key.items():
            if key not in data:
                if f.name in ("check", "scenario", "result"):
                    raise ValueError(f"{key} is missing")
                continue
            values[f.name] = _checked(f.name, key, data[key])
        return cls(**values)


def _checked(name: str, key: str, value: Any) -> Any:
    """`value` converted to field `name`'s type, or ValueError naming `key`."""

    def wrong(want: str) -> ValueError:
        return ValueError(f"{key} must be {want}, got {type(value).__name__}")

    if name == "result":
        try:
            return Result(value)
        except ValueError:
            raise ValueError(f"result {value!r} is not one of {', '.join(Result)}") from None
    if name in ("check", "scenario", "message"):
        if not isinstance(value, str):
            raise wrong("a string")
        return value
    if name in ("duration_seconds", "origin") or (name == "observed_until" and value is not None):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong("a number")
        return float(value)
    if name in ("config", "foreign", "dispatcher_users"):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise wrong("a list of strings")
        return tuple(value)
    if name == "shared_clusters":
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if name == "timeline" and value is not None:
        if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
            raise wrong("a list of events")
        return value
    if name == "dispatcher_actions" and value is not None:
        return DispatcherActions.from_json(value)
    if name in ("measured", "scorecard", "timeouts", "shape") and value is not None:
        if not isinstance(value, dict):
            raise wrong("an object")
    return value


def write(results_dir: Path, record: ScenarioResult) -> Path:
    """The record as a file of its own (test processes write side by side)."""
    path = results_dir / f"{record.scenario}-{record.check}-{secrets.token_hex(3)}.json"
    path.write_text(json.dumps(record.to_json()))
    return path


def read_all(results_dir: Path) -> list[ScenarioResult]:
    """Every record in `results_dir`, in file-name order; UserError naming a file that
    is not one."""
    records = []
    for path in sorted(results_dir.glob("*.json")):
        try:
            records.append(ScenarioResult.from_json(json.loads(path.read_text())))
        except ValueError as exc:
            raise UserError(f"result file {path} is not a scenario result: {exc}") from None
    return records
