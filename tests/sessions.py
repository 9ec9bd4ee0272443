"""Scenario code run without clusters: the session file `mkdc run` would write, and a
recorder whose timeline the test gives."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from harness.profile import load_profile
from harness.recording.timeline import Event, Timeline
from harness.scenarios.context import Context
from harness.scenarios.session import SESSION_ENV, Session


class FrozenRecorder:
    """A recorder whose timeline is given; `now` is 200 s after its start."""

    def __init__(self) -> None:
        self.started = time.monotonic() - 200
        self.events: list[Event] = []

    def now(self) -> float:
        return self.started + 200

    def snapshot(self, namespace: str | None = None) -> Timeline:
        return Timeline(self.events)

    def users(self) -> frozenset[str]:
        return frozenset()


def offline_context(recorder: FrozenRecorder, **fields: Any) -> Context:
    """The reference profile's scenario context with no clusters behind it."""
    return Context(
        env=None,  # type: ignore[arg-type]
        profile=load_profile("reference"),
        recorder=recorder,  # type: ignore[arg-type]
        run_id="r",
        **fields,
    )


def use_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **fields: object) -> Path:
    """Write a session whose report directory is `tmp_path` (results in results/) and name
    it in MKDC_SESSION; returns the report directory."""
    (tmp_path / "results").mkdir()
    session = Session(
        environment=tmp_path,
        profile=tmp_path / "profile.yaml",
        run_id="test",
        report_dir=tmp_path,
        control_address="127.0.0.1:0",
        control_key=b"",
        **fields,  # type: ignore[arg-type]
    )
    monkeypatch.setenv(SESSION_ENV, str(session.write(tmp_path / "session.json")))
    return tmp_path
