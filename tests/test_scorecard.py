"""The scorecard on hand-made timelines: what AllAtOnce costs next to a bounded dispatcher."""

from __future__ import annotations

from harness.recording.timeline import Timeline
from suites.scorecard import merge_scorecards, scorecard
from tests.timelines import Story

USERS = {"mkdc"}


def all_at_once(workload: str = "ns/wl", offset: float = 0.0) -> Story:
    """Every worker gets a copy and a ProvisioningRequest; w2 wins."""
    s = Story(workload).created(offset).nominate(offset + 1, "w1", "w2", "w3", "w4")
    s.write(offset + 1, "mkdc")
    for w in ("w1", "w2", "w3", "w4"):
        s.copy(offset + 2, w).provreq(offset + 2, w).reserve(offset + 3, w).preempt(offset + 3, w)
    s.place(offset + 5, "w2")
    for w in ("w1", "w3", "w4"):
        s.delete_copy(offset + 6, w)
    return s


def one_at_a_time() -> Story:
    """One cluster per round: w1 gets nothing, w2 admits after one escalation."""
    s = Story().created(0).nominate(1, "w1").write(1, "mkdc").copy(2, "w1").provreq(2, "w1", 11)
    s.nominate(11, "w1", "w2").write(11, "mkdc").write(11.5, "mkdc", code=409, changed=False)
    s.copy(12, "w2").provreq(12, "w2").reserve(13, "w2").delete_copy(14, "w1").place(15, "w2")
    return s


def test_all_at_once_costs_everything() -> None:
    card = scorecard(all_at_once().timeline(), USERS)
    assert card["peakConcurrentCopies"] == 4
    assert card["peakConcurrentProvisioningRequests"] == 4
    assert card["peakConcurrentReservations"] == 4
    assert card["workersWithPreemptions"] == 4
    assert card["timeToFirstNominationSeconds"] == {"p50": 1.0, "p99": 1.0}
    assert card["timeToPlacementSeconds"] == {"p50": 5.0, "p99": 5.0}
    assert card["nominationWritesPerPlacement"] == 1.0
    assert card["copiesCreatedPerPlacement"] == 4.0
    assert card["copiesDeletedPerPlacement"] == 3.0


def test_bounded_dispatcher_costs_one_at_a_time() -> None:
    card = scorecard(one_at_a_time().timeline(), USERS)
    assert card["peakConcurrentCopies"] == 2  # w1's copy lingers until w2 holds quota
    assert card["peakConcurrentProvisioningRequests"] == 1
    assert card["peakConcurrentReservations"] == 1
    assert card["workersWithPreemptions"] == 0
    assert card["timeToPlacementSeconds"]["p99"] == 15.0
    assert card["nominationWritesPerPlacement"] == 3.0  # the rejected write counts too
    assert card["copiesCreatedPerPlacement"] == 2.0


def test_without_known_users_counts_observed_nominations() -> None:
    assert scorecard(one_at_a_time().timeline(), set())["nominationWrites"] == 2


def test_peaks_are_per_workload_not_summed() -> None:
    tl = Timeline(all_at_once("ns/a").events + all_at_once("ns/b", offset=1).events)
    card = scorecard(tl, USERS)
    assert card["peakConcurrentCopies"] == 4  # 8 copies overlap, but 4 per workload
    assert card["workloads"] == card["placedWorkloads"] == 2
    assert card["copiesCreatedPerPlacement"] == 4.0


def test_unplaced_and_empty() -> None:
    card = scorecard(Story().created(0).nominate(2, "w1").timeline(), USERS)
    assert card["placedWorkloads"] == 0
    assert card["timeToPlacementSeconds"] == {"p50": None, "p99": None}
    assert card["timeToFirstNominationSeconds"]["p50"] == 2.0
    assert card["nominationWritesPerPlacement"] is None
    empty = scorecard(Timeline(), USERS)
    assert empty["workloads"] == 0 and empty["peakConcurrentCopies"] == 0


def test_merge_takes_max_of_peaks_and_pools_samples() -> None:
    cards = [
        scorecard(all_at_once().timeline(), USERS),
        scorecard(one_at_a_time().timeline(), USERS),
    ]
    total = merge_scorecards(cards)
    assert total["scenarios"] == 2
    assert total["peakConcurrentCopies"] == 4
    assert total["placedWorkloads"] == 2
    assert total["timeToPlacementSeconds"] == {"p50": 5.0, "p99": 15.0}
    assert total["nominationWritesPerPlacement"] == 2.0  # (1 + 3) / 2
    assert total["copiesDeletedPerPlacement"] == 2.0  # (3 + 1) / 2
    assert merge_scorecards([])["timeToPlacementSeconds"] == {"p50": None, "p99": None}
