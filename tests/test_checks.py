"""Every check on hand-made timelines: at least one passing and one violating story each."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from harness.recording.timeline import Kind, Timeline
from suites.checks import (
    CATALOGUE,
    DEFAULT_SLACKS,
    Bounds,
    Interval,
    Verdict,
    peak,
    percentile,
    rounds,
    run_check,
)
from tests.timelines import Story

W4 = ["w1", "w2", "w3", "w4"]
CLAIMS = {
    "stepSize": 1,
    "roundTimeout": "10s",
    "maxConcurrentProvisioning": 1,
    "ordering": "config",
}
# the stories below were written for a 30 s placement slack
B = Bounds.derive(
    CLAIMS, W4, {"placement_slack": 30}, dispatcher_users={"mkdc", "mkdc-a", "mkdc-b"}
)
NO_PROV_CLAIM = B.with_scenario(max_concurrent_provisioning=None)


def reserved_late(nominated: float) -> Story:
    """w1 inactive from before creation, quota reserved at 5, w2 nominated then placed."""
    story = Story().active(-1, "w1", False).created(0).quota_reserved(5)
    return story.nominate(nominated, "w2").place(nominated + 2, "w2")


def escalating(*batches: tuple[float, str], place: tuple[float, str] | None = None) -> Story:
    """created(0), then cumulative nominations adding one cluster per (t, cluster)."""
    story, names = Story().created(0), []
    for t, cluster in batches:
        names.append(cluster)
        story.nominate(t, *names)
    return story.place(*place) if place else story


def watched(*batches: tuple[float, float, str]) -> Story:
    """created(0), then per (written, seen, cluster): the dispatcher's write adding the
    cluster (audit log), beside a refused one and another workload's of the same names,
    and the nomination as the recorder's watch saw it."""
    story, names = Story().created(0), []
    for written, seen, cluster in batches:
        names.append(cluster)
        story.write(written - 0.4, "dispatcher", code=422, names=list(names))
        story.write(written - 0.2, "dispatcher", workload="ns/other", names=list(names))
        story.write(written, "dispatcher", names=list(names)).nominate(seen, *names)
    return story


def revoked() -> Story:
    """Placed on w1 at 8; its capacity revoked at 20; the manager clears the placement at 30."""
    return (
        Story()
        .created(0)
        .nominate(0.5, "w1")
        .provreq(1, "w1")
        .provreq_state(4, "w1", "Provisioned")
        .place(8, "w1")
        .provreq_state(20, "w1", "CapacityRevoked")
        .place(30, "")
        .evicted(30, "AdmissionCheck")
    )


@dataclass
class Case:
    check: str
    label: str
    story: Story
    bounds: Bounds = B
    passes: bool = True
    expect: tuple[str, ...] = ()  # substrings of the failure message
    inconclusive: bool = False

    @property
    def id(self) -> str:
        outcome = "pass" if self.passes else "inconclusive" if self.inconclusive else "fail"
        return f"{self.check}-{outcome}-{self.label}"


def fail(check: str, label: str, story: Story, *expect: str, bounds: Bounds = B) -> Case:
    return Case(check, label, story, bounds, False, expect)


def unclear(check: str, label: str, story: Story, bounds: Bounds = B) -> Case:
    return Case(check, label, story, bounds, False, (), True)


W23 = B.with_scenario(clusters=("w2", "w3"))
TO_W4 = B.with_scenario(expected_cluster="w4")
W123 = B.with_scenario(clusters=("w1", "w2", "w3"))
OVERRIDE = B.with_scenario(round_timeout=5.0, cluster_timeouts={"w1": 20.0})
SHUFFLED = B.with_scenario(clusters=("w3", "w1", "w4", "w2"))
TIERS = B.with_scenario(ordering="tiers", tiers={"w1": 1, "w2": 1, "w3": 1, "w4": 0})
HA = B.with_scenario(dispatcher_users=frozenset({"mkdc-a", "mkdc-b"}))

