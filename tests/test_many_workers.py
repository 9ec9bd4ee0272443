"""Twenty workers (`mkdc run --workers 20`): the fan-out scenario takes them all, its checks,
the scorecard and the report count them, and nothing assumes the default four."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cluster import multikueue
from harness.recording.recorder import list_timeout
from harness.recording.timeline import Timeline
from harness.report import picture, timeline_svg
from harness.scenarios import scenario as scenario_module
from suites.checks import CATALOGUE, MAX_NOMINATIONS, Bounds, run_check
from suites.scorecard import scorecard
from tests.test_scenario_workers import make, record_applies
from tests.timelines import Story

WORKERS = [f"worker{i}" for i in range(1, 21)]
CLUSTERS = [f"bounded-fan-out-ab12-{w}" for w in WORKERS]
STEP_1 = Bounds.derive({"stepSize": 1, "roundTimeout": "10s"}, CLUSTERS)
ALL = Bounds.derive({"stepSize": "all"}, CLUSTERS)


def one_per_round(rounds: int) -> Story:
    """Step 1, 10 s rounds, cumulative: a copy on each newly nominated worker."""
    story = Story().created(0)
    for r in range(rounds):
        story.nominate(10 * r + 0.5, *CLUSTERS[: r + 1]).copy(10 * r + 1, CLUSTERS[r])
    return story


def all_at_once() -> Story:
    """Every worker nominated and copied at once; placed on the last, the others removed."""
    story = Story().created(0).nominate(0.5, *CLUSTERS)
    for c in CLUSTERS:
        story.copy(1, c)
    story.place(5, CLUSTERS[-1])
    for c in CLUSTERS[:-1]:
        story.delete_copy(6, c)
    return story


def ext01(story: Story, b: Bounds) -> Any:
    return run_check(CATALOGUE["EXT-01"], story.timeline(), b)


def test_the_fan_out_scenario_configures_every_worker_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    created = record_applies(monkeypatch)
    waits: list[tuple[int, float]] = []
    monkeypatch.setattr(
        scenario_module.multikueue,
        "wait_active",
        lambda m, clusters, checks, timeout: waits.append((len(clusters), timeout)),
    )
    monkeypatch.setattr(scenario_module.multikueue, "wait_queue_active", lambda *a, **k: None)
    sc = make(names=WORKERS)
    sc.with_workers(sc.workers())
    config = next(d for _, d in created if d["kind"] == "MultiKueueConfig")
    assert config["spec"]["clusters"] == [sc.cluster(w) for w in WORKERS]
    assert {w for w, d in created if d["kind"] == "ClusterQueue"} == {"manager", *WORKERS}
    (count, timeout), four = waits[0], multikueue.active_timeout(4)
    assert count == 20 and timeout >= four + 16 * multikueue.ACTIVE_PER_CLUSTER


def test_one_cluster_per_round_over_twenty_workers_passes() -> None:
    verdict = ext01(one_per_round(3), STEP_1)
    assert verdict.passed and verdict.measured == {"peakCopies": 3, "peakNominated": 3}


def test_twenty_at_once_fails_a_step_of_one_in_words_that_fit_a_line() -> None:
    verdict = ext01(all_at_once(), STEP_1)
    assert not verdict.passed and verdict.measured == {"peakCopies": 20, "peakNominated": 20}
    message = verdict.message
    assert message.startswith("20 nominated (bounded-fan-out-ab12-worker1,")
    assert "(and 12 more)" in message and "worker20" not in message
    # each kind once, at its worst, however many copies went over the claim one by one
    assert message.count("claim allows 1") == 2 and message.count("(and 12 more)") == 2
    assert "20 copies (bounded-fan-out-ab12-worker1,bounded-fan-out-ab12-worker2," in message
    assert message.endswith("claim allows 1")
    assert len(message) < 700


def test_twenty_at_once_passes_without_a_step_claim() -> None:
    assert ext01(all_at_once(), ALL).passed  # the scorecard measures it (below)


def test_copies_over_the_claim_one_by_one_are_said_once_at_their_peak() -> None:
    story = Story().created(0).nominate(0.5, CLUSTERS[0])
    for i, c in enumerate(CLUSTERS[:5]):
        story.copy(1 + i * 0.1, c)
    verdict = ext01(story, STEP_1)
    assert verdict.message.startswith("5 copies (") and "claim allows 1" in verdict.message
    assert verdict.message.endswith("(over the claim since t=1.1s)")


def test_a_growth_of_one_per_round_is_allowed_up_to_the_twentieth_round() -> None:
    assert ext01(one_per_round(20), STEP_1).passed
    late = one_per_round(19).nominate(185, *CLUSTERS)  # the 20th, five seconds early
    verdict = ext01(late, STEP_1)
    assert not verdict.passed and "20 nominated" in verdict.message
    assert "claim allows 19" in verdict.message


def test_twenty_names_are_a_valid_nomination_list_and_twenty_one_are_not() -> None:
    core02 = CATALOGUE["CORE-02"]
    twenty = Story().created(0).nominate(0.5, *CLUSTERS)
    assert MAX_NOMINATIONS == 20 and run_check(core02, twenty.timeline(), STEP_1).passed
    padded = [*CLUSTERS, "no-such-cluster"]
    refused = Story().created(0).write(0.4, "mkdc", code=422, names=padded)
    verdict = run_check(core02, refused.timeline(), STEP_1)
    assert not verdict.passed and "tried (code 422) 21 clusters (max 20)" in verdict.message


def test_the_scorecard_counts_twenty_copies() -> None:
    card = scorecard(all_at_once().timeline(), set())
    assert card["peakConcurrentCopies"] == 20
    assert card["copiesCreated"] == 20 and card["copiesDeleted"] == 19
    assert card["placedWorkloads"] == 1 and card["copiesCreatedPerPlacement"] == 20


def test_the_report_picture_has_a_row_per_worker_in_natural_order() -> None:
    story = all_at_once()
    drawn = picture.picture(Timeline(story.timeline()), story.workload)
    assert drawn.rows[1:] == CLUSTERS  # worker2 before worker10
    svg = timeline_svg.svg_timeline(story.timeline(), story.workload)
    assert all(f">{c}</text>" in svg for c in CLUSTERS)


def test_recorder_and_wiring_waits_grow_with_the_clusters() -> None:
    assert multikueue.active_timeout(20) > multikueue.active_timeout(4) >= 60
    assert list_timeout(21) > list_timeout(5) >= 30
    # a restarting apiserver is waited for while faults are injected
    assert list_timeout(5, faults_injected=True) == list_timeout(5) + 60
    assert multikueue.active_timeout(20, floor=90.0) == 90 + 20 * multikueue.ACTIVE_PER_CLUSTER
