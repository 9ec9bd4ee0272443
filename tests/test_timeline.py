"""Timeline queries the scenarios use while they wait."""

from __future__ import annotations

from harness.recording.timeline import Kind
from tests.timelines import Story


def test_an_eviction_whose_quota_is_released_is_not_stuck():
    story = Story().created(0).place(5, "w1").evicted(10, "AdmissionCheck")
    story.add(10.1, Kind.QUOTA_RESERVED, reserved=False)
    assert story.timeline().stuck_eviction(now=200, grace=60) is None


def test_an_eviction_that_keeps_its_quota_is_stuck_after_the_grace():
    story = Story().created(0).add(0.1, Kind.QUOTA_RESERVED, reserved=True)
    story.place(5, "w1").evicted(10, "AdmissionCheck")
    assert story.timeline().stuck_eviction(now=60, grace=60) is None  # not yet
    stuck = story.timeline().stuck_eviction(now=71, grace=60)
    assert stuck is not None and stuck.t == 10
