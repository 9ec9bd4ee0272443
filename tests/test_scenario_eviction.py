"""Waiting after an eviction: placed again ends the wait; an eviction whose quota Kueue
keeps (Kueue v0.17.1's stranded workload) is an environment limit, not a failed check."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest

from harness.cluster.environment import Environment
from harness.errors import EnvironmentLimit
from harness.profile import load_profile
from harness.recording.recorder import Recorder
from harness.recording.timeline import MANAGER, Event, Kind, Timeline
from harness.scenarios.context import Context
from harness.scenarios.scenario import Scenario

KEY = "ns/wl"


class FrozenRecorder:
    """A recorder whose timeline is given; its clock started 200 s ago."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.started = time.monotonic() - 200

    def now(self) -> float:
        return self.started

    def snapshot(self, namespace: str | None = None) -> Timeline:
        return Timeline(self.events)

    def users(self) -> frozenset[str]:
        return frozenset()


def scenario_with(*events: tuple[float, Kind, dict[str, Any]]) -> Scenario:
    recorder = FrozenRecorder([])
    t0 = recorder.started
    recorder.events = [Event(t0 + t, MANAGER, kind, KEY, data) for t, kind, data in events]
    ctx = Context(
        env=cast(Environment, None),  # waiting after an eviction never touches the clusters
        profile=load_profile("reference"),
        recorder=cast(Recorder, recorder),
        run_id="r",
    )
    scenario = Scenario(ctx, "ns")
    scenario.jobs = {"job": KEY}
    return scenario


def placed_twice(tl: Timeline) -> bool:
    return len(tl.of(KEY).where_placed()) >= 2


EVICTED_ON_W1: list[tuple[float, Kind, dict[str, Any]]] = [
    (1, Kind.QUOTA_RESERVED, {"reserved": True}),
    (2, Kind.PLACEMENT, {"cluster": "w1"}),
    (3, Kind.PLACEMENT, {"cluster": ""}),
    (3, Kind.EVICTED, {"reason": "AdmissionCheck"}),
]


def test_placed_again_ends_the_wait() -> None:
    scenario = scenario_with(
        *EVICTED_ON_W1,
        (3.1, Kind.QUOTA_RESERVED, {"reserved": False}),
        (4, Kind.QUOTA_RESERVED, {"reserved": True}),
        (9, Kind.PLACEMENT, {"cluster": "w2"}),
    )
    tl = scenario.wait_after_eviction(KEY, "placed again", placed_twice, timeout=5)
    assert placed_twice(tl)


def test_an_eviction_whose_quota_kueue_keeps_is_an_environment_limit() -> None:
    scenario = scenario_with(*EVICTED_ON_W1)  # evicted ~197 s ago, quota never released
    with pytest.raises(EnvironmentLimit, match="kept the quota"):
        scenario.wait_after_eviction(KEY, "placed again", placed_twice, timeout=5)
