"""Timeline queries the scenarios use while they wait."""

from __future__ import annotations

import math

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


def test_outages_pair_each_take_out_with_the_next_bring_back() -> None:
    story = (
        Story()
        .action(1, "manager-apiserver-down", how="stop")
        .action(2, "manager-kueue-down", how="kill")
        .action(4, "manager-apiserver-back")
        .action(9, "manager-apiserver-down", how="kill")
    )
    tl = story.timeline()
    assert tl.outages("manager-apiserver") == [(1, 4), (9, math.inf)]  # the last never back
    assert tl.outages("manager-kueue") == [(2, math.inf)]
    assert tl.outages("dispatcher") == []
    later = tl.action("manager-apiserver-down", after=1.5)
    assert later is not None and later.t == 9
