"""EXT-02's scenario provisions on the last cluster nominated; when the dispatcher nominated
none it ends with a timed-out wait that says so (EXT-02 undecided), not an IndexError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Self

import pytest

from harness.recording.timeline import MANAGER, Event, Kind, Timeline
from harness.scenarios.scenario import Scenario
from suites import judge, judgement
from suites.conformance import test_fan_out as fan_out
from tests.sessions import FrozenRecorder, offline_context, use_session
from tests.timelines import Story

KEY = "sc/wl"


class Autoscaler:
    def __init__(self) -> None:
        self.behaviour: dict[str, Any] = {}

    def set(self, worker: str, behaviour: Any) -> None:
        self.behaviour[worker] = behaviour


class Offline(Scenario):
    """The scenario's steps without clusters: its timeline is the given nominations."""

    def __init__(self, *nominations: list[str]) -> None:
        recorder = FrozenRecorder()
        super().__init__(offline_context(recorder), "sc")
        self.started = recorder.started
        judgement.judging(self, ["EXT-02"])
        self.autoscaler = Autoscaler()
        recorder.events = [Event(recorder.started + 1, MANAGER, Kind.WORKLOAD_CREATED, KEY)]
        recorder.events += [
            Event(recorder.started + 2 + i, MANAGER, Kind.NOMINATION, KEY, {"names": names})
            for i, names in enumerate(nominations)
        ]

    def workers(self, n: int | None = None, **_: Any) -> list[str]:
        return ["w1", "w2"]

    def with_workers(self, workers: Any, **_: Any) -> Self:
        self.members = {f"sc-{w}": w for w in workers}
        self.order = list(self.members)
        return self

    def autoscale(self, behaviour: Any) -> Any:
        return self.autoscaler

    def submit(self, name: str, **_: Any) -> str:
        self.jobs[name] = KEY
        return KEY

    def observe(self, seconds: float) -> None:
        pass

    def wait_until(self, what: str, predicate: Any, timeout: float) -> Timeline:
        return super().wait_until(what, predicate, timeout=0.2)

    def wait_placed(self, key: str, timeout: float) -> str:
        return "sc-w2"


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_session(tmp_path, monkeypatch)


def test_last_nominated_worker_is_the_last_of_the_scenarios_clusters_nominated() -> None:
    members = {"sc-w1": "w1", "sc-w2": "w2"}
    assert judge.last_nominated_worker(Story().created(0).timeline(), members) is None
    story = Story().created(0).nominate(1, "sc-w1").nominate(5, "sc-w1", "sc-w2")
    assert judge.last_nominated_worker(story.timeline(), members) == "w2"
    outside = Story().created(0).nominate(1, "sc-w1", "worker9")  # CORE-01 judges that
    assert judge.last_nominated_worker(outside.timeline(), members) == "w1"


def test_the_last_nominated_worker_provisions(monkeypatch: pytest.MonkeyPatch) -> None:
    judged: list[Scenario] = []
    monkeypatch.setattr(fan_out, "conforms", judged.append)
    sc = Offline(["sc-w1"], ["sc-w1", "sc-w2"])
    fan_out.test_no_simultaneous_autoscaling(sc)
    assert list(sc.autoscaler.behaviour) == ["w2"] and judged == [sc]


def test_nothing_nominated_is_a_timed_out_wait_and_ext02_undecided(session: Path) -> None:
    sc = Offline()
    with pytest.raises(TimeoutError, match="a nomination of one of its clusters") as err:
        fan_out.test_no_simultaneous_autoscaling(sc)
    assert sc.autoscaler.behaviour == {}
    # what the scenario fixture does with a test that raised
    judge.judge_every_timeline(sc)
    judge.record_errored(sc, f"TimeoutError: {err.value}", timed_out=True)
    records = [json.loads(p.read_text()) for p in (session / "results").glob("*.json")]
    ext02 = next(r for r in records if r["check"] == "EXT-02")
    assert ext02["result"] == "undecided"
    assert ext02["message"].startswith("undecided: a wait EXT-02 needed first timed out: ")
    assert "a nomination of one of its clusters" in ext02["message"]
