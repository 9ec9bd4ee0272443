"""A session file for scenario code run without clusters, as `mkdc run` writes one."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.session import SESSION_ENV, Session


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