CASES = [
    # CORE-01
    Case(
        "CORE-01",
        "config-extended",
        Story()
        .nominate(1, "w2")
        .nominate(11, "w2", "w3")
        .config(15, "w2", "w3", "w4")
        .nominate(21, "w2", "w3", "w4")
        .place(25, "w4"),
        W23,
    ),
    fail("CORE-01", "outside", Story().nominate(1, "w1"), "w1", "t=1.0s", bounds=W23),
    fail(
        "CORE-01",
        "before-config-change",
        Story().nominate(1, "w4").config(15, "w2", "w3", "w4"),
        "w4",
        "t=1.0s",
        bounds=W23,
    ),
    # CORE-02
    Case("CORE-02", "two", Story().nominate(1, "w1", "w2")),
    fail("CORE-02", "duplicate", Story().nominate(1, "w1", "w1"), "w1", "more than once", "t=1.0s"),
    fail(
        "CORE-02",
        "too-long",
        Story().nominate(2, "w1", "w2", "w3"),
        "3 clusters",
        "max 2",
        "t=2.0s",
        bounds=B.with_scenario(max_nominations=2),
    ),
    Case(  # an accepted write is judged by the NOMINATION it produced
        "CORE-02",
        "accepted-write",
        Story().write(1, "mkdc", names=["w1", "w2"]).nominate(1.1, "w1", "w2"),
    ),
    fail(
        "CORE-02",
        "rejected-too-long",
        Story().write(2, "mkdc", code=422, names=["w1", "w2", "w3"]),
        "tried (code 422) 3 clusters",
        "max 2",
        bounds=B.with_scenario(max_nominations=2),
    ),
    # CORE-03
    Case(
        "CORE-03",
        "quiet-after-placement",
        Story()
        .nominate(1, "w1")
        .place(5, "w1")
        .nominate(5, writer="kueue-admission")
        .write(5.2, "mkdc")  # inside observation_skew: a race, not blamed
        .nominate(8, "w2", writer="someone-else")  # not the dispatcher
        .write(9, "mkdc", subresource="")  # metadata, not status
        .place(20, "")
        .nominate(21, "w2")
        .place(30, "w2"),
    ),
    fail(
        "CORE-03",
        "nominates",
        Story().nominate(1, "w1").place(5, "w1").nominate(8, "w2"),
        "w2",
        "t=8.0s",
        "placed on w1",
    ),
    fail(
        "CORE-03",
        "rejected-write",
        Story().place(5, "w1").write(9, "mkdc", code=409, changed=False),
        "mkdc",
        "t=9.0s",
        "409",
    ),
    # CORE-10: pending MultiKueue work only (quota, check Pending, not evicted)
    Case(
        "CORE-10",
        "left-alone-while-evicted",
        Story()
        .created(0)
        .quota_reserved(0.5)
        .check_state(0.5, "Pending")
        .nominate(1, "w1")
        .evicted(5, "InactiveWorkload")
        .nominate(5, writer="kueue-admission")  # the policy's clearing: empty
        .nominate(5.3, "w2")  # inside observation_skew: a race, not blamed
        .released(5.5)
        .check_state(5.5, "Retry")
        .nominate(8, "w2", writer="someone-else")  # not the dispatcher
        .mark(20),
    ),
    Case(  # evicted, then quota again: pending once more, nominated again
        "CORE-10",
        "again-after-requeue",
        Story()
        .quota_reserved(0.5)
        .nominate(1, "w1")
        .evicted(5)
        .released(5.5)
        .quota_reserved(9)
        .check_state(9, "Pending")
        .nominate(9.5, "w2"),
    ),
    fail(
        "CORE-10",
        "while-evicted",
        Story().quota_reserved(0.5).nominate(1, "w1").evicted(5).released(5.5).nominate(8, "w2"),
        "w2",
        "t=8.0s",
        "while it was evicted (since t=5.0s)",
    ),
    fail(
        "CORE-10",
        "before-quota",
        Story().created(0).nominate(2, "w1").quota_reserved(4),
        "w1",
        "held no quota on the manager",
    ),
    fail(
        "CORE-10",
        "check-not-pending",
        Story()
        .quota_reserved(0.5)
        .check_state(0.5, "Pending")
        .check_state(3, "Rejected")
        .nominate(6, "w1"),
        "its MultiKueue check was Rejected",
    ),
    Case(  # too big for the manager's quota: never reserved, never nominated
        "CORE-10",
        "waits-for-quota",
        Story().created(0).nominate(0.2, "w1", writer="someone-else").mark(20),
    ),
    fail(  # its field manager unknown: its own accepted write of names still counts
        "CORE-10",
        "write-while-waiting-for-quota",
        Story()
        .created(0)
        .write(0.2, "mkdc", names=["w1"])  # inside observation_skew: a race, not blamed
        .nominate(0.3, "w1", writer="own-manager")
        .write(10, "mkdc", names=["w1", "w2"])
        .write(11, "mkdc", names=["w1"], code=422)  # refused: nominated nothing
        .mark(20),
        "mkdc nominated w1,w2 at t=10.0s while it held no quota on the manager",
        bounds=Bounds(dispatcher_users=frozenset({"mkdc"})),
    ),
    # quota at once, nothing else: no dispatcher had the time to get it wrong
    unclear("CORE-10", "never-left-pending", Story().quota_reserved(0.5).nominate(1, "w1")),
    # CORE-04 (expected w4: 3 rounds x 10s + 30s slack = 60s)
    Case(
        "CORE-04",
        "last-cluster",
        escalating((0.5, "w1"), (10.5, "w2"), (20.5, "w3"), (30.5, "w4"), place=(35, "w4")),
        TO_W4,
    ),
    fail("CORE-04", "late", Story().created(0).place(70, "w4"), "w4", "t=70.0s", bounds=TO_W4),
    fail("CORE-04", "wrong", Story().created(0).place(5, "w1"), "w1", "expected w4", bounds=TO_W4),
    fail("CORE-04", "never", Story().created(0).mark(100), "never placed", "t=60.0s", bounds=TO_W4),
    unclear("CORE-04", "short", Story().created(0).mark(10), bounds=TO_W4),
    # CORE-05
    Case(
        "CORE-05",
        "moved-after-eviction",
        Story().job(10, "w1", until=20).job(25, "w2").job_finished(40, "w2").finished(41),
    ),
    fail("CORE-05", "two-workers", Story().job(10, "w1").job(12, "w2"), "w1,w2", "t=12.0s"),
    fail(
        "CORE-05",
        "ran-twice",
        Story().job(10, "w1").job_finished(20, "w1").job(30, "w2"),
        "w2",
        "t=30.0s",
        "finished on w1",
    ),
    # CORE-06
    Case(
        "CORE-06",
        "placed-again",
        Story()
        .place(5, "w1")
        .action(20, "evict")
        .place(21, "")
        .evicted(21)
        .nominate(22, "w2")
        .place(30, "w2"),
    ),
    fail(
        "CORE-06",
        "never",
        Story().place(5, "w1").action(20, "evict").place(21, "").mark(200),
        "evicted at t=21.0s",  # when the manager learnt of it, not the harness's action
        "never placed",
    ),
    unclear("CORE-06", "no-eviction", Story().place(5, "w1")),
    # CORE-07 (w4 added at t=12, 4th in the new list: 30s of rounds + 30s slack)
    Case(
        "CORE-07",
        "added-cluster-used",
        escalating((1, "w1"), (11, "w2"), (21, "w3"), (31, "w4"), place=(35, "w4")).config(12, *W4),
        W123,
    ),
    fail(
        "CORE-07",
        "ignored",
        escalating((1, "w1"), (11, "w2"), (21, "w3")).config(12, *W4).mark(100),
        "w4",
        "t=12.0s",
        "never nominated",
        bounds=W123,
    ),
    unclear("CORE-07", "no-change", escalating((1, "w1"))),
    # CORE-08 (scenario scope)
    Case(
        "CORE-08",
        "own-writes-only",
        Story()
        .action(0, "foreign", workload="ns/plain")
        .write(1, "mkdc")
        .write(2, "kueue", workload="ns/plain"),
    ),
    fail(
        "CORE-08",
        "touched",
        Story()
        .action(0, "foreign", workload="ns/plain")
        .write(5, "mkdc", changed=False, code=200, workload="ns/plain"),
        "ns/plain",
        "t=5.0s",
        "mkdc",
    ),
    fail(
        "CORE-08",
        "declared-foreign",
        Story().write(5, "mkdc", verb="update", subresource="", workload="ns/finished"),
        "ns/finished",
        "update",
        bounds=B.with_scenario(foreign_workloads=frozenset({"ns/finished"})),
    ),
    unclear("CORE-08", "none", Story().write(1, "mkdc")),
    # CORE-09: see burst cases below
    # EXT-01 (stepSize 1, 10s rounds)
    Case(
        "EXT-01",
        "one-per-round",
        escalating((0.5, "w1"), (10.5, "w2"), (20.5, "w3"))
        .copy(1, "w1")
        .copy(11, "w2")
        .copy(21, "w3"),
    ),
    fail(
        "EXT-01",
        "fan-out",
        Story().created(0).nominate(0.5, "w1", "w2").copy(1, "w1").copy(1, "w2"),
        "2 nominated",
        "t=0.5s",
        "claim allows 1",
    ),
    fail(
        "EXT-01",
        "growth",
        escalating((0.5, "w1")).nominate(10.5, "w1", "w2", "w3"),
        "3 nominated",
        "t=10.5s",
        "claim allows 2",
    ),
    fail("EXT-01", "copies", Story().created(0).copy(1, "w1").copy(2, "w3"), "2 copies", "w1,w3"),
    # EXT-02 (max 1)
    Case("EXT-02", "sequential", Story().provreq(1, "w1", until=11).provreq(11, "w2")),
    Case(
        "EXT-02",
        "failed-ends",
        Story().provreq(1, "w1").provreq_state(10, "w1", "Failed").provreq(11, "w2"),
    ),
    fail(
        "EXT-02",
        "two-at-once",
        Story().provreq(1, "w1").provreq(2, "w2"),
        "2 ProvisioningRequests",
        "w1,w2",
        "t=2.0s",
    ),
    unclear("EXT-02", "none", Story().nominate(1, "w1")),
    # EXT-02 without a maxConcurrentProvisioning claim: one new request per round
    Case(
        "EXT-02",
        "cumulative-one-per-round",
        Story().provreq(1, "w1").provreq(11.5, "w2").provreq(22, "w3"),
        bounds=NO_PROV_CLAIM,
    ),
    Case(  # as recorded on Kueue v0.17.1: the loser's request re-created during its removal
        "EXT-02",
        "cleanup-after-placement",
        Story()
        .provreq(1, "w1", until=24.6)
        .provreq(11, "w2", until=24.6)
        .provreq(21, "w3")
        .place(24.6, "w3")
        .provreq(24.7, "w2", until=24.7),
        bounds=NO_PROV_CLAIM,
    ),
    Case(  # as recorded under load: Kueue made w1's request 3.4 s after its nomination
        "EXT-02",
        "cumulative-kueue-late-first-request",
        Story()
        .created(0)
        .nominate(1.2, "w1")
        .provreq(4.6, "w1")
        .nominate(11.2, "w1", "w2")
        .provreq(13, "w2"),
        bounds=NO_PROV_CLAIM,
    ),
    Case(  # as recorded on Kueue v0.19.2: w2's request re-created while the loser's copy went,
        # 90 ms before the manager recorded the placement: still one worker autoscaling
        "EXT-02",
        "cumulative-same-worker-re-created-before-placement",
        Story()
        .created(0)
        .nominate(0.2, "w1")
        .provreq(0.2, "w1", until=24.36)
        .nominate(10.2, "w1", "w2")
        .provreq(10.25, "w2", until=24.347)
        .nominate(20.2, "w1", "w2", "w3")
        .provreq(20.35, "w3")
        .provreq(24.347, "w2", until=24.363)
        .place(24.437, "w3"),
        bounds=NO_PROV_CLAIM,
    ),
    Case(  # the same moment against a claim of 1: w3's request still live when w2's came
        "EXT-02",
        "claim-loser-re-created-after-winner-admitted",
        Story()
        .created(0)
        .nominate(20.2, "w3")
        .provreq(20.35, "w3")
        .admitted(23.33, "w3")
        .provreq(24.347, "w2", until=24.363)
        .place(24.437, "w3"),
    ),
    fail(  # a copy admitted on w3 long before, then evicted and placed nowhere: w2's counts
        "EXT-02",
        "claim-admitted-earlier-episode-does-not-excuse",
        Story()
        .created(0)
        .admitted(2, "w3")
        .place(3, "w3")
        .place(5, "")
        .provreq(6, "w3")
        .provreq(8, "w2")
        .place(20, "w3"),
        "2 ProvisioningRequests at once at t=8.0s on w3,w2",
    ),
    fail(
        "EXT-02",
        "cumulative-two-added-in-one-round",
        Story()
        .created(0)
        .nominate(1.2, "w1")
        .nominate(3, "w1", "w2")
        .provreq(12, "w1")
        .provreq(22, "w2"),
        "ProvisioningRequests started on 2 workers within one round from t=1.2s",
        bounds=NO_PROV_CLAIM,
    ),
    fail(
        "EXT-02",
        "cumulative-two-in-one-round",
        Story().provreq(1, "w1").provreq(3, "w2"),
        "ProvisioningRequests started on 2 workers within one round",
        "w1,w2",
        bounds=NO_PROV_CLAIM,
    ),
    # EXT-03 (stepSize 1, losers gone within 15s)
    Case(
        "EXT-03",
        "one-reservation",
        Story().copy(1, "w1").copy(11, "w2", until=15).reserve(5, "w1").place(6, "w1").mark(60),
    ),
    fail(
        "EXT-03",
        "two-reservations",
        Story().reserve(5, "w1").reserve(6, "w2"),
        "2 reservations",
        "w1,w2",
        "t=6.0s",
    ),
    fail(
        "EXT-03",
        "loser-survives",
        Story().copy(1, "w1").copy(2, "w2").reserve(5, "w1").place(6, "w1").mark(60),
        "w2",
        "t=21.0s",
        "placement on w1",
    ),
    # EXT-04
    Case("EXT-04", "one-worker", Story().preempt(5, "w1").preempt(6, "w1", victim="ns/b")),
    fail(
        "EXT-04",
        "two-workers",
        Story().preempt(5, "w1").preempt(15, "w2"),
        "2 workers",
        "w1 at t=5.0s",
        "w2 at t=15.0s",
    ),
    unclear("EXT-04", "none", Story().place(5, "w1")),
    # EXT-05
    Case(
        "EXT-05",
        "on-time",
        escalating((0.5, "w1"), (10.6, "w2"), (20.8, "w3"), place=(25, "w3")),
    ),
    Case(
        "EXT-05",
        "all-tried",
        escalating((0.5, "w1"), (10.5, "w2"), (20.5, "w3"), (30.5, "w4")).mark(100),
    ),
    fail("EXT-05", "late", escalating((0.5, "w1"), (16, "w2")), "t=16.0s", "w1", "t=13.5s"),
    fail(
        "EXT-05",
        "never",
        escalating((0.5, "w1")).mark(60),
        "never escalated",
        "w2,w3,w4",
        "t=13.5s",
    ),
    fail("EXT-05", "never-nominated", Story().created(0).mark(60), "never nominated"),
    unclear("EXT-05", "placed-first-round", escalating((0.5, "w1"), place=(3, "w1"))),
    # every round is judged, not the first alone: three escalations on time pass ...
    Case(
        "EXT-05",
        "three-on-time",
        escalating((0.5, "w1"), (10.6, "w2"), (20.9, "w3"), (31.0, "w4")).mark(35),
    ),
    # ... and the 2nd or the 3rd late fails while the 1st was on time
    fail(
        "EXT-05",
        "second-late",
        escalating((0.5, "w1"), (10.6, "w2"), (26.0, "w3"), (36.0, "w4")).mark(40),
        "escalation 2 late",
        "round 2 (w2) of t=10.6s",
        "due by t=23.6s",
    ),
    fail(
        "EXT-05",
        "third-late",
        escalating((0.5, "w1"), (10.6, "w2"), (20.8, "w3"), (40.0, "w4")).mark(45),
        "escalation 3 late",
        "round 3 (w3) of t=20.8s",
    ),
    fail(
        "EXT-05",
        "third-never",
        escalating((0.5, "w1"), (10.6, "w2"), (20.8, "w3")).mark(60),
        "never escalated after round 3 (w3)",
        "escalation 3 was due by t=33.8s",
        "untried: w4",
    ),
    # EXT-06
    Case(
        "EXT-06",
        "waits",
        escalating((0.5, "w1"), (10.0, "w2"), (20.8, "w3"), place=(25, "w3")),
    ),
    Case(
        "EXT-06",
        "nominee-failed",
        escalating((0.5, "w1"), (3, "w2")).provreq_state(2, "w1", "Failed"),
    ),
    fail("EXT-06", "premature", escalating((0.5, "w1"), (3, "w2")), "w2", "t=3.0s", "t=9.5s"),
    # the recorder's watch saw w1's nomination 1.5 s after its write: the audit log's time
    Case("EXT-06", "watched-late", watched((0.5, 2.0, "w1"), (10.6, 10.7, "w2"))),
    fail(
        "EXT-06",
        "written-early",
        watched((0.5, 0.6, "w1"), (8.0, 8.1, "w2")),
        "t=8.0s",
        "escalation 1 early",
        "7.5s into round 1 (w1) of t=0.5s",
    ),
    unclear("EXT-06", "single-round", escalating((0.5, "w1"), place=(3, "w1"))),
    Case(
        "EXT-06",
        "three-waited",
        escalating((0.5, "w1"), (10.0, "w2"), (19.6, "w3"), (29.8, "w4")).mark(35),
    ),
    fail(
        "EXT-06",
        "second-early",
        escalating((0.5, "w1"), (10.6, "w2"), (13.0, "w3"), (23.0, "w4")),
        "escalation 2 early",
        "w3 nominated at t=13.0s",
        "2.4s into round 2 (w2) of t=10.6s",
    ),
    fail(
        "EXT-06",
        "third-early",
        escalating((0.5, "w1"), (10.6, "w2"), (20.7, "w3"), (25.0, "w4")),
        "escalation 3 early",
        "round 3 (w3) of t=20.7s",
        "not before t=29.7s",
    ),
    # EXT-07 (config order w3, w1, w4, w2)
    Case("EXT-07", "config", escalating((0.5, "w3"), (10.5, "w1"), (20.5, "w4")), SHUFFLED),
    Case(
        "EXT-07",
        "skips-inactive",
        escalating((0.5, "w1"), (10.5, "w4")).active(-1, "w3", False),
        SHUFFLED,
    ),
    Case("EXT-07", "tiers", escalating((0.5, "w4"), (10.5, "w1"), (20.5, "w2")), TIERS),
    Case(
        "EXT-07",
        "alphabetical",
        escalating((0.5, "w1"), (10.5, "w2")),
        SHUFFLED.with_scenario(ordering="alphabetical"),
    ),
    fail(
        "EXT-07",
        "alphabetical-instead",
        escalating((0.5, "w1")),
        "w1",
        "t=0.5s",
        "before w3",
        bounds=SHUFFLED,
    ),
    fail("EXT-07", "tier-ignored", escalating((0.5, "w1")), "w1", "before w4", bounds=TIERS),
    # EXT-08 (w1 20s, others 5s)
    Case(
        "EXT-08",
        "override-honoured",
        escalating((0.5, "w1"), (20.7, "w2"), (25.8, "w3")),
        OVERRIDE,
    ),
    fail("EXT-08", "early", escalating((0.5, "w1"), (5.5, "w2")), "w2", "t=5.5s", bounds=OVERRIDE),
    fail(
        "EXT-08", "late", escalating((0.5, "w1"), (30, "w2")), "t=30.0s", "t=23.5s", bounds=OVERRIDE
    ),
    unclear("EXT-08", "no-override", escalating((0.5, "w1"), (10.5, "w2"))),
    # EXT-09 (w1 placed, capacity revoked at 20, manager learns at 30; 4 configured)
    Case("EXT-09", "fails-over", revoked().nominate(31, "w2").place(45, "w2")),
    Case(  # keeping w1 is fine once every other cluster is named too
        "EXT-09", "all-at-once", revoked().nominate(31, "w1", "w2", "w3", "w4").place(45, "w3")
    ),
    Case(  # before placement the manager never sees it: only (b) is judged, from tf
        "EXT-09",
        "failed-before-placement",
        Story()
        .created(0)
        .nominate(0.5, "w1")
        .provreq_state(5, "w1", "Failed")
        .nominate(10.5, "w1", "w2")
        .place(20, "w2"),
    ),
    fail(
        "EXT-09",
        "retried-first",
        revoked().nominate(31, "w1", "w2").place(45, "w2"),
        "w1 retried at t=31.0s with w2 before w3,w4",
    ),
    fail(
        "EXT-09",
        "retried-alone",
        revoked().nominate(31, "w1").nominate(41, "w1", "w2").place(50, "w2"),
        "w1 re-nominated alone at t=31.0s",
    ),
    fail("EXT-09", "stays", revoked().nominate(31, "w1").place(40, "w1"), "placed on w1"),
    fail("EXT-09", "not-placed", revoked().nominate(31, "w2").mark(200), "not placed", "t=63.0s"),
    unclear("EXT-09", "no-failure", Story().created(0).nominate(0.5, "w1").place(5, "w1")),
    # EXT-10 (w1 inactive from before creation)
    Case(
        "EXT-10",
        "skipped",
        Story().active(-1, "w1", False).created(0).nominate(0.5, "w2").place(5, "w2"),
    ),
    fail(
        "EXT-10",
        "nominated-inactive",
        Story().active(-1, "w1", False).created(0).nominate(0.5, "w1"),
        "w1 nominated at t=0.5s while inactive",
    ),
    fail(
        "EXT-10",
        "costs-a-round",
        Story().active(-1, "w1", False).created(0).nominate(10.5, "w2").place(15, "w2"),
        "first nomination at t=10.5s",
        "t=3.0s",
    ),
    fail(  # as recorded for nominates-inactive: inside the skew of (a), but a round lost
        "EXT-10",
        "inactive-first-inside-the-skew",
        Story()
        .active(-0.17, "w1", False)
        .created(0)
        .nominate(0.22, "w1")
        .nominate(10.1, "w1", "w2")
        .place(11.2, "w2"),
        "first nomination at t=10.1s of an active cluster",
    ),
    # Kueue reserved the quota 5 s late under load: the dispatcher's time starts there
    Case("EXT-10", "quota-reserved-late", reserved_late(nominated=7.3)),
    fail(
        "EXT-10",
        "costs-a-round-after-a-late-reservation",
        reserved_late(nominated=15.5),
        "first nomination at t=15.5s",
        "t=8.0s",
    ),
    unclear("EXT-10", "all-active", escalating((0.5, "w1"))),
    # EXT-11 (killed at 5, restarted at 7: round of w1 due at 10.5, latest 15.5)
    Case(
        "EXT-11",
        "resumes",
        escalating((0.5, "w1"), (10.6, "w2"), place=(15, "w2"))
        .action(5, "dispatcher-killed")
        .action(7, "dispatcher-restarted"),
    ),
    fail(
        "EXT-11",
        "reset",
        escalating((0.5, "w1"), (17.5, "w2"), place=(20, "w2"))
        .action(5, "dispatcher-killed")
        .action(7, "dispatcher-restarted"),
        "round reset",
        "t=17.5s",
        "t=15.5s",
        "back taken as its relaunch",
    ),
    fail(
        "EXT-11",
        "jump",
        escalating((0.5, "w1"), (7.2, "w2"), place=(20, "w2"))
        .action(5, "dispatcher-killed")
        .action(7, "dispatcher-restarted"),
        "jumped",
        "t=7.2s",
    ),
    fail(
        "EXT-11",
        "stuck",
        escalating((0.5, "w1"), (10.6, "w2"), (20.6, "w3"), (30.6, "w4"))
        .action(5, "dispatcher-killed")
        .action(7, "dispatcher-restarted")
        .mark(200),
        "never placed",
    ),
    Case(  # slow to start: back at 12 (downtime 7), latest 10.5 + 7 + 3 = 20.5
        "EXT-11",
        "resumes-after-a-slow-start",
        escalating((0.5, "w1"), (17.4, "w2"), place=(20, "w2"))
        .read(0.2, "mkdc-a")
        .action(5, "dispatcher-killed")
        .action(7, "dispatcher-restarted")
        .read(12, "mkdc-a", "watch"),
    ),
    fail(  # back at 12, then a fresh round: 12 + 10
        "EXT-11",
        "reset-after-a-slow-start",
        escalating((0.5, "w1"), (22.4, "w2"), place=(25, "w2"))
        .action(5, "dispatcher-killed")
        .action(7, "dispatcher-restarted")
        .read(12, "mkdc-a"),
        "round reset",
        "t=22.4s",
        "t=20.5s",
        "back t=12.0s",
    ),
    unclear("EXT-11", "no-restart", escalating((0.5, "w1"), place=(3, "w1"))),
    # EXT-13 and EXT-14: the manager's apiserver or Kueue out from 7 to 12 (round of w1 due at
    # 10.5, latest 10.5 + 5 + 3 = 18.5; a reset shows at 12 + 10)
    *[
        case
        for check, process in (("EXT-13", "manager-apiserver"), ("EXT-14", "manager-kueue"))
        for case in (
            Case(
                check,
                "resumes-when-back",
                escalating((0.5, "w1"), (12.4, "w2"), place=(15, "w2"))
                .action(7, f"{process}-down")
                .action(12, f"{process}-back"),
            ),
            fail(
                check,
                "reset",
                escalating((0.5, "w1"), (22.5, "w2"), place=(25, "w2"))
                .action(7, f"{process}-down")
                .action(12, f"{process}-back"),
                "round reset",
                f"{process} down t=7.0s",
                "due by t=18.5s",
            ),
            fail(
                check,
                "jump",
                escalating((0.5, "w1"), (7.1, "w2"), place=(20, "w2"))
                .action(7, f"{process}-down")
                .action(12, f"{process}-back"),
                "jumped",
            ),
            fail(
                check,
                "lost",
                escalating((0.5, "w1"))
                .action(7, f"{process}-down")
                .action(12, f"{process}-back")
                .mark(100),
                "due by t=18.5s",
                "never placed",
            ),
            Case(  # created once it was back: seen at 14.5
                check,
                "sees-new-workloads",
                Story()
                .action(7, f"{process}-down")
                .action(12, f"{process}-back")
                .created(13)
                .nominate(14.5, "w1")
                .place(18, "w1"),
            ),
            fail(  # created once it was back, never seen: due by 13 + handover_slack
                check,
                "never-sees-new-workloads",
                Story()
                .action(7, f"{process}-down")
                .action(12, f"{process}-back")
                .created(13)
                .mark(100),
                "first nomination none, due by t=43.0s",
                "not re-established",
            ),
            unclear(
                check,
                "placed-before",
                escalating((0.5, "w1"), place=(3, "w1"))
                .action(7, f"{process}-down")
                .action(12, f"{process}-back"),
            ),
            unclear(check, "no-outage", escalating((0.5, "w1"), place=(3, "w1"))),
        )
    ],
    # EXT-12 (two replicas: mkdc-a leads, then mkdc-b)
    Case(
        "EXT-12",
        "hands-over",
        escalating((0.5, "w1"), (18, "w2"), place=(25, "w2"))
        .write(0.5, "mkdc-a")
        .action(5, "leader-killed", user="mkdc-a")
        .write(18, "mkdc-b"),
        HA,
    ),
    fail(
        "EXT-12",
        "no-handover",
        escalating((0.5, "w1")).write(0.5, "mkdc-a").action(5, "leader-killed").mark(100),
        "mkdc-a killed at t=5.0s",
        "none",
        "t=35.0s",
        bounds=HA,
    ),
    fail(
        "EXT-12",
        "conflict",
        escalating((0.5, "w1")).write(0.5, "mkdc-a").write(1.0, "mkdc-b"),
        "conflicting writes",
        "mkdc-a at t=0.5s",
        "mkdc-b at t=1.0s",
        bounds=HA,
    ),
    unclear("EXT-12", "no-kill", escalating((0.5, "w1")).write(0.5, "mkdc-a"), HA),
    # both replicas write the first nomination; the scenario kills one right after: not a
    # handover, two writers (found by the faulty dispatcher both-replicas-write)
    fail(
        "EXT-12",
        "both-write-just-before-the-kill",
        escalating((0.5, "w1"), (10.6, "w2"), place=(12, "w2"))
        .write(0.5, "mkdc-a")
        .write(0.51, "mkdc-b", code=409)
        .action(1.2, "leader-killed", user="mkdc-b")
        .write(10.6, "mkdc-a"),
        "conflicting writes by mkdc-a at t=0.5s and mkdc-b at t=0.5s",
        bounds=HA,
    ),
    fail(
        "EXT-12",
        "standby-wrote-first-then-leader-killed",  # as recorded for both-replicas-write
        escalating((0.41, "w1"), (10.4, "w2"), place=(12, "w2"))
        .write(0.34, "mkdc-b")
        .write(0.35, "mkdc-a", code=409)
        .write(0.37, "mkdc-b")
        .action(0.67, "leader-killed", user="mkdc-a")
        .write(10.34, "mkdc-b"),
        "conflicting writes by mkdc-b at t=0.3s and mkdc-a at t=0.3s",
        bounds=HA,
    ),
    Case(
        "EXT-12",
        "dying-leader-and-successor-across-the-kill",
        escalating((0.5, "w1"), (10.6, "w2"), place=(12, "w2"))
        .write(0.5, "mkdc-a")
        .write(9.9, "mkdc-a")
        .action(10, "leader-killed", user="mkdc-a")
        .write(10.6, "mkdc-b"),
        HA,
    ),
]


