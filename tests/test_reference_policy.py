"""Unit tests of the reference dispatcher's policy, on an injected clock (epoch seconds)."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from dispatchers.reference.policy import (
    MAX_NOMINEES,
    NO_ACTIVE_RECHECK,
    ClusterInfo,
    Decision,
    DispatchState,
    StateError,
    WorkloadView,
    decide,
    explain,
    record_failure,
)
from dispatchers.reference.settings import Settings

T0 = 1_750_000_000.0  # an epoch time, as the I/O layer passes
WL = WorkloadView("ns/job-a", config_name="cfg")


def clusters(*names: str, **overrides: ClusterInfo) -> list[ClusterInfo]:
    """Active tier-0 clusters, some replaced by the given ClusterInfo."""
    return [overrides.get(n, ClusterInfo(n)) for n in names]


class Sim:
    """Drives decide() the way the I/O layer does: persist the state, look again later."""

    def __init__(
        self,
        infos: Sequence[ClusterInfo],
        order: Sequence[str] | None = None,
        workload: WorkloadView = WL,
        **settings: object,
    ) -> None:
        self.infos = list(infos)
        self.order = list(order) if order is not None else [c.name for c in infos]
        self.workload = workload
        self.settings = Settings(**{"round_timeout": 10.0, **settings})  # type: ignore[arg-type]
        self.state = DispatchState()
        self.now = T0

    def at(self, offset: float) -> Decision:
        """Decide at T0 + offset and keep the new state."""
        self.now = T0 + offset
        decision = decide(
            self.now, self.workload, self.infos, self.order, self.settings, self.state
        )
        self.state = decision.state
        return decision

    def nominees_at(self, *offsets: float) -> list[list[str]]:
        return [self.at(offset).nominees for offset in offsets]

    def set_active(self, name: str, active: bool) -> None:
        self.infos = [
            ClusterInfo(c.name, active, c.tier, c.timeout) if c.name == name else c
            for c in self.infos
        ]


# --- ordering, tiers, step ------------------------------------------------------------------


def test_first_round_nominates_first_cluster_in_config_order() -> None:
    sim = Sim(clusters("w3", "w1", "w2"))
    decision = sim.at(0)
    assert decision.nominees == ["w3"]
    assert decision.new_round and decision.state.round == 1
    assert decision.requeue_after == 10.0
    assert "first dispatch" in decision.reason


def test_no_escalation_before_timeout_then_escalation_at_timeout() -> None:
    sim = Sim(clusters("w1", "w2", "w3"))
    assert sim.nominees_at(0, 5, 9.999) == [["w1"]] * 3
    assert sim.at(5).requeue_after == 5.0
    decision = sim.at(10)
    assert decision.nominees == ["w1", "w2"] and decision.new_round
    assert decision.state.round == 2


def test_tier_one_only_after_tier_zero_tried_and_timed_out() -> None:
    reserved = {"r": ClusterInfo("r", tier=1)}
    sim = Sim(clusters("r", "a", "b", **reserved))  # r first in config, but tier 1
    assert sim.nominees_at(0, 9, 10, 19) == [["a"], ["a"], ["a", "b"], ["a", "b"]]
    decision = sim.at(20)
    assert decision.nominees == ["a", "b", "r"]
    assert "r (tier 1)" in decision.reason


def test_step_two_adds_two_per_round() -> None:
    sim = Sim(clusters("w1", "w2", "w3", "w4", "w5"), step=2)
    assert sim.nominees_at(0, 10, 20) == [
        ["w1", "w2"],
        ["w1", "w2", "w3", "w4"],
        ["w1", "w2", "w3", "w4", "w5"],
    ]


def test_step_two_never_crosses_into_the_next_tier() -> None:
    tiered = {"c": ClusterInfo("c", tier=1), "d": ClusterInfo("d", tier=1)}
    sim = Sim(clusters("a", "b", "c", "d", "e", **tiered), step=2)
    assert sim.nominees_at(0, 10, 20) == [
        ["a", "b"],
        ["a", "b", "e"],  # e is tier 0: its round holds only tier 0
        ["a", "b", "e", "c", "d"],
    ]


# --- timeouts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("workload_timeout", "config_timeout", "cluster_timeouts", "want", "source"),
    [
        (None, None, {}, 10.0, "global default"),
        (None, 7.0, {}, 7.0, "config cfg"),
        (None, 7.0, {"w1": 20.0}, 20.0, "cluster w1"),
        (None, None, {"w2": 3.0}, 10.0, "global default"),  # w2 is not in round 1
        (3.0, 7.0, {"w1": 20.0}, 3.0, "workload ns/job-a"),
    ],
)
def test_timeout_levels_most_specific_wins(
    workload_timeout: float | None,
    config_timeout: float | None,
    cluster_timeouts: dict[str, float],
    want: float,
    source: str,
) -> None:
    infos = [ClusterInfo(n, timeout=cluster_timeouts.get(n)) for n in ("w1", "w2")]
    workload = WorkloadView("ns/job-a", workload_timeout, "cfg", config_timeout)
    sim = Sim(infos, workload=workload)
    first = sim.at(0)
    assert (first.timeout, first.timeout_source) == (want, source)
    assert first.requeue_after == want
    assert sim.at(want - 0.001).nominees == ["w1"]
    assert sim.at(want).nominees == ["w1", "w2"]


def test_cluster_timeout_is_the_max_over_the_round_batch() -> None:
    infos = [ClusterInfo("w1", timeout=5.0), ClusterInfo("w2", timeout=25.0), ClusterInfo("w3")]
    sim = Sim(infos, step=2)
    decision = sim.at(0)
    assert (decision.timeout, decision.timeout_source) == (25.0, "cluster w2")


def test_cluster_timeout_of_earlier_nominee_does_not_stretch_later_rounds() -> None:
    infos = [ClusterInfo("w1", timeout=20.0), ClusterInfo("w2"), ClusterInfo("w3")]
    sim = Sim(infos)  # reservation cluster w1 gets 20 s, the others 10 s
    assert sim.at(0).timeout == 20.0
    assert sim.at(20).timeout == 10.0
    assert sim.at(30).nominees == ["w1", "w2", "w3"]


# --- modes ----------------------------------------------------------------------------------


def test_cumulative_keeps_earlier_nominees_and_holds_when_all_nominated() -> None:
    sim = Sim(clusters("w1", "w2", "w3"), mode="cumulative")
    assert sim.nominees_at(0, 10, 20, 30, 40) == [
        ["w1"],
        ["w1", "w2"],
        ["w1", "w2", "w3"],
        ["w1", "w2", "w3"],
        ["w1", "w2", "w3"],
    ]
    assert sim.state.round == 3 and "holding" in sim.at(50).reason


def test_exclusive_moves_on_and_starts_a_new_cycle() -> None:
    sim = Sim(clusters("w1", "w2", "w3"), mode="exclusive")
    assert sim.nominees_at(0, 10, 20, 30) == [["w1"], ["w2"], ["w3"], ["w1"]]
    assert sim.state.cycle == 2 and sim.state.round == 4


def test_exclusive_step_two() -> None:
    sim = Sim(clusters("w1", "w2", "w3"), mode="exclusive", step=2)
    assert sim.nominees_at(0, 10, 20) == [["w1", "w2"], ["w3"], ["w1", "w2"]]


# --- inactive clusters and config changes ---------------------------------------------------


def test_inactive_cluster_skipped_without_spending_a_round() -> None:
    sim = Sim(clusters("w1", "w2", "w3", w1=ClusterInfo("w1", active=False)))
    decision = sim.at(0)
    assert decision.nominees == ["w2"] and decision.state.round == 1
    assert sim.at(10).nominees == ["w2", "w3"] and sim.state.round == 2


def test_reactivated_cluster_is_considered_when_reached() -> None:
    sim = Sim(clusters("w1", "w2", "w3", w1=ClusterInfo("w1", active=False)))
    assert sim.at(0).nominees == ["w2"]
    sim.set_active("w1", True)
    assert sim.at(5).nominees == ["w2"]  # no early escalation
    assert sim.at(10).nominees == ["w2", "w1"]  # the next round reaches it first


def test_cluster_going_inactive_is_dropped_and_a_dead_round_ends_at_once() -> None:
    sim = Sim(clusters("w1", "w2", "w3"), mode="exclusive")
    assert sim.at(0).nominees == ["w1"]
    sim.set_active("w1", False)
    decision = sim.at(2)
    assert decision.nominees == ["w2"] and decision.new_round
    assert "no usable cluster" in decision.reason


def test_cumulative_nominee_going_inactive_is_dropped_without_new_round() -> None:
    sim = Sim(clusters("w1", "w2", "w3"))
    sim.nominees_at(0, 10)
    sim.set_active("w1", False)
    decision = sim.at(12)
    assert decision.nominees == ["w2"] and not decision.new_round
    sim.set_active("w1", True)
    assert sim.at(13).nominees == ["w1", "w2"]


def test_cluster_added_to_config_midway_is_considered_in_order() -> None:
    sim = Sim(clusters("w0", "w1", "w2", "w3"), order=["w1", "w2"])
    assert sim.nominees_at(0, 10) == [["w1"], ["w1", "w2"]]
    sim.order = ["w0", "w1", "w2", "w3"]  # w0 added in front, w3 at the end
    assert sim.at(15).nominees == ["w1", "w2"]  # round 2 keeps running
    assert sim.nominees_at(20, 30) == [["w1", "w2", "w0"], ["w1", "w2", "w0", "w3"]]


def test_cluster_added_after_all_nominated_is_picked_at_next_expiry() -> None:
    sim = Sim(clusters("w1", "w2", "w3"), order=["w1", "w2"])
    sim.nominees_at(0, 10, 20, 30)
    sim.order = ["w1", "w2", "w3"]
    assert sim.at(35).nominees == ["w1", "w2", "w3"]


def test_cluster_removed_from_config_is_dropped_from_nominees_and_state() -> None:
    sim = Sim(clusters("w1", "w2", "w3"))
    sim.nominees_at(0, 10)
    sim.order = ["w2", "w3"]
    decision = sim.at(12)
    assert decision.nominees == ["w2"]
    assert "w1" not in decision.state.tried


# --- failover -------------------------------------------------------------------------------


def test_failure_starts_next_round_past_the_failed_cluster_at_once() -> None:
    sim = Sim(clusters("w1", "w2", "w3"))
    sim.at(0)
    sim.state = record_failure(sim.state, "w1", T0 + 4)
    assert sim.state.nominees == () and sim.state.failed == ("w1",)
    decision = sim.at(4)
    assert decision.nominees == ["w2"] and decision.new_round
    assert decision.state.round == 2 and decision.requeue_after == 10.0
    assert "failover past w1" in decision.reason
    assert sim.nominees_at(14, 24) == [["w2", "w3"], ["w2", "w3", "w1"]]  # w1 last


def test_failed_cluster_goes_last_in_the_next_cycle() -> None:
    sim = Sim(clusters("w1", "w2", "w3"), mode="exclusive")
    sim.nominees_at(0, 10)  # w1, then w2
    sim.state = record_failure(sim.state, "w2", T0 + 12)
    assert sim.nominees_at(12, 22, 32, 42, 52) == [["w3"], ["w2"], ["w1"], ["w3"], ["w2"]]


def test_failure_of_the_last_cluster_in_exclusive_mode_starts_over() -> None:
    sim = Sim(clusters("w1", "w2"), mode="exclusive")
    sim.nominees_at(0, 10)
    sim.state = record_failure(sim.state, "w2", T0 + 12)
    decision = sim.at(12)
    assert decision.nominees == ["w1"] and decision.state.cycle == 2


def test_failure_with_all_nominated_in_cumulative_mode_retries_it_a_round_later() -> None:
    sim = Sim(clusters("w1", "w2", "w3"))
    sim.nominees_at(0, 10, 20, 30)
    sim.state = record_failure(sim.state, "w1", T0 + 31)
    decision = sim.at(31)
    assert decision.nominees == ["w2", "w3"] and decision.new_round
    assert sim.at(40).nominees == ["w2", "w3"]
    assert sim.at(41).nominees == ["w2", "w3", "w1"]


def test_record_failure_twice_keeps_one_entry_most_recent_last() -> None:
    state = record_failure(record_failure(DispatchState(), "w1", T0), "w2", T0)
    assert record_failure(state, "w1", T0).failed == ("w2", "w1")


# --- restart --------------------------------------------------------------------------------


def test_restart_from_persisted_state_neither_resets_nor_jumps_the_round() -> None:
    infos = clusters("w1", "w2", "w3")
    sim = Sim(infos, mode="exclusive")
    sim.at(0.123456)
    sim.at(10.5)  # round 2 starts at a fractional time
    persisted = sim.state.to_json()
    before = sim.at(14.2)

    restarted = Sim(infos, mode="exclusive")
    restarted.state = DispatchState.from_json(persisted)
    after = restarted.at(14.2)
    assert after.nominees == before.nominees == ["w2"]
    assert after.state == before.state and not after.new_round
    assert after.requeue_after == before.requeue_after == pytest.approx(6.3)
    assert restarted.at(20.499).nominees == ["w2"]  # no reset: not a fresh 10 s
    assert restarted.at(20.5).nominees == ["w3"]  # no jump: escalates exactly once


def test_state_json_roundtrip_is_compact_and_exact() -> None:
    state = DispatchState(3, T0 + 0.123, 2, ("a", "b"), ("b",), ("c",), ("a", "b"), True)
    text = state.to_json()
    assert " " not in text and DispatchState.from_json(text) == state
    assert DispatchState.from_json(DispatchState().to_json()) == DispatchState()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"round":1}',
        '{"v":2,"round":1}',
        '{"v":1,"round":-1}',
        '{"v":1,"round":true}',
        '{"v":1,"start":"now"}',
        '{"v":1,"tried":"w1"}',
        '{"v":1,"tried":[1]}',
        '{"v":1,"advance":"yes"}',
    ],
)
def test_unreadable_state_raises_state_error(text: str) -> None:
    with pytest.raises(StateError):
        DispatchState.from_json(text)


def test_decide_is_idempotent() -> None:
    sim = Sim(clusters("w1", "w2"))
    sim.at(0)
    state = sim.state
    assert sim.at(3) == sim.at(3) and sim.state.round_start == state.round_start


def test_round_start_in_the_future_is_clamped_to_now() -> None:
    sim = Sim(clusters("w1", "w2"))
    sim.at(0)
    sim.state = DispatchState.from_json(sim.state.to_json().replace(str(T0), str(T0 + 3600)))
    decision = sim.at(1)
    assert decision.state.round_start == T0 + 1 and decision.requeue_after == 10.0


# --- limits and degenerate inputs -----------------------------------------------------------


def test_never_more_than_twenty_names_and_never_duplicates() -> None:
    names = [f"w{i:02d}" for i in range(24)]
    sim = Sim(clusters(*names), step=3)
    decisions = [sim.at(10.0 * i) for i in range(12)]
    seen = [d.nominees for d in decisions]
    assert all(len(n) <= MAX_NOMINEES and len(set(n)) == len(n) for n in seen)
    assert seen[6] == names[1:21]  # 21 tried: the oldest nominees make room
    assert seen[7] == names[4:24]
    assert seen[8] == names[:3]  # more active clusters than fit: a new cycle starts
    assert decisions[8].state.cycle == 2


def test_step_above_the_maximum_is_capped() -> None:
    sim = Sim(clusters(*[f"w{i}" for i in range(24)]), step=24, mode="exclusive")
    assert len(sim.at(0).nominees) == MAX_NOMINEES


def test_no_active_cluster_nominates_none_and_looks_again_soon() -> None:
    infos = [ClusterInfo("w1", active=False), ClusterInfo("w2", active=False)]
    sim = Sim(infos)
    decision = sim.at(0)
    assert decision.nominees == [] and decision.requeue_after == NO_ACTIVE_RECHECK
    assert "no active cluster" in decision.reason and decision.state.round == 0
    sim.set_active("w2", True)
    assert sim.at(5).nominees == ["w2"]


def test_empty_config_and_missing_cluster_objects() -> None:
    assert "lists no cluster" in Sim([], order=[]).at(0).reason
    decision = Sim(clusters("w2"), order=["w1", "w2"]).at(0)
    assert decision.nominees == ["w2"] and "w1: no MultiKueueCluster" in decision.reason


def test_random_walk_keeps_the_nomination_list_valid() -> None:
    rng = random.Random(7)
    names = [f"w{i}" for i in range(24)]
    for mode in ("cumulative", "exclusive"):
        sim = Sim(clusters(*names), mode=mode, step=rng.randint(1, 4))
        for tick in range(300):
            sim.set_active(rng.choice(names), rng.random() < 0.7)
            if rng.random() < 0.1:
                sim.order = rng.sample(names, rng.randint(0, len(names)))
            if rng.random() < 0.05:
                sim.state = record_failure(sim.state, rng.choice(names), sim.now)
            got = sim.at(tick * 1.7).nominees
            active = {c.name for c in sim.infos if c.active}
            assert len(got) <= MAX_NOMINEES and len(set(got)) == len(got)
            assert set(got) <= set(sim.order) & active


# --- metadata parsing and explain -----------------------------------------------------------


def test_cluster_and_workload_views_from_metadata() -> None:
    settings = Settings()
    key = settings.cluster_timeout_annotation
    info = ClusterInfo.from_metadata(
        "w1", True, {settings.tier_label: "2"}, {key: "1m30s"}, settings
    )
    assert (info.tier, info.timeout, info.problems) == (2, 90.0, ())
    bad = ClusterInfo.from_metadata("w2", False, {settings.tier_label: "x"}, {key: "-"}, settings)
    assert (bad.tier, bad.timeout, len(bad.problems)) == (0, None, 2)
    view = WorkloadView.from_metadata("ns/a", {key: "5s"}, "cfg", {key: "0s"}, settings)
    assert (view.timeout, view.config_timeout) == (5.0, None)
    assert "config cfg" in view.problems[0]


def test_explain_tells_order_timeout_and_decision() -> None:
    infos = clusters("w1", "w2", "w3", w1=ClusterInfo("w1", tier=1, timeout=20.0))
    settings = Settings(round_timeout=10.0)
    text = explain(T0, WL, infos, ["w1", "w2", "w3"], settings, DispatchState())
    lines = text.splitlines()
    assert lines[0] == "workload ns/job-a (config cfg)"
    assert [line.split(":")[0].strip() for line in lines[4:7]] == ["w2", "w3", "w1"]
    assert "w1: active, tier 1, timeout 20s" in text
    assert "decision: nominate [w2]" in text and "timeout: 10s from global default" in text
