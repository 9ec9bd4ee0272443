"""The session `mkdc run` hands its test processes: a typed round trip, one filter."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from harness.results import Result
from harness.scenarios import session as sessions
from harness.scenarios.session import Session, selects


def test_round_trip_keeps_every_field_and_the_file_is_private(tmp_path: Path) -> None:
    original = Session(
        environment=tmp_path / "run",
        profile=tmp_path / "p.yaml",
        run_id="abc",
        report_dir=tmp_path / "out",
        control_address="127.0.0.1:4242",
        control_key=b"\x00\xff",
        dispatcher_users=frozenset({"system:serviceaccount:kueue-system:mkdc-dispatcher-0"}),
        capabilities=frozenset({"faults"}),
        slacks={"escalation_slack": "5s"},
        checks=("CORE-01",),
        skip_checks=("EXT-12",),
        full=True,
        worker_secrets={"worker1": "multikueue-worker1"},
    )
    path = original.write(tmp_path / "session.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Session.load(path) == original
    assert original.results_dir == tmp_path / "out" / "results"


def test_the_checks_filter_is_one_rule() -> None:
    assert selects("CORE-01", (), ())
    assert selects("CORE-01", ("CORE-01",), ()) and not selects("CORE-02", ("CORE-01",), ())
    assert not selects("CORE-01", (), ("CORE-01",))


def test_a_test_process_loads_its_session_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Session(tmp_path, tmp_path, "r", tmp_path, "127.0.0.1:1", b"").write(tmp_path / "s")
    monkeypatch.setenv(sessions.SESSION_ENV, str(path))
    first = sessions.current()
    path.write_text("not json any more")
    assert sessions.current() is first


def test_results_rank_worst_first() -> None:
    ranked = sorted(
        ["passed", "not-supported", "failed", "skipped", "undecided"], key=lambda r: Result(r).rank
    )
    assert ranked == ["failed", "undecided", "passed", "skipped", "not-supported"]