def burst(n: int, unplaced: tuple[int, ...] = (), until: float = 30.0) -> Story:
    """n workloads created at t=0; each nominated at 1+i/10 and placed at 2+i/10."""
    story = Story()
    for i in range(n):
        wl = f"ns/b{i}"
        story.add(0, Kind.WORKLOAD_CREATED, of=wl)
        story.add(1 + i / 10, Kind.NOMINATION, of=wl, names=["w1"], writer="mkdc")
        if i not in unplaced:
            story.add(2 + i / 10, Kind.PLACEMENT, of=wl, cluster="w1")
    return story.mark(until)


CASES += [
    Case("CORE-09", "all-placed", burst(10)),
    fail("CORE-09", "stuck", burst(10, unplaced=(3,), until=200), "1/10", "ns/b3", "never placed"),
    Case(  # ran to completion, but Kueue never recorded clusterName: it was not stuck
        "CORE-09",
        "finished-unplaced",
        burst(10, unplaced=(3,), until=200)
        .add(40, Kind.JOB_FINISHED, "w1", of="ns/b3", condition="Complete")
        .add(42, Kind.FINISHED, of="ns/b3"),
    ),
    Case(  # its Job started on the worker Kueue chose; the manager showed it 150 s later
        "CORE-09",
        "started-on-a-worker-placed-late-on-the-manager",
        burst(10, unplaced=(3,), until=300)
        .add(40, Kind.JOB_CREATED, "w1", of="ns/b3")
        .add(190, Kind.PLACEMENT, of="ns/b3", cluster="w1"),
    ),
    fail(
        "CORE-09",
        "placed-late-on-the-manager-and-no-job-before",
        burst(10, unplaced=(3,), until=300)
        .add(180, Kind.JOB_CREATED, "w1", of="ns/b3")
        .add(190, Kind.PLACEMENT, of="ns/b3", cluster="w1"),
        "ns/b3",
        "placed at t=180.0s",
    ),
    fail(
        "CORE-09",
        "failed-unplaced",
        burst(10, unplaced=(3,), until=200)
        .add(40, Kind.JOB_FINISHED, "w1", of="ns/b3", condition="Failed")
        .add(42, Kind.FINISHED, of="ns/b3"),
        "ns/b3",
        "never placed",
    ),
    unclear("CORE-09", "no-workloads", Story().mark(5)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_check(case: Case) -> None:
    verdict = CATALOGUE[case.check].evaluate(case.story.timeline(), case.bounds)
    assert isinstance(verdict, Verdict)
    if case.passes:
        assert verdict.passed, verdict.message
        assert not verdict.inconclusive
        return
    assert not verdict.passed
    assert verdict.inconclusive is case.inconclusive, verdict.message
    assert verdict.message
    for fragment in case.expect:
        assert fragment in verdict.message, f"{fragment!r} not in {verdict.message!r}"


def test_every_check_has_a_passing_and_a_violating_story() -> None:
    passing = {c.check for c in CASES if c.passes}
    violating = {c.check for c in CASES if not c.passes and not c.inconclusive}
    assert passing == set(CATALOGUE)
    assert violating == set(CATALOGUE)


EXPECTED_NAMES = {
    "CORE-01": "NominatesConfiguredOnly",
    "CORE-02": "NominationListValid",
    "CORE-03": "NoNominationAfterPlacement",
    "CORE-10": "NominatesPendingWorkOnly",
    "CORE-04": "EventualPlacement",
    "CORE-05": "SingleExecution",
    "CORE-06": "RedispatchAfterEviction",
    "CORE-07": "ConfigChangeHonoured",
    "CORE-08": "ForeignWorkloadsUntouched",
    "CORE-09": "BurstLiveness",
    "EXT-01": "BoundedFanOut",
    "EXT-02": "NoSimultaneousAutoscaling",
    "EXT-03": "BoundedDuplicateAdmission",
    "EXT-04": "BoundedPreemption",
    "EXT-05": "TimeoutEscalation",
    "EXT-06": "NoPrematureEscalation",
    "EXT-07": "OrderedDispatch",
    "EXT-08": "PerClusterTimeout",
    "EXT-09": "ProvisioningFailover",
    "EXT-10": "SkipsInactiveClusters",
    "EXT-11": "RestartResilience",
    "EXT-12": "LeaderFailover",
    "EXT-13": "ManagerApiserverRestart",
    "EXT-14": "KueueRestart",
}
EXPECTED_FEATURES = {
    "EXT-01": "BoundedFanOut",
    "EXT-02": "BoundedFanOut",
    "EXT-03": "BoundedFanOut",
    "EXT-04": "BoundedFanOut",
    "EXT-05": "Escalation",
    "EXT-06": "Escalation",
    "EXT-07": "Ordering",
    "EXT-08": "PerClusterTimeout",
    "EXT-09": "ProvisioningFailover",
    "EXT-10": "InactiveAware",
    "EXT-11": "RestartSafe",
    "EXT-12": "HighAvailability",
    "EXT-13": "RestartSafe",
    "EXT-14": "RestartSafe",
}


def test_catalogue_matches_spec() -> None:
    assert {k: c.name for k, c in CATALOGUE.items()} == EXPECTED_NAMES
    assert all(k == c.id for k, c in CATALOGUE.items())
    assert {k: c.feature for k, c in CATALOGUE.items() if c.feature} == EXPECTED_FEATURES
    scenario_scoped = {k for k, c in CATALOGUE.items() if c.scope == "scenario"}
    assert scenario_scoped == {"CORE-08", "CORE-09"}
    for check in CATALOGUE.values():
        assert check.summary.endswith(".")
        assert check.evaluate.__doc__ and check.id in check.evaluate.__doc__


def test_supported_by() -> None:
    assert CATALOGUE["CORE-01"].supported_by([])
    assert not CATALOGUE["EXT-01"].supported_by(["Escalation"])
    assert CATALOGUE["EXT-01"].supported_by(["BoundedFanOut"])


def test_burst_measures_percentiles() -> None:
    verdict = CATALOGUE["CORE-09"].evaluate(burst(100).timeline(), B)
    assert verdict.passed
    assert verdict.measured["workloads"] == 100
    assert verdict.measured["timeToFirstNominationSeconds"] == {"p50": 5.9, "p99": 10.8}
    assert verdict.measured["timeToPlacementSeconds"]["p99"] == pytest.approx(11.8)


# --------------------------------------------------------------------------- Bounds


def test_derive_reads_claims() -> None:
    b = Bounds.derive(
        {"stepSize": 2, "roundTimeout": "1m30s", "ordering": "tiers", "features": ["Ordering"]},
        ["a", "b"],
        {"escalation_slack": "5s", "placement_slack": 12},
        cluster_timeouts={"a": "20s"},
        tiers={"b": 0, "a": 1},
    )
    assert (b.step_size, b.round_timeout, b.ordering) == (2, 90.0, "tiers")
    assert b.max_concurrent_provisioning is None
    assert (b.escalation_slack, b.placement_slack) == (5.0, 12.0)
    assert b.early_tolerance == DEFAULT_SLACKS["early_tolerance"]
    assert b.cluster_timeouts == {"a": 20.0}
    assert b.ordered() == ["b", "a"]
    assert b.slacks()["escalation_slack"] == 5.0


def test_derive_all_and_never() -> None:
    b = Bounds.derive({"stepSize": "all", "roundTimeout": None}, W4)
    assert b.step_size is None and b.round_timeout is None and b.ordering == "none"
    assert b.placement_bound("w4") == b.placement_slack


@pytest.mark.parametrize(
    ("claims", "slacks", "needle"),
    [
        ({"stepSize": 0}, None, "stepSize"),
        ({"stepSize": "some"}, None, "stepSize"),
        ({"roundTimeout": "ten"}, None, "ten"),
        ({"ordering": "random"}, None, "ordering"),
        ({"maxConcurrentProvisioning": "1"}, None, "maxConcurrentProvisioning"),
        ({}, {"tardiness": 1}, "tardiness"),
        ({}, {"placement_slack": "soon"}, "placement_slack"),
    ],
)
def test_derive_rejects(claims: dict, slacks: dict | None, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        Bounds.derive(claims, W4, slacks)


def test_escalation_delay_follows_order_step_and_overrides() -> None:
    assert B.escalation_delay("w1") == 0
    assert B.escalation_delay("w4") == 30
    assert B.escalation_delay(None) == 30  # unknown: worst case
    two = B.with_scenario(step_size=2)
    assert two.escalation_delay("w2") == 0 and two.escalation_delay("w3") == 10
    assert OVERRIDE.escalation_delay("w3") == 25  # w1's round lasts 20s, w2's 5s
    assert B.with_scenario(ordering="none").escalation_delay("w1") == 30
    assert B.with_scenario(round_timeout=None).escalation_delay("w4") == 0
    assert TO_W4.placement_bound("w4") == 30 + TO_W4.placement_slack


# --------------------------------------------------------------------------- helpers


def test_peak_counts_half_open_intervals() -> None:
    spans = [Interval("w1", 0, 5), Interval("w2", 5, 9), Interval("w3", 6)]
    result = peak(spans)
    assert (result.count, result.t, result.keys) == (2, 6, ("w2", "w3"))
    assert peak([]).count == 0


def test_percentile_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile(range(1, 101), 99) == 99


def test_rounds_count_new_names_before_placement() -> None:
    tl = (
        Story().nominate(1, "w1").nominate(2).nominate(3, "w1").nominate(4, "w1", "w2")
        .place(5, "w2").nominate(6, "w3").timeline()
    )  # fmt: skip
    assert [(r.t, r.added) for r in rounds(tl)] == [(1, ("w1",)), (4, ("w2",))]


# --------------------------------------------------------------------------- run_check


def two_workloads(second_nominates: str) -> Timeline:
    a = Story("ns/a").nominate(1, "w1")
    b = Story("ns/b").nominate(1, second_nominates)
    return Timeline(a.events + b.events)


def test_run_check_folds_workloads() -> None:
    check = CATALOGUE["CORE-01"]
    assert run_check(check, two_workloads("w2"), B).passed
    verdict = run_check(check, two_workloads("w9"), B)
    assert not verdict.passed and not verdict.inconclusive
    assert verdict.message.startswith("ns/b: ") and "w9" in verdict.message
    assert set(verdict.measured["perWorkload"]) == {"ns/a", "ns/b"}


def test_run_check_skips_foreign_and_reports_inconclusive() -> None:
    only_foreign = B.with_scenario(foreign_workloads=frozenset({"ns/a", "ns/b"}))
    assert run_check(CATALOGUE["CORE-01"], two_workloads("w9"), only_foreign).inconclusive
    assert run_check(CATALOGUE["CORE-06"], two_workloads("w2"), B).inconclusive


def test_run_check_scenario_scope_sees_everything() -> None:
    story = Story("ns/a").write(1, "mkdc", workload="ns/plain")
    bounds = B.with_scenario(foreign_workloads=frozenset({"ns/plain"}))
    assert not run_check(CATALOGUE["CORE-08"], story.timeline(), bounds).passed


def test_ext11_says_the_start_up_was_not_allowed_for_only_where_no_read_was_seen() -> None:
    """With the restarted dispatcher's first list in the audit log, its start-up is allowed
    for, and the message says nothing of a relaunch."""
    [seen] = [c for c in CASES if c.id == "EXT-11-fail-reset-after-a-slow-start"]
    verdict = CATALOGUE["EXT-11"].evaluate(seen.story.timeline(), seen.bounds)
    assert not verdict.passed and "relaunch" not in verdict.message, verdict.message


def test_ext13_says_no_guess_when_the_dispatcher_is_known_to_have_exited() -> None:
    """A replica's exit on the timeline is the cause (the judge says it in the message):
    the check does not guess at a watch never re-established."""
    [lost] = [c for c in CASES if c.id == "EXT-13-fail-never-sees-new-workloads"]
    story = Story(lost.story.workload)
    story.events = list(lost.story.events)
    story.env(9.0, Kind.DISPATCHER_EXITED, process="dispatcher-0", code=1, cause="boom")
    verdict = CATALOGUE["EXT-13"].evaluate(story.timeline(), lost.bounds)
    assert not verdict.passed and "first nomination none, due by t=43.0s" in verdict.message
    assert "re-established" not in verdict.message


@pytest.mark.parametrize(
    ("story", "says"),
    [
        (
            escalating((0.5, "w1"), place=(3, "w1")),
            "placed on w1 at t=3.0s, within round 1 (w1) of t=0.5s (timeout 10s): a nominee",
        ),
        (escalating((0.5, "w1")).mark(5), "observation ended at t=5.0s, before round 1"),
        (
            Story().created(0).nominate(0.5, "w1", "w2", "w3", "w4").mark(60),
            "1 round(s) nominated every configured cluster (w1,w2,w3,w4)",
        ),
    ],
)
def test_no_escalation_due_says_what_ended_the_round_first(story: Story, says: str) -> None:
    """A claimed Escalation left undecided says why, in words a vendor can act on."""
    for check in ("EXT-05", "EXT-06"):
        verdict = run_check(CATALOGUE[check], story.timeline(), B)
        assert verdict.inconclusive and says in verdict.message, verdict.message
