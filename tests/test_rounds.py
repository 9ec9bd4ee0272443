"""The escalation scenarios take a dispatcher through several rounds whatever its order:
no worker has room until the escalations the checks judge came, then the last round's
clusters get it; an escalation that does not come by its due time ends the wait."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.recording.timeline import Timeline
from harness.scenarios.scenario import Scenario
from suites import judge, judgement, rounds
from suites.checks import Bounds
from tests.sessions import use_session
from tests.test_scenario_workers import make
from tests.timelines import WL, Story

B10 = Bounds.derive({"stepSize": 1, "roundTimeout": "10s"}, ["a", "b", "c", "d"])


@pytest.mark.parametrize(
    ("claims", "clusters", "limit", "count"),
    [
        ({"stepSize": 1, "roundTimeout": "10s"}, 4, 150.0, 3),  # three fit easily
        ({"stepSize": 1, "roundTimeout": "10s"}, 3, 150.0, 2),  # the config holds two
        ({"stepSize": 1, "roundTimeout": "30s"}, 4, 150.0, 2),  # 75 s beside the placement
        ({"stepSize": 1, "roundTimeout": "60s"}, 4, 150.0, 1),
        ({"stepSize": 1, "roundTimeout": "5m"}, 4, 150.0, 0),  # full run only
        ({"stepSize": 1, "roundTimeout": "5m"}, 4, None, 3),  # the full run
        ({"stepSize": 3, "roundTimeout": "5m"}, 4, None, 1),  # two batches
        ({"stepSize": "all", "roundTimeout": None}, 4, None, 0),
    ],
)
def test_as_many_escalations_as_the_claims_the_config_and_the_budget_allow(
    claims: dict[str, Any], clusters: int, limit: float | None, count: int
) -> None:
    b = Bounds.derive(claims, [f"c{i}" for i in range(clusters)])
    assert judge.escalations_within(b, clusters, limit) == count


class Clock:
    """The scenario's time, moved on by its waits, over a story told in advance."""

    def __init__(self, story: Story) -> None:
        self.story, self.now = story, 0.0

    def timeline(self) -> Timeline:
        return Timeline(e for e in self.story.timeline() if e.t <= self.now)

    def wait_until(
        self, what: str, predicate: Callable[[Timeline], bool], timeout: float
    ) -> Timeline:
        """The first event time within `timeout` where `predicate` holds, else TimeoutError."""
        for t in sorted({e.t for e in self.story.timeline()} | {self.now}):
            if self.now <= t <= self.now + timeout:
                seen = Timeline(e for e in self.story.timeline() if e.t <= t)
                if predicate(seen):
                    self.now = t
                    return seen
        self.now += timeout
        raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def scenario(story: Story, config: list[str]) -> tuple[Scenario, Clock, list[str]]:
    sc = make("reference", names=config)
    clock, given = Clock(story), []
    sc.order = list(config)
    sc.members = {c: c for c in config}
    sc.timeline = clock.timeline  # type: ignore[method-assign]
    sc.wait_until = clock.wait_until  # type: ignore[method-assign]
    sc.set_capacity = lambda worker, units: given.append(worker)  # type: ignore[method-assign]
    sc.ctx.recorder.now = lambda: clock.now  # type: ignore[method-assign]
    return sc, clock, given


def cumulative(*batches: tuple[float, str]) -> Story:
    story, names = Story().created(0), []
    for t, cluster in batches:
        names.append(cluster)
        story.nominate(t, *names)
    return story.mark(200)


def test_room_goes_to_the_last_round_whatever_the_order() -> None:
    """A dispatcher that tries the config last first (its own order) still escalates three
    times before any worker has room; then the cluster its last round added gets it."""
    story = cumulative((0.5, "d"), (10.6, "c"), (20.7, "b"), (30.8, "a"))
    sc, clock, given = scenario(story, ["a", "b", "c", "d"])
    assert rounds.through_rounds(sc, WL, 3) == ["a"]
    assert given == ["a"] and clock.now == 30.8


def test_fewer_escalations_stop_sooner() -> None:
    story = cumulative((0.5, "a"), (10.6, "b"), (20.7, "c"), (30.8, "d"))
    sc, clock, given = scenario(story, ["a", "b", "c", "d"])
    assert rounds.through_rounds(sc, WL, 1) == ["b"] and clock.now == 10.6


def test_every_cluster_tried_ends_the_rounds() -> None:
    """Nominating every cluster at once leaves nothing to escalate to: no wait for it."""
    story = Story().created(0).nominate(0.5, "a", "b").mark(200)
    sc, clock, given = scenario(story, ["a", "b"])
    assert rounds.through_rounds(sc, WL, 3) == ["a", "b"] and clock.now == 0.5


@pytest.mark.parametrize(
    ("story", "which"),
    [
        (cumulative((0.5, "a")), "escalation 1 of 3 after round 1 (a)"),
        # the first two on time, the third never: the wait ends at its due time
        (cumulative((0.5, "a"), (10.6, "b"), (20.7, "c")), "escalation 3 of 3 after round 3 (c)"),
    ],
)
def test_an_escalation_that_does_not_come_ends_the_wait_at_its_due_time(
    story: Story, which: str
) -> None:
    sc, clock, given = scenario(story, ["a", "b", "c", "d"])
    with pytest.raises(TimeoutError, match=re.escape(which)):
        rounds.through_rounds(sc, WL, 3)
    assert given == []  # no room for a dispatcher that stopped escalating
    # due: the round's start + 10 s + the 3 s escalation slack, seen within RECORDING_ROOM
    started = max(r.t for r in rounds.rounds(story.timeline()))
    assert clock.now == pytest.approx(started + 13 + rounds.RECORDING_ROOM)


def test_five_minute_rounds_wait_for_the_full_run_and_ten_second_ones_get_three(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = use_session(tmp_path, monkeypatch) / "results"
    sc = make("reference", names=["a", "b", "c", "d"])
    sc.order = ["a", "b", "c", "d"]
    judgement.judging(sc, ["EXT-05", "EXT-06"])
    assert rounds.escalations_or_skip(sc) == 3
    slow = make("incremental", names=["a", "b", "c", "d"])
    slow.order = list(sc.order)
    judgement.judging(slow, ["EXT-05", "EXT-06"])
    with pytest.raises(pytest.skip.Exception, match="full run only"):
        rounds.escalations_or_skip(slow)
    records = [json.loads(p.read_text()) for p in results.iterdir()]
    assert {(r["check"], r["result"]) for r in records} == {
        ("EXT-05", "skipped"),
        ("EXT-06", "skipped"),
    }
    assert all("needs 378s: runs in the full run (--full)" in r["message"] for r in records)
