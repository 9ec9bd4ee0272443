"""What `mkdc run` hands the pytest processes it starts (the session).

One typed object instead of a JSON dict read again at every use: `mkdc run` writes it
once to the private run directory, each test process loads it once (`current()`), and
the `--checks` / `--skip-checks` filter is answered in one place (`selects`).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SESSION_ENV = "MKDC_SESSION"  # the session file's path, for the test processes
EVENTS_FILE = "events.jsonl"  # progress events of the test processes, in the run directory


def selects(check_id: str, checks: Sequence[str], skip_checks: Sequence[str]) -> bool:
    """The --checks / --skip-checks filter: listed (or nothing listed) and not skipped."""
    return (not checks or check_id in checks) and check_id not in skip_checks


@dataclass(frozen=True)
class Session:
    """One conformance session: the environment, the dispatcher, the filter, the channel."""

    environment: Path  # the environment's run directory
    profile: Path
    run_id: str
    report_dir: Path
    control_address: str
    control_key: bytes
    dispatcher_users: frozenset[str] = frozenset()
    # replicas share one ServiceAccount (a vendor's Deployment): its requests are told
    # apart by the Pod that made them (harness.recording.recorder.per_pod_user)
    pod_users: bool = False
    capabilities: frozenset[str] = frozenset()
    slacks: dict[str, str] = field(default_factory=dict)
    checks: tuple[str, ...] = ()  # --checks: only these (all when empty)
    skip_checks: tuple[str, ...] = ()
    full: bool = False
    worker_secrets: dict[str, str] = field(default_factory=dict)
    audit_from: int = 0  # where this run's part of the manager's audit log begins
    events: Path | None = None  # None: in the environment's run directory
    # where a run on two environments claims the scenarios that run alone (harness.scenarios.slots):
    # the same folder in both environments' sessions; None: this process runs them all
    claims: Path | None = None

    @property
    def results_dir(self) -> Path:
        return self.report_dir / "results"

    @property
    def events_file(self) -> Path:
        """Where the test processes append their progress events (`harness.scenarios.progress`):
        one file for a run, also when part of it runs on a second environment."""
        return self.events or self.environment / EVENTS_FILE

    def selects(self, check_id: str) -> bool:
        """Whether this session judges `check_id` (--checks / --skip-checks)."""
        return selects(check_id, self.checks, self.skip_checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "environment": str(self.environment),
            "profile": str(self.profile),
            "runId": self.run_id,
            "reportDir": str(self.report_dir),
            "control": {"address": self.control_address, "key": self.control_key.hex()},
            "dispatcherUsers": sorted(self.dispatcher_users),
            "podUsers": self.pod_users,
            "capabilities": sorted(self.capabilities),
            "slacks": dict(self.slacks),
            "checks": list(self.checks),
            "skipChecks": list(self.skip_checks),
            "full": self.full,
            "workerSecrets": dict(self.worker_secrets),
            "auditFrom": self.audit_from,
            "events": str(self.events) if self.events else None,
            "claims": str(self.claims) if self.claims else None,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Session:
        return cls(
            environment=Path(doc["environment"]),
            profile=Path(doc["profile"]),
            run_id=doc["runId"],
            report_dir=Path(doc["reportDir"]),
            control_address=doc["control"]["address"],
            control_key=bytes.fromhex(doc["control"]["key"]),
            dispatcher_users=frozenset(doc.get("dispatcherUsers") or ()),
            pod_users=bool(doc.get("podUsers")),
            capabilities=frozenset(doc.get("capabilities") or ()),
            slacks=dict(doc.get("slacks") or {}),
            checks=tuple(doc.get("checks") or ()),
            skip_checks=tuple(doc.get("skipChecks") or ()),
            full=bool(doc.get("full")),
            worker_secrets=dict(doc.get("workerSecrets") or {}),
            audit_from=int(doc.get("auditFrom") or 0),
            events=Path(doc["events"]) if doc.get("events") else None,
            claims=Path(doc["claims"]) if doc.get("claims") else None,
        )

    def write(self, path: Path) -> Path:
        """Into the private run directory, readable by its owner only (it holds the
        control channel's key)."""
        path.write_text(json.dumps(self.to_json()))
        path.chmod(0o600)
        return path

    @classmethod
    def load(cls, path: Path) -> Session:
        return cls.from_json(json.loads(path.read_text()))


def current() -> Session:
    """This test process's session (the file named by MKDC_SESSION), loaded once."""
    return _loaded(os.environ[SESSION_ENV])


@functools.cache
def _loaded(path: str) -> Session:
    return Session.load(Path(path))
