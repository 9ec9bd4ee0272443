"""Timeline queries the scenarios use while they wait."""

from __future__ import annotations

import math

from harness.recording.timeline import Event, Kind, Timeline
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


def test_of_keeps_one_workloads_events_and_the_environments_in_their_order() -> None:
    """Equal times keep the order they were recorded in; an event appended after a first
    ``of`` is seen by the next one."""
    events = [
        Event(1.0, "manager", Kind.CLUSTER_ACTIVE, "", {"cluster": "w1", "active": True}),
        Event(2.0, "manager", Kind.WORKLOAD_CREATED, "ns/a"),
        Event(2.0, "manager", Kind.CONFIG_CHANGED, "", {"config": "c", "clusters": ["w1"]}),
        Event(2.0, "manager", Kind.WORKLOAD_CREATED, "ns/b"),
        Event(3.0, "manager", Kind.CLUSTER_ACTIVE, "", {"cluster": "w2", "active": True}),
        Event(3.0, "manager", Kind.NOMINATION, "ns/a", {"names": ["w1"]}),
    ]
    tl = Timeline(events)
    assert list(tl.of("ns/a")) == [events[0], events[1], events[2], events[4], events[5]]
    assert list(tl.of("")) == [events[0], events[2], events[4]]
    assert list(tl.of("ns/none")) == [events[0], events[2], events[4]]
    late = Event(4.0, "w1", Kind.COPY_CREATED, "ns/b")
    tl.append(late)
    assert list(tl.of("ns/b")) == [events[0], events[2], events[3], events[4], late]
